//! owt's unfolded-GEMM weight gradient (`owt_hybrid::conv_grad::unfolded`, what CUDA's strided
//! convolutions take without cuDNN) for every configuration of issue 77's grid of convolutions,
//! on the two-device wgpu mesh (lavapipe's `Cpu` and `DefaultDevice`, f32: WGSL has no f64), the
//! batch split over the devices, against Flex's own weight gradient; an asymmetric padding
//! padded first, as Burn's `conv2d` does before any backend sees the convolution. The grid's
//! steps on every backend are `conv_grid_backends`.
#![cfg(feature = "wgpu")]

use burn::backend::wgpu::WgpuDevice;
use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_hybrid::conv_grad::Unfolded;
use owt_hybrid::MeshDevice;

use crate::conv_grid_cases::{as_the_backend_sees_it, grid};

fn mesh() -> MeshDevice<WgpuDevice> {
    super::wgpu_mesh::require_adapter();
    MeshDevice::new(vec![WgpuDevice::Cpu, WgpuDevice::DefaultDevice])
}

#[test]
fn owts_weight_gradient_on_a_wgpu_mesh_is_flexs_for_every_convolution_of_the_grid() {
    let mesh = mesh();
    let rd = Default::default();
    let cases = grid();
    let mut worst = 0.0f64;
    for case in &cases {
        let (c, o, g) = case.channels;
        let [h, w] = case.input;
        let x = Tensor::<Flex, 4>::random([4, c, h, w], Distribution::Normal(0.0, 1.0), &rd);
        let (x, options) = as_the_backend_sees_it(case, x);
        let weight = [o, c / g, case.kernel[0], case.kernel[1]];
        let geo = Unfolded::of(x.dims(), weight, &options).unwrap_or_else(|| panic!("{case:?}: no output"));
        let wt = Tensor::<Flex, 4>::random(weight, Distribution::Normal(0.0, 1.0), &rd);
        let gy = Tensor::<Flex, 4>::random([4, o, geo.out[0], geo.out[1]], Distribution::Normal(0.0, 1.0), &rd);
        let (diff, scale) = super::strided_weight_gradient::gap_on_mesh(&mesh, &x, &wt, &gy, &options, &geo);
        assert!(diff <= 1e-5 * scale, "{case:?}: off by {diff} (scale {scale})");
        worst = worst.max((diff / scale) as f64);
    }
    assert_eq!(mesh.ledger_snapshot().total_fallbacks(), 0, "every op of the formulation ran by a placement rule");
    eprintln!("unfolded weight gradient on wgpu: {} configurations, largest gap {worst:.2e}", cases.len());
}
