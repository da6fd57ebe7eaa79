//! The run's SGD stepping every parameter in a few launches (owt-hybrid's `sgd_momentum` on
//! CubeCL, registered for wgpu by the CLI's runtime) against Burn's own per-parameter `Sgd`
//! on the same numbers: the same weights after each step with momentum and weight decay, the
//! same records for a checkpoint, the same run after a record is loaded, on one device and on a
//! mesh. Needs `--features wgpu` and a Vulkan driver (mesa-vulkan-drivers).
#![cfg(feature = "wgpu")]

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::Autodiff;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Distribution;
use owt::train::run_sgd::RunSgd;
use owt_hybrid::{Hybrid, MeshDevice};

use crate::wgpu_mesh::require_adapter;

type Plain = CubeBackend<WgpuRuntime, f32, i32, u32>;
type One = Autodiff<Plain>;
type Mesh = Autodiff<Hybrid<Plain>>;

/// Parameters of ranks 1, 2 and 4 and of unequal sizes, so a group's units outnumber most of
/// its parameters' elements; `frozen` gets no gradient.
#[derive(Module, Debug)]
struct Net<B: Backend> {
    conv: Conv2d<B>,
    fc: Linear<B>,
    frozen: Linear<B>,
}

impl<B: Backend> Net<B> {
    fn new(device: &B::Device) -> Self {
        Self {
            conv: Conv2dConfig::new([3, 5], [3, 3]).init(device),
            fc: LinearConfig::new(5 * 4 * 4, 7).init(device),
            frozen: LinearConfig::new(2, 3).init(device),
        }
    }

    fn loss(&self, x: Tensor<B, 4>) -> Tensor<B, 1> {
        let h = self.conv.forward(x).flatten::<2>(1, 3);
        self.fc.forward(h).powi_scalar(2).mean()
    }
}

const MOMENTUM: f64 = 0.9;
const DECAY: f32 = 5e-4;

fn burn_sgd<B: AutodiffBackend>() -> burn::optim::adaptor::OptimizerAdaptor<burn::optim::Sgd<B::InnerBackend>, Net<B>, B>
{
    SgdConfig::new()
        .with_momentum(Some(MomentumConfig { momentum: MOMENTUM, dampening: 0.0, nesterov: false }))
        .with_weight_decay(Some(WeightDecayConfig::new(DECAY)))
        .init::<B, Net<B>>()
}

fn run_sgd<B: AutodiffBackend>() -> RunSgd<Net<B>, B> {
    RunSgd::new(burn_sgd::<B>(), MOMENTUM, Some(DECAY))
}

/// Every parameter's values, in the module's order.
fn weights<B: Backend, M: Module<B>>(module: &M) -> Vec<Vec<f32>> {
    struct Values(Vec<Vec<f32>>);
    impl<B: Backend> burn::module::ModuleVisitor<B> for Values {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<B, D>>) {
            self.0.push(param.val().into_data().to_vec::<f32>().unwrap());
        }
    }
    let mut values = Values(Vec::new());
    module.visit(&mut values);
    values.0
}

/// `steps` steps of `ours` on `net` and `theirs` on `copy` in lockstep, each step's gradients
/// computed once (on `net`, with `prepare` applied) and given to both, so the optimizers are
/// compared on the same numbers. Two backward passes need not give the same bits: while one
/// thread tunes a kernel for a shape, another thread asking for the same shape finds the tune
/// pending and runs the first candidate instead of the winner (CubeCL's `LocalTuner::execute`,
/// `TuneCacheResult::Pending`), and the tests of this file run on threads side by side with
/// the same shapes. Each copy computing its own gradients once left one weight a last bit
/// off after three steps (CI, K=1 mesh).
fn train_pair<B: AutodiffBackend, O: Optimizer<Net<B>, B>, P: Optimizer<Net<B>, B>>(
    (mut net, mut copy): (Net<B>, Net<B>),
    (ours, theirs): (&mut O, &mut P),
    x: &Tensor<B, 4>,
    steps: usize,
    prepare: &dyn Fn(&Net<B>, GradientsParams) -> GradientsParams,
) -> (Net<B>, Net<B>) {
    for step in 0..steps {
        let grads = GradientsParams::from_grads(net.loss(x.clone()).backward(), &net);
        let grads = prepare(&net, grads);
        let twin = copied::<B>(&net, &grads);
        let lr = 0.1 / (step + 1) as f64;
        net = ours.step(lr, net, grads);
        copy = theirs.step(lr, copy, twin);
    }
    (net, copy)
}

/// A copy of `grads`, the gradients of `net`'s parameters (the two copies share their ids).
fn copied<B: AutodiffBackend>(net: &Net<B>, grads: &GradientsParams) -> GradientsParams {
    struct Copy<'a>(&'a GradientsParams, GradientsParams);
    impl<B: AutodiffBackend> burn::module::ModuleVisitor<B> for Copy<'_> {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<B, D>>) {
            if let Some(g) = self.0.get::<B::InnerBackend, D>(param.id) {
                self.1.register::<B::InnerBackend, D>(param.id, g);
            }
        }
    }
    let mut copy = Copy(grads, GradientsParams::new());
    net.visit(&mut copy);
    copy.1
}

fn same_start<B: AutodiffBackend>(device: &B::Device) -> (Net<B>, Net<B>, Tensor<B, 4>) {
    let net = Net::<B>::new(device);
    // Burn initialises parameters lazily, each copy on its own: read them first, so a clone
    // shares their ids and values (each optimizer then steps its own copy).
    let _ = weights::<B, _>(&net);
    let copy = net.clone();
    assert_eq!(weights::<B, _>(&copy), weights::<B, _>(&net), "the two copies start equal");
    let x = Tensor::<B, 4>::random([2, 3, 6, 6], Distribution::Normal(0.0, 1.0), device);
    (net, copy, x)
}

fn same(got: &[Vec<f32>], want: &[Vec<f32>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: parameter count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        for (a, b) in g.iter().zip(w) {
            // Burn's per-op kernels and the grouped kernel run the same f32 operations in the
            // same order: the same bits.
            assert!(a == b, "{what}: parameter {i}: {a} vs {b}");
        }
    }
}

/// One device with the kernels registered, and [`same_start`] on it.
fn one_device() -> (Net<One>, Net<One>, Tensor<One, 4>) {
    require_adapter();
    owt::runtime::step_kernels::register::<Plain>();
    same_start::<One>(&WgpuDevice::DefaultDevice)
}

#[test]
fn grouped_steps_are_burns_steps_on_one_device() {
    let (net, copy, x) = one_device();
    let mut grouped = run_sgd::<One>();
    assert!(grouped.grouped(), "the grouped kernel is registered for wgpu");
    let mut burn = burn_sgd::<One>();
    let frozen_before = weights::<One, _>(&net.frozen);
    let (ours, theirs) = train_pair((net, copy), (&mut grouped, &mut burn), &x, 3, &|_, g| g);
    assert_eq!(grouped.grouped_steps(), 3, "the kernel took every step");
    same(&weights::<One, _>(&ours), &weights::<One, _>(&theirs), "after 3 steps");
    assert_eq!(weights::<One, _>(&ours.frozen), frozen_before, "a parameter without gradient moved");
    assert_eq!(grouped.to_record().len(), burn.to_record().len(), "a momentum per stepped parameter");
}

#[test]
fn a_checkpointed_momentum_continues_the_same_run() {
    let (net, copy, x) = one_device();
    // Two steps each, then the grouped optimizer's momentum checkpointed and loaded into a
    // fresh grouped optimizer and into Burn's: two more steps from the same weights agree with
    // each other and with Burn's optimizer that never stopped.
    let mut first = run_sgd::<One>();
    let mut burn = burn_sgd::<One>();
    let (net, theirs) = train_pair((net, copy), (&mut first, &mut burn), &x, 2, &|_, g| g);
    same(&weights::<One, _>(&net), &weights::<One, _>(&theirs), "after 2 steps");
    let record = first.to_record();
    assert_eq!(record.len(), 4, "conv and fc, weight and bias each");
    let twin = net.clone();
    let mut resumed = run_sgd::<One>().load_record(record.clone());
    // A record loaded and not stepped yet is written back as it was read.
    assert_eq!(run_sgd::<One>().load_record(record.clone()).to_record().len(), 4);
    let mut burn_resumed_optim = burn_sgd::<One>().load_record(record);
    // The three in lockstep on the same gradients (see `train_pair`).
    let (mut ours, mut burn_resumed, mut uninterrupted) = (net, twin, theirs);
    for step in 0..2 {
        let grads = GradientsParams::from_grads(ours.loss(x.clone()).backward(), &ours);
        let (a, b) = (copied::<One>(&ours, &grads), copied::<One>(&ours, &grads));
        let lr = 0.1 / (step + 1) as f64;
        ours = resumed.step(lr, ours, grads);
        burn_resumed = burn_resumed_optim.step(lr, burn_resumed, a);
        uninterrupted = burn.step(lr, uninterrupted, b);
    }
    assert_eq!(resumed.grouped_steps(), 2, "the kernel took the resumed steps");
    let want = weights::<One, _>(&uninterrupted);
    same(&weights::<One, _>(&ours), &want, "grouped, resumed");
    same(&weights::<One, _>(&burn_resumed), &want, "Burn's, resumed from the grouped record");
}

/// A data-parallel learner's gradients (Burn's `MultiGradientsParams`): each parameter's
/// gradient summed from two devices, its own and another, lands on whichever of the two Burn
/// picks for it, for some parameters not theirs. Each is stepped on its parameter's device, to
/// the weights of Burn's own optimizer given the whole gradients there. The devices are two
/// 1-rank meshes, one on each Vulkan adapter, because CubeCL's wgpu runtime cannot move a
/// tensor between its devices itself (Hybrid stages through the host).
#[test]
fn gradients_summed_on_another_device_step_on_the_parameters_device() {
    use burn::optim::MultiGradientsParams;
    require_adapter();
    owt::runtime::step_kernels::register::<Plain>();
    let home = MeshDevice::new(vec![WgpuDevice::DefaultDevice]);
    let other = MeshDevice::new(vec![WgpuDevice::Cpu]);
    assert_ne!(home.id(), other.id(), "the two devices must be distinct");
    let (mut net, mut copy, x) = same_start::<Mesh>(&home);
    // Burn sums a parameter's gradient on entry `id % entries` (ids are random): the entries
    // ordered so that the first parameter's lands on the other device, whatever its id.
    let other_first = ids(&net)[0].0.val() % 2 == 0;
    // Half of each gradient on each device: halving is exact, so the two halves sum to the
    // gradient's bits on whichever device they meet.
    let split = |net: &Net<Mesh>, grads: &GradientsParams| {
        struct Halves<'a>(&'a GradientsParams, GradientsParams, GradientsParams, MeshDevice<WgpuDevice>);
        impl burn::module::ModuleVisitor<Mesh> for Halves<'_> {
            fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<Mesh, D>>) {
                if let Some(g) = self.0.get::<Hybrid<Plain>, D>(param.id) {
                    let half = g.div_scalar(2.0);
                    self.1.register::<Hybrid<Plain>, D>(param.id, half.clone());
                    self.2.register::<Hybrid<Plain>, D>(param.id, half.to_device(&self.3));
                }
            }
        }
        let mut halves = Halves(grads, GradientsParams::new(), GradientsParams::new(), other.clone());
        net.visit(&mut halves);
        let (here, there) = ((halves.1, home.to_id()), (halves.2, other.to_id()));
        MultiGradientsParams { grads: if other_first { vec![there, here] } else { vec![here, there] } }
    };
    // The premise, asked of Burn itself (the answer removes the gradient: a copy is asked).
    let grads = GradientsParams::from_grads(net.loss(x.clone()).backward(), &net);
    let (id, rank) = ids(&net)[0];
    let summed = summed_on(&mut split(&net, &grads), id, rank);
    assert!(summed == Some(other.clone()), "the first gradient must be summed on the other device");
    let mut grouped = run_sgd::<Mesh>();
    let mut burn = burn_sgd::<Mesh>();
    for step in 0..3 {
        let grads = GradientsParams::from_grads(net.loss(x.clone()).backward(), &net);
        let (multi, twin) = (split(&net, &grads), copied::<Mesh>(&net, &grads));
        let lr = 0.1 / (step + 1) as f64;
        net = grouped.step_multi(lr, net, multi);
        copy = burn.step(lr, copy, twin);
    }
    assert_eq!(grouped.grouped_steps(), 3, "the kernel took every step");
    same(&weights::<Mesh, _>(&net), &weights::<Mesh, _>(&copy), "after 3 steps");
    struct Devices(Vec<MeshDevice<WgpuDevice>>);
    impl burn::module::ModuleVisitor<Mesh> for Devices {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<Mesh, D>>) {
            self.0.push(param.val().device());
        }
    }
    let mut devices = Devices(Vec::new());
    net.visit(&mut devices);
    assert!(devices.0.iter().all(|d| *d == home), "every parameter stays on its device");
}

/// The kernel binds every buffer on the first parameter's device; given a gradient on
/// another device, it refuses in words instead of reading that device's memory as its own.
#[test]
fn the_kernel_refuses_a_gradient_on_another_device() {
    use burn::tensor::TensorPrimitive;
    use owt_hybrid::sgd_momentum::{MultiTensorSgdBackend, SgdMomentum, SgdTensors};
    require_adapter();
    let float = |values: [f32; 2], device: &WgpuDevice| match Tensor::<Plain, 1>::from_floats(values, device)
        .into_primitive()
    {
        TensorPrimitive::Float(t) => t,
        TensorPrimitive::QFloat(_) => unreachable!("a float tensor"),
    };
    let param = float([1.0, 2.0], &WgpuDevice::DefaultDevice);
    let grad = float([0.5, -0.5], &WgpuDevice::Cpu);
    let hyper = SgdMomentum { lr: 0.1, momentum: 0.9, weight_decay: None };
    let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Plain::sgd_momentum_step(vec![SgdTensors { param, grad, velocity: None }], hyper)
    }));
    let err = step.err().expect("a gradient on another device must be refused");
    let message = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("on another device Cpu") && message.contains("DefaultDevice"), "{message}");
}

/// Each parameter's id and rank (how many dimensions), in the module's order.
fn ids<B: Backend, M: Module<B>>(module: &M) -> Vec<(burn::module::ParamId, usize)> {
    struct Ids(Vec<(burn::module::ParamId, usize)>);
    impl<B: Backend> burn::module::ModuleVisitor<B> for Ids {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<B, D>>) {
            self.0.push((param.id, D));
        }
    }
    let mut ids = Ids(Vec::new());
    module.visit(&mut ids);
    ids.0
}

/// The device on which `grads` sums parameter `id`'s gradient (of rank `rank`), if it has one.
fn summed_on(
    grads: &mut burn::optim::MultiGradientsParams,
    id: burn::module::ParamId,
    rank: usize,
) -> Option<MeshDevice<WgpuDevice>> {
    match rank {
        1 => grads.remove::<Hybrid<Plain>, 1>(id).map(|(_, d)| d),
        2 => grads.remove::<Hybrid<Plain>, 2>(id).map(|(_, d)| d),
        _ => grads.remove::<Hybrid<Plain>, 4>(id).map(|(_, d)| d),
    }
}

#[test]
fn grouped_steps_are_burns_steps_on_a_mesh() {
    require_adapter();
    owt::runtime::step_kernels::register::<Plain>();
    for k in [1, 2] {
        let mesh = MeshDevice::virtual_ranks(WgpuDevice::DefaultDevice, k);
        let (net, copy, x) = same_start::<Mesh>(&mesh);
        let mut grouped = run_sgd::<Mesh>();
        assert!(grouped.grouped(), "the grouped kernel is registered for a wgpu mesh");
        // As the trainer does: each gradient summed to its parameter's layout first.
        let synced = |net: &Net<Mesh>, grads| owt_hybrid::sync_gradients(net, grads, &mesh);
        let (ours, theirs) = train_pair((net, copy), (&mut grouped, &mut burn_sgd::<Mesh>()), &x, 3, &synced);
        assert_eq!(grouped.grouped_steps(), 3, "K={k}: the kernel took every step");
        same(&weights::<Mesh, _>(&ours), &weights::<Mesh, _>(&theirs), &format!("K={k}"));
    }
}

/// Gradients not yet summed (pending sums on a mesh) are stepped parameter by parameter, by
/// Burn's arithmetic through `Hybrid`'s own ops, to Burn's numbers.
#[test]
fn parameters_the_kernel_declines_step_one_by_one_to_the_same_numbers() {
    require_adapter();
    owt::runtime::step_kernels::register::<Plain>();
    let mesh = MeshDevice::virtual_ranks(WgpuDevice::DefaultDevice, 2);
    let (net, copy, x) = same_start::<Mesh>(&mesh);
    let mut grouped = run_sgd::<Mesh>();
    let (ours, theirs) = train_pair((net, copy), (&mut grouped, &mut burn_sgd::<Mesh>()), &x, 2, &|_, g| g);
    assert_eq!(grouped.grouped_steps(), 0, "pending sums are not the kernel's");
    same(&weights::<Mesh, _>(&ours), &weights::<Mesh, _>(&theirs), "one by one");
}

/// Burn's fusing wgpu backend (built only with `--features wgpu,fusion`): the grouped step as
/// one custom operation on the fusion stream.
#[cfg(feature = "fusion")]
#[test]
fn under_fusion_grouped_steps_are_burns_steps() {
    require_adapter();
    type Fused = Autodiff<burn::backend::wgpu::Wgpu>;
    owt::runtime::step_kernels::register::<burn::backend::wgpu::Wgpu>();
    let device = WgpuDevice::DefaultDevice;
    let (net, copy, x) = same_start::<Fused>(&device);
    let mut grouped = run_sgd::<Fused>();
    let (ours, theirs) = train_pair((net, copy), (&mut grouped, &mut burn_sgd::<Fused>()), &x, 3, &|_, g| g);
    assert_eq!(grouped.grouped_steps(), 3, "the kernel took every step");
    // Burn's fused kernels may contract a multiply and an add into one rounding.
    let (a, b) = (weights::<Fused, _>(&ours), weights::<Fused, _>(&theirs));
    for (g, w) in a.iter().zip(&b) {
        for (p, q) in g.iter().zip(w) {
            assert!((p - q).abs() <= 4.0 * f32::EPSILON * q.abs().max(1e-3), "{p} vs {q}");
        }
    }
}
