//! owt's unfolded-GEMM weight gradient (`owt_hybrid::conv_grad::unfolded`, what CUDA's strided
//! convolutions take without cuDNN) on a two-device wgpu mesh (lavapipe's `Cpu` and
//! `DefaultDevice`), the batch split over the ranks, against Flex's own weight gradient (the
//! generic formulation): the big AlexNets' strided conv1 layers and a grouped stride-2 layer,
//! in f32 (WGSL has no f64). The mesh runs the formulation through its placement rules: each
//! rank's GEMMs over its images, the partial gradients summed across the devices.
#![cfg(feature = "wgpu")]

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::ops::{ConvOptions, ModuleOps};
use burn::tensor::{Distribution, TensorPrimitive};
use owt_hybrid::conv_grad::{unfolded, Unfolded};
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type Mesh = Hybrid<CubeBackend<WgpuRuntime, f32, i32, u32>>;

/// owt's unfolded weight gradient of `geo` on `mesh` (the batch split over its ranks) against
/// Flex's own for input `x`, weight `w`, output gradient `gy` and `options`: the largest
/// difference and the largest magnitude of Flex's gradient.
pub(crate) fn gap_on_mesh(
    mesh: &MeshDevice<WgpuDevice>,
    x: &Tensor<Flex, 4>,
    w: &Tensor<Flex, 4>,
    gy: &Tensor<Flex, 4>,
    options: &ConvOptions<2>,
    geo: &Unfolded,
) -> (f32, f32) {
    let prim = |t: &Tensor<Flex, 4>| t.clone().into_primitive().tensor();
    let want = Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(Flex::conv2d_weight_backward(
        prim(x),
        prim(w),
        prim(gy),
        options.clone(),
    )))
    .into_data()
    .to_vec::<f32>()
    .unwrap();
    let on_mesh =
        |t: &Tensor<Flex, 4>| Tensor::<Mesh, 4>::from_data(t.clone().into_data(), mesh).distribute(Placement::Shard(0));
    let got = unfolded::weight_grad::<Mesh>(on_mesh(x), on_mesh(gy), geo).into_data().to_vec::<f32>().unwrap();
    let scale = want.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    let diff = got.iter().zip(&want).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    (diff, scale)
}

#[test]
fn the_unfolded_gemm_on_a_wgpu_mesh_has_flexs_weight_gradient() {
    super::wgpu_mesh::require_adapter();
    let mesh = MeshDevice::new(vec![WgpuDevice::Cpu, WgpuDevice::DefaultDevice]);
    // (name, batch, channels, side, filters, kernel, stride, padding, groups)
    let layers = [
        ("AlexNetOwt conv1", 2, 3, 224, 64, 11, 4, 2, 1),
        ("AlexNet 2012 conv1", 2, 3, 227, 96, 11, 4, 0, 1),
        ("grouped, stride 2", 4, 8, 17, 6, 3, 2, 1, 2),
    ];
    let rd = Default::default();
    for (name, n, c, side, o, k, s, p, g) in layers {
        let options = ConvOptions::new([s, s], [p, p], [1, 1], g);
        let geo = Unfolded::of([n, c, side, side], [o, c / g, k, k], &options).unwrap();
        let x = Tensor::<Flex, 4>::random([n, c, side, side], Distribution::Normal(0.0, 1.0), &rd);
        let w = Tensor::<Flex, 4>::random([o, c / g, k, k], Distribution::Normal(0.0, 1.0), &rd);
        let gy = Tensor::<Flex, 4>::random([n, o, geo.out[0], geo.out[1]], Distribution::Normal(0.0, 1.0), &rd);
        let (diff, scale) = gap_on_mesh(&mesh, &x, &w, &gy, &options, &geo);
        assert!(diff <= 1e-5 * scale, "{name}: off by {diff} (scale {scale})");
    }
    assert_eq!(mesh.ledger_snapshot().total_fallbacks(), 0, "every op of the formulation ran by a placement rule");
}
