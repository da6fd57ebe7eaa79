//! The one-pass dropout kernel on CubeCL (owt-hybrid's `counter_dropout`, registered for wgpu
//! by the CLI's runtime) against the models' tensor-op formulation and the host reference: the
//! same mask, the same scaled values and the same gradients bit for bit, on one device, on a
//! strided view, and on a mesh of 1..3 ranks in every layout an FC input has (each rank its
//! piece, nothing moved). Needs `--features wgpu` and a Vulkan driver (mesa-vulkan-drivers).
#![cfg(feature = "wgpu")]

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::Autodiff;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_hybrid::counter_dropout::{counter_dropout, CounterMask};
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
use owt_models::{dropout_kernel, keeps_element, CounterDropout, DropoutKey};

use crate::wgpu_mesh::require_adapter;

type Plain = CubeBackend<WgpuRuntime, f32, i32, u32>;
type One = Autodiff<Plain>;
type Mesh = Autodiff<Hybrid<Plain>>;

/// Uneven sizes, so pieces differ in length and an offset off by one shows.
const ROWS: usize = 13;
const COLS: usize = 37;

fn floats<B: Backend>(t: Tensor<B, 2>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().unwrap()
}

/// The models' own formulation (what `CounterDropout::forward` runs without a kernel).
fn tensor_ops<B: Backend>(d: &CounterDropout, x: Tensor<B, 2>, key: DropoutKey, layer: &str) -> Tensor<B, 2> {
    let keep = d.mask(&x, key, layer);
    x.mask_fill(keep.bool_not(), 0.0).mul_scalar(1.0 / (1.0 - d.prob))
}

/// `x`'s value and gradient through `f`, under a fixed upstream gradient `w`.
fn value_and_grad<B: burn::tensor::backend::AutodiffBackend>(
    x: Tensor<B, 2>,
    w: Tensor<B, 2>,
    f: impl Fn(Tensor<B, 2>) -> Tensor<B, 2>,
) -> (Vec<f32>, Vec<f32>) {
    let x = x.require_grad();
    let y = f(x.clone());
    let grads = (y.clone() * w).sum().backward();
    (floats(y), floats(x.grad(&grads).unwrap()))
}

/// The models' mask for `x` in owt-hybrid's terms (what the registered kernel is given).
fn hybrid_mask<B: Backend>(d: &CounterDropout, x: &Tensor<B, 2>, key: DropoutKey, layer: &str) -> CounterMask {
    let m = d.kernel_mask(x, key, layer);
    CounterMask { words: m.words, first_row: m.first_row, first_col: 0, keep_below: m.keep_below, scale: m.scale }
}

#[test]
fn the_kernel_is_the_tensor_op_dropout_bit_for_bit_forward_and_backward() {
    require_adapter();
    owt::runtime::step_kernels::register::<Plain>();
    assert!(dropout_kernel::<One>().is_some() && dropout_kernel::<Mesh>().is_some(), "registered");
    let device = WgpuDevice::DefaultDevice;
    for (prob, key, layer) in [
        (0.5, DropoutKey::new(0, 0), "fc6"),
        (0.1, DropoutKey::new(5, 17).from_row(64), "fc7"),
        (0.9, DropoutKey::new(2, 3), "x"),
    ] {
        let d = CounterDropout::new(prob);
        let x = Tensor::<One, 2>::random([ROWS, COLS], Distribution::Uniform(-1.0, 1.0), &device);
        let w = Tensor::<One, 2>::random([ROWS, COLS], Distribution::Uniform(-1.0, 1.0), &device);
        let want = value_and_grad(x.clone(), w.clone(), |x| tensor_ops(&d, x, key, layer));
        let got = value_and_grad(x.clone(), w.clone(), |x| d.forward(x, key, layer));
        let what = format!("p {prob} {layer}");
        assert!(counter_dropout(x.clone(), hybrid_mask(&d, &x, key, layer)).is_ok(), "{what}: the kernel declined");
        assert_eq!(got.0, want.0, "{what}: forward");
        assert_eq!(got.1, want.1, "{what}: gradient");
        // Against the host reference: dropped elements zero, kept ones scaled.
        let words = key.words(layer);
        let host = hybrid_mask(&d, &x, key, layer);
        let xs = floats(x.clone());
        let scale = (1.0 / (1.0 - prob)) as f32;
        for (i, (y, x)) in got.0.iter().zip(&xs).enumerate() {
            let (r, c) = ((i / COLS + key.first_row) as u32, (i % COLS) as u32);
            let kept = keeps_element(words, r, c, prob);
            assert_eq!(host.keeps((i / COLS) as u32, c), kept, "{what}: owt-hybrid's host reference at ({r}, {c})");
            assert_eq!(*y, if kept { x * scale } else { 0.0 }, "{what}: element ({r}, {c})");
        }
    }
}

#[test]
fn a_strided_view_is_read_through_its_strides() {
    require_adapter();
    let device = WgpuDevice::DefaultDevice;
    let d = CounterDropout::new(0.5);
    let key = DropoutKey::new(9, 1);
    let mask = hybrid_mask(&d, &Tensor::<Plain, 2>::zeros([ROWS, COLS], &device), key, "fc6");
    // A transposed tensor: its rows are strided by one element, its columns by ROWS.
    let t = Tensor::<Plain, 2>::random([COLS, ROWS], Distribution::Uniform(-1.0, 1.0), &device).transpose();
    let contiguous = Tensor::<Plain, 2>::from_data(t.clone().into_data(), &device);
    let from_view = counter_dropout(t, mask).unwrap_or_else(|_| panic!("the kernel takes a view"));
    let from_copy = counter_dropout(contiguous.clone(), mask).unwrap_or_else(|_| panic!("the kernel takes a copy"));
    assert_eq!(floats(from_view), floats(from_copy.clone()));
    assert_eq!(floats(from_copy), floats(tensor_ops(&d, contiguous, key, "fc6")));
}

#[test]
fn every_rank_applies_its_part_of_the_one_device_mask_and_nothing_moves() {
    require_adapter();
    owt::runtime::step_kernels::register::<Plain>();
    let device = WgpuDevice::DefaultDevice;
    let d = CounterDropout::new(0.5);
    let x = Tensor::<One, 2>::random([ROWS, COLS], Distribution::Uniform(-1.0, 1.0), &device);
    let w = Tensor::<One, 2>::random([ROWS, COLS], Distribution::Uniform(-1.0, 1.0), &device);
    let (xd, wd) = (x.clone().into_data(), w.clone().into_data());
    for (key, layer) in [(DropoutKey::new(0, 0), "fc6"), (DropoutKey::new(5, 17).from_row(64), "fc7")] {
        let want = value_and_grad(x.clone(), w.clone(), |x| tensor_ops(&d, x, key, layer));
        for k in 1..=3 {
            for placement in [Placement::Shard(0), Placement::Shard(1), Placement::Replicate] {
                let mesh = MeshDevice::virtual_ranks(device.clone(), k);
                let xh = Tensor::<Mesh, 2>::from_data(xd.clone(), &mesh).distribute(placement);
                let wh = Tensor::<Mesh, 2>::from_data(wd.clone(), &mesh).distribute(placement);
                let what = format!("K={k} {placement} {layer}");
                mesh.reset_ledger();
                let out = d.forward(xh.clone(), key, layer);
                let ledger = mesh.ledger_snapshot();
                assert_eq!(ledger.total().bytes, 0, "{what}: the dropout moved data: {ledger:?}");
                assert_eq!(out.placement(), placement, "{what}: the output left the input's layout");
                assert_eq!(out.local_shapes(), xh.local_shapes(), "{what}: per-rank work");
                let taken = counter_dropout(xh.clone(), hybrid_mask(&d, &xh, key, layer)).is_ok();
                assert!(taken, "{what}: the kernel declined");
                let got = value_and_grad(xh, wh, |x| d.forward(x, key, layer));
                assert_eq!(got.0, want.0, "{what}: forward");
                assert_eq!(got.1, want.1, "{what}: gradient");
            }
        }
    }
}

/// Burn's fusing wgpu backend (built only with `--features wgpu,fusion`): the kernel as one
/// custom operation on the fusion stream, between fused blocks.
#[cfg(feature = "fusion")]
#[test]
fn under_fusion_the_kernel_is_the_tensor_op_dropout() {
    require_adapter();
    type Fused = burn::backend::wgpu::Wgpu;
    owt::runtime::step_kernels::register::<Fused>();
    let device = WgpuDevice::DefaultDevice;
    let d = CounterDropout::new(0.5);
    let key = DropoutKey::new(4, 2).from_row(3);
    let x = Tensor::<Autodiff<Fused>, 2>::random([ROWS, COLS], Distribution::Uniform(-1.0, 1.0), &device);
    let w = Tensor::<Autodiff<Fused>, 2>::random([ROWS, COLS], Distribution::Uniform(-1.0, 1.0), &device);
    assert!(counter_dropout(x.clone(), hybrid_mask(&d, &x, key, "fc6")).is_ok(), "the kernel declined");
    // Fused ops around it: the input is made by a fused chain, the output read by another.
    let around = |y: Tensor<Autodiff<Fused>, 2>| y.mul_scalar(3.0).add_scalar(1.0);
    let want = value_and_grad(x.clone(), w.clone(), |x| around(tensor_ops(&d, x.exp().sub_scalar(1.0), key, "fc6")));
    let got = value_and_grad(x, w, |x| around(d.forward(x.exp().sub_scalar(1.0), key, "fc6")));
    assert_eq!(got, want);
}
