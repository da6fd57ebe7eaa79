//! The vendored burn-cubecl's hook (`burn_cubecl::kernel::external`), through which owt hands
//! CUDA's convolutions and matmuls to cuDNN and cuBLASLt, is reached by every way an op gets to
//! a CubeCL backend: a plain device under autodiff, and each rank of a `Hybrid` mesh (both
//! plans). Shown on wgpu (lavapipe, no GPU needed) with kernels registered for wgpu's runtime
//! that record every call made from the test's thread and take the forward convolutions and
//! the matmuls by other CubeCL kernels than burn-cubecl would choose (the direct convolution,
//! the plain matmul): the counts are each op's calls in one step, and the results equal
//! Flex's, so what a hook returns is what the step uses.
#![cfg(feature = "wgpu")]

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::Distribution;
use burn_cubecl::kernel::conv::{conv_forward, ConvStrategy};
use burn_cubecl::kernel::external::{self, ExternalKernels};
use burn_cubecl::kernel::matmul::{matmul, MatmulStrategy};
use burn_cubecl::tensor::CubeTensor;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type T = CubeTensor<WgpuRuntime>;
type Plain = CubeBackend<WgpuRuntime, f32, i32, u32>;

/// Calls per op: conv2d, conv2d_x_backward, conv2d_weight_backward, matmul.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Calls {
    conv: usize,
    conv_x: usize,
    conv_w: usize,
    matmul: usize,
}

/// Records the calls made on one thread (the test's; other tests' wgpu ops, on their own
/// threads, pass through untouched) and takes its forward convolutions and matmuls.
struct Recorder {
    thread: ThreadId,
    calls: Mutex<Calls>,
}

impl Recorder {
    fn mine(&self) -> bool {
        std::thread::current().id() == self.thread
    }
    fn count(&self, f: impl FnOnce(&mut Calls)) {
        f(&mut self.calls.lock().unwrap())
    }
}

impl ExternalKernels<WgpuRuntime> for Recorder {
    fn conv2d(&self, x: &T, weight: &T, bias: Option<&T>, options: &ConvOptions<2>) -> Option<T> {
        if !self.mine() {
            return None;
        }
        self.count(|c| c.conv += 1);
        Some(
            conv_forward::<WgpuRuntime, 2>(
                x.clone(),
                weight.clone(),
                bias.cloned(),
                options.clone(),
                ConvStrategy::Direct,
            )
            .unwrap(),
        )
    }
    fn conv2d_x_backward(&self, _x: &T, _w: &T, _dy: &T, _o: &ConvOptions<2>) -> Option<T> {
        if self.mine() {
            self.count(|c| c.conv_x += 1);
        }
        None
    }
    fn conv2d_weight_backward(&self, _x: &T, _w: &T, _dy: &T, _o: &ConvOptions<2>) -> Option<T> {
        if self.mine() {
            self.count(|c| c.conv_w += 1);
        }
        None
    }
    fn matmul(&self, lhs: &T, rhs: &T) -> Option<T> {
        if !self.mine() {
            return None;
        }
        self.count(|c| c.matmul += 1);
        Some(matmul(lhs.clone(), rhs.clone(), None, MatmulStrategy::Cube, lhs.dtype).unwrap())
    }
    fn takes_matmuls(&self) -> bool {
        true
    }
}

/// Unregisters the recorder when the test ends, passed or failed.
struct Registered(Arc<Recorder>);

impl Registered {
    fn new() -> Self {
        let recorder = Arc::new(Recorder { thread: std::thread::current().id(), calls: Mutex::default() });
        external::register::<WgpuRuntime>(recorder.clone());
        Registered(recorder)
    }
    /// The calls since the last take.
    fn take(&self) -> Calls {
        std::mem::take(&mut *self.0.calls.lock().unwrap())
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        external::unregister::<WgpuRuntime>();
    }
}

/// Two convolutions (the second grouped, its input tracked so its input gradient is asked for),
/// relu, a linear layer, log-softmax NLL.
fn forward<B: Backend>(
    params: &[Tensor<B, 4>; 2],
    w: Tensor<B, 2>,
    x: Tensor<B, 4>,
    y: Tensor<B, 1, Int>,
) -> Tensor<B, 1> {
    let n = x.dims()[0];
    let h = relu(conv2d(x, params[0].clone(), None, ConvOptions::new([2, 2], [1, 1], [1, 1], 1)));
    let h = relu(conv2d(h, params[1].clone(), None, ConvOptions::new([1, 1], [1, 1], [1, 1], 2)));
    let h: Tensor<B, 2> = h.reshape([n, 4 * 4 * 4]);
    log_softmax(h.matmul(w), 1).gather(1, y.reshape([n, 1])).neg().mean()
}

struct Data {
    w1: TensorData,
    w2: TensorData,
    fc: TensorData,
    x: TensorData,
    y: TensorData,
}

fn data() -> Data {
    let rd = Default::default();
    let normal = Distribution::Normal(0.0, 0.3);
    Data {
        w1: Tensor::<Flex, 4>::random([4, 3, 3, 3], normal, &rd).into_data(),
        w2: Tensor::<Flex, 4>::random([4, 2, 3, 3], normal, &rd).into_data(),
        fc: Tensor::<Flex, 2>::random([64, 6], normal, &rd).into_data(),
        x: Tensor::<Flex, 4>::random([6, 3, 8, 8], Distribution::Normal(0.0, 1.0), &rd).into_data(),
        y: TensorData::new((0..6i64).collect::<Vec<_>>(), [6]),
    }
}

/// The loss and the three gradients on `device`, each placed as `place` says (identity off a mesh).
fn step<B: burn::tensor::backend::AutodiffBackend>(
    d: &Data,
    device: &B::Device,
    place: impl Fn(Tensor<B, 2>) -> Tensor<B, 2>,
    place_x: impl Fn(Tensor<B, 4>) -> Tensor<B, 4>,
) -> Vec<Vec<f32>> {
    let w1 = Tensor::<B, 4>::from_data(d.w1.clone(), device).require_grad();
    let w2 = Tensor::<B, 4>::from_data(d.w2.clone(), device).require_grad();
    let fc = place(Tensor::<B, 2>::from_data(d.fc.clone(), device)).require_grad();
    let x = place_x(Tensor::<B, 4>::from_data(d.x.clone(), device));
    let loss = forward(&[w1.clone(), w2.clone()], fc.clone(), x, Tensor::from_data(d.y.clone(), device));
    let value = loss.to_data().to_vec::<f32>().unwrap();
    let g = loss.backward();
    let grads = [w1.grad(&g).unwrap().into_data(), w2.grad(&g).unwrap().into_data(), fc.grad(&g).unwrap().into_data()];
    std::iter::once(value).chain(grads.map(|d| d.to_vec::<f32>().unwrap())).collect()
}

/// Within lavapipe's rounding of Flex's values (wgpu_mesh.rs measured 3.5e-7 of scale).
fn close(got: &[Vec<f32>], want: &[Vec<f32>], what: &str) {
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let scale = b.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
        let diff = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(diff <= 1e-5 * scale, "{what}: output {i} off by {diff} (scale {scale})");
    }
}

#[test]
fn every_path_to_a_cubecl_backend_meets_the_hook_and_uses_what_it_returns() {
    super::wgpu_mesh::require_adapter();
    let d = data();
    let want = step::<Autodiff<Flex>>(&d, &Default::default(), |t| t, |t| t);
    let hook = Registered::new();

    // One device: each op once; the first convolution's input is not tracked, so only the
    // second asks for an input gradient; the matmul runs forward and for both gradients.
    let got = step::<Autodiff<Plain>>(&d, &WgpuDevice::DefaultDevice, |t| t, |t| t);
    close(&got, &want, "one device");
    assert_eq!(hook.take(), Calls { conv: 2, conv_x: 1, conv_w: 2, matmul: 3 });

    // Two ranks under data parallelism: every op once per rank.
    let mesh = MeshDevice::virtual_ranks(WgpuDevice::DefaultDevice, 2);
    let got = step::<Autodiff<Hybrid<Plain>>>(&d, &mesh, |t| t, |t| t.distribute(Placement::Shard(0)));
    close(&got, &want, "2 ranks, data parallel");
    assert_eq!(hook.take(), Calls { conv: 4, conv_x: 2, conv_w: 4, matmul: 6 });

    // The weird trick's FC layer (columns split): the matmuls run on each rank's shard.
    let got = step::<Autodiff<Hybrid<Plain>>>(
        &d,
        &mesh,
        |t| t.distribute(Placement::Shard(1)),
        |t| t.distribute(Placement::Shard(0)),
    );
    close(&got, &want, "2 ranks, FC columns split");
    let calls = hook.take();
    assert_eq!((calls.conv, calls.conv_x, calls.conv_w), (4, 2, 4));
    assert!(calls.matmul >= 6 && calls.matmul % 2 == 0, "each rank runs its shard's matmuls: {calls:?}");
}
