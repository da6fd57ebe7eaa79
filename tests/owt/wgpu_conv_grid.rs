//! Issue 77's grid of convolutions on the two-device wgpu mesh (lavapipe's `Cpu` and
//! `DefaultDevice`, f32: WGSL has no f64), against Flex in f32:
//!
//! - each configuration's small network stepped once (forward, backward, SGD) on `Hybrid` over
//!   CubeCL's wgpu kernels, under one of the three layouts in turn (data parallel, model
//!   parallel over channels, the two towers' layout; the Flex binary holds every layout of
//!   every configuration in f64);
//! - owt's unfolded-GEMM weight gradient (`owt_hybrid::conv_grad::unfolded`, what CUDA's
//!   strided convolutions take without cuDNN) for every configuration, the batch split over
//!   the two devices, against Flex's own weight gradient; an asymmetric padding padded first,
//!   as Burn's `conv2d` does before any backend sees the convolution.
//!
//! Where the mesh could not run a configuration, the step would have to fail in one line
//! naming the layer and the option (issue 77, point 5): none does, and none is computed wrong.
#![cfg(feature = "wgpu")]

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt_hybrid::conv_grad::Unfolded;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement, Plan};

use crate::conv_grid_cases::{as_the_backend_sees_it, batch, grid, init, layouts, step, GridNet};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Mesh = Hybrid<Wgpu>;

/// lavapipe's f32 kernels against Flex's, relative to each tensor's largest magnitude: other
/// kernels sum in other orders. Measured at most 5.4e-6 over the grid (2026-12-07: a bias
/// gradient summed over 4 x 5 x 7 positions of an 11x11 kernel's output), about 20x below
/// this; a wrong weight or a padding on the wrong axis is off by the values themselves.
const TOLERANCE: f64 = 1e-4;

fn mesh() -> MeshDevice<WgpuDevice> {
    super::wgpu_mesh::require_adapter();
    MeshDevice::new(vec![WgpuDevice::Cpu, WgpuDevice::DefaultDevice])
}

/// Largest over tensors of max |a - b| / max |b|, and that tensor.
fn gap(a: &[(String, Vec<f64>)], b: &[(String, Vec<f64>)]) -> (f64, String) {
    assert_eq!(a.len(), b.len());
    let mut worst = (0.0, String::new());
    for ((name, x), (_, y)) in a.iter().zip(b) {
        let scale = y.iter().fold(1e-12f64, |m, v| m.max(v.abs()));
        let d = x.iter().zip(y).fold(0.0f64, |m, (p, q)| m.max((p - q).abs())) / scale;
        if d >= worst.0 {
            worst = (d, name.clone());
        }
    }
    worst
}

#[test]
fn every_convolution_of_the_grid_steps_on_a_wgpu_mesh_as_on_flex() {
    let mesh = mesh();
    let rd = Default::default();
    let (cases, layouts) = (grid(), layouts());
    let mut worst = (0.0f64, String::new());
    for (i, case) in cases.iter().enumerate() {
        let (name, rules, input) = layouts[i % layouts.len()].clone();
        let input = if input == Placement::Shard(1) && case.channels.0 < 2 { Placement::Replicate } else { input };
        let (x, y) = batch(case);
        let model: GridNet<Autodiff<Flex>> = init(case, &rd);
        let bytes = record_to_bytes::<Autodiff<Flex>, _>(model.clone().into_record()).unwrap();
        // The weights as written (a lazily drawn parameter is drawn again by each clone).
        let model = model.load_record(record_from_bytes::<Autodiff<Flex>, _>(&bytes, &rd).unwrap());
        let (want, _) = step(model, Tensor::from_data(x.clone(), &rd), Tensor::from_data(y.clone(), &rd), &rd);

        let plan = Plan { name: name.into(), rules, input, ..owt_hybrid::PlanKind::DataParallel.plan() };
        let model: GridNet<Autodiff<Mesh>> = init(case, &mesh);
        let model = model.load_record(record_from_bytes::<Autodiff<Mesh>, _>(&bytes, &mesh).unwrap());
        let what = format!("{name}, {case:?}");
        let model = plan.try_apply(model, 2).unwrap_or_else(|e| panic!("{what}: {e}"));
        let xs = Tensor::<Autodiff<Mesh>, 4>::from_data(x, &mesh).distribute(input);
        let ys = Tensor::<Autodiff<Mesh>, 1, Int>::from_data(y, &mesh);
        let ys = if input == Placement::Shard(0) { ys.distribute(input) } else { ys };
        let ((loss, grads, weights), _) = step(model, xs, ys, &mesh);
        assert!((loss - want.0).abs() <= TOLERANCE * want.0.abs(), "{what}: loss {loss} against {}", want.0);
        for (kind, got, want) in [("gradient of", grads, want.1), ("updated", weights, want.2)] {
            let (g, tensor) = gap(&got, &want);
            assert!(g <= TOLERANCE, "{what}: the {kind} {tensor} differs by {g:e} of its scale");
            if g > worst.0 {
                worst = (g, format!("{what}: the {kind} {tensor}"));
            }
        }
    }
    eprintln!("wgpu conv grid: {} configurations; largest gap {:.2e} ({})", cases.len(), worst.0, worst.1);
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
