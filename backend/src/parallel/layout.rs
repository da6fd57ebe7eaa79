//! Where a training step's tensors live, for any Burn module: on one device
//! ([`SingleDevice`]), or on a mesh under a parallel plan ([`MeshLayout`], over
//! `Autodiff<Hybrid<IB>>`). A training step written once against [`StepLayout`] runs on
//! either, so single-device and parallel training share every line that decides the numbers.
//!
//! What a layout decides: where parameters and inputs go (the plan, the input placement and
//! uploads that send each rank only its piece), the step's hooks (labels for each layer's
//! traffic, the backward pass, the gradient sync) and the record of what moved.

use burn::backend::Autodiff;
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, TensorData};

use crate::api::distributed::Distributed;
use crate::api::upload::{RowSplit, Upload};
use crate::backend::Hybrid;
use crate::ledger::LedgerSnapshot;
use crate::ledger::{Phase, Stage};
use crate::mesh::MeshDevice;
use crate::parallel::gradient_sync::sync_gradients;
use crate::parallel::layer_labels::LayerLabels;
use crate::parallel::plan::{Plan, PlanError};
use crate::spec::scheme::Exchange;
use crate::spec::WirePrecision;
use std::ops::Range;

/// Labels a step's layers as they run (see [`crate::LayerLabels`]); does nothing on one device.
pub trait StepLabels<B: Backend> {
    /// Enters `layer` with its input `x`.
    fn enter<const D: usize>(&mut self, layer: &str, x: Tensor<B, D>) -> Tensor<B, D>;
    /// Ends a run of layers at `x`.
    fn close<const D: usize>(&mut self, x: Tensor<B, D>) -> Tensor<B, D>;

    /// Into how many groups of rows batch normalisation takes its statistics on this layout:
    /// 1 (the whole batch's, equal to one device), or the ranks of a plan with
    /// [`crate::BatchStats::Local`] (each rank's batch shard on its own, as DDP's default).
    fn batch_stat_groups(&self) -> usize {
        1
    }
}

/// The labels of a layout that records nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLabels;

impl<B: Backend> StepLabels<B> for NoLabels {
    fn enter<const D: usize>(&mut self, _layer: &str, x: Tensor<B, D>) -> Tensor<B, D> {
        x
    }

    fn close<const D: usize>(&mut self, x: Tensor<B, D>) -> Tensor<B, D> {
        x
    }
}

impl<IB: Backend> StepLabels<Autodiff<Hybrid<IB>>> for LayerLabels<IB> {
    fn enter<const D: usize>(
        &mut self,
        layer: &str,
        x: Tensor<Autodiff<Hybrid<IB>>, D>,
    ) -> Tensor<Autodiff<Hybrid<IB>>, D> {
        LayerLabels::enter(self, layer, x)
    }

    fn close<const D: usize>(&mut self, x: Tensor<Autodiff<Hybrid<IB>>, D>) -> Tensor<Autodiff<Hybrid<IB>>, D> {
        LayerLabels::close(self, x)
    }

    fn batch_stat_groups(&self) -> usize {
        LayerLabels::batch_stat_groups(self)
    }
}

/// How a training step places a module and its inputs, labels its layers, turns a loss into
/// gradients ready for an optimizer and records what moved between ranks: four concerns, each
/// a trait of its own with defaults for one device, so a layout of a user's own implements
/// only what it changes ([`Feed`]: where inputs go; [`ModulePlacement`]: where parameters
/// live; [`GradientSync`]: the backward pass and the sync; [`StepMesh`]: what the step runs
/// on). Any type with all four is a `StepLayout`. A mesh of nodes needs no fifth: its tensors
/// carry their placement along the nodes themselves.
///
/// One step written against the trait runs on one device or on a mesh:
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::module::AutodiffModule;
/// use burn::nn::{Linear, LinearConfig};
/// use burn::optim::{Optimizer, SgdConfig};
/// use burn::prelude::*;
/// use burn::tensor::backend::AutodiffBackend;
/// use owt_hybrid::{Exchange, MeshDevice, MeshLayout, PlanKind, SingleDevice, StepLayout};
///
/// fn step<B: AutodiffBackend, L: StepLayout<B>>(layout: &L) -> Vec<f32> {
///     let init = burn::nn::Initializer::Constant { value: 0.1 };
///     let model: Linear<B> = LinearConfig::new(8, 4).with_initializer(init).init(layout.device());
///     let model = layout.place_module(model).unwrap();
///     let x = layout.upload_input::<2>(burn::tensor::TensorData::new(vec![0.5f32; 16 * 8], [16, 8]));
///     let grads = layout.gradients(&model, model.forward(x).powf_scalar(2.0).mean());
///     let grads = layout.sync(&model, grads);
///     let model = SgdConfig::new().init::<B, Linear<B>>().step(0.1, model, grads);
///     model.valid().weight.val().into_data().to_vec::<f32>().unwrap()
/// }
///
/// let one = step(&SingleDevice::<Autodiff<Flex>>::new(Default::default()));
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let two = step(&MeshLayout::<Flex>::new(mesh, PlanKind::DataParallel.plan(), Exchange::AllGather));
/// assert!(one.iter().zip(&two).all(|(a, b)| (a - b).abs() <= 1e-6), "{one:?} vs {two:?}");
/// assert_ne!(one, vec![0.1; 32], "the step moved the weights");
/// ```
pub trait StepLayout<B: AutodiffBackend>: Feed<B> + ModulePlacement<B> + GradientSync<B> + StepMesh {}

impl<B: AutodiffBackend, L: Feed<B> + ModulePlacement<B> + GradientSync<B> + StepMesh> StepLayout<B> for L {}

/// Where a step's inputs go: the device tensors are made on and how a batch reaches it, each
/// rank receiving only its piece. The defaults are one device's: tensors as they are, host
/// data uploaded whole.
pub trait Feed<B: Backend> {
    /// The device tensors are made on (a mesh for [`MeshLayout`]).
    fn device(&self) -> &B::Device;

    /// Float input (images) laid out as the layout's input.
    fn place_input<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        x
    }

    /// Int input (labels) laid out as the layout's input.
    fn place_labels<const D: usize>(&self, y: Tensor<B, D, Int>) -> Tensor<B, D, Int> {
        y
    }

    /// Host floats as the layout's input, each rank receiving only its piece.
    fn upload_input<const D: usize>(&self, data: TensorData) -> Tensor<B, D> {
        Tensor::from_data(data, self.device())
    }

    /// Host integers (labels, or pixels as bytes with `dtype` `U8`) as the layout's input,
    /// each rank receiving only its piece.
    fn upload_labels<const D: usize>(&self, data: TensorData, dtype: Option<DType>) -> Tensor<B, D, Int> {
        match dtype {
            Some(dtype) => Tensor::from_data(data, (self.device(), dtype)),
            None => Tensor::from_data(data, self.device()),
        }
    }

    /// Which rows of a batch this process uploads (every row but in a job of several
    /// processes or nodes, each of which reads only its ranks' rows).
    fn row_split(&self) -> RowSplit {
        RowSplit::whole()
    }

    /// [`Feed::upload_input`] of rows `rows` of a batch of `total` (those [`Feed::row_split`]
    /// names).
    fn upload_input_rows<const D: usize>(&self, data: TensorData, rows: Range<usize>, total: usize) -> Tensor<B, D> {
        assert_eq!(rows, 0..total, "this layout takes whole batches");
        self.upload_input(data)
    }

    /// [`Feed::upload_labels`] of rows `rows` of a batch of `total`.
    fn upload_labels_rows<const D: usize>(
        &self,
        data: TensorData,
        dtype: Option<DType>,
        rows: Range<usize>,
        total: usize,
    ) -> Tensor<B, D, Int> {
        assert_eq!(rows, 0..total, "this layout takes whole batches");
        self.upload_labels(data, dtype)
    }
}

/// Where a module's parameters live: as the layout stores them, and as a step computes with
/// them. The defaults keep every parameter where it was made, whole.
pub trait ModulePlacement<B: AutodiffBackend> {
    /// The plan, where the layout has one.
    fn plan(&self) -> Option<&Plan> {
        None
    }

    /// `module` with its parameters where the layout wants them, or why they cannot go there.
    fn place_module<M: Module<B>>(&self, module: M) -> Result<M, PlanError> {
        Ok(module)
    }

    /// The module a step computes with: `module` itself wherever each rank stores its
    /// parameters' pieces as the step uses them. Where the layout stores parameters in
    /// slices the step must gather first (a 2-D mesh's parameters sharded over its nodes,
    /// FSDP-style), each such parameter is gathered by a differentiable op into one with the
    /// same id, whose gradient the backward pass brings back to the stored pieces. The
    /// forward pass, an evaluation and a checkpoint's weights use it; [`GradientSync::sync`]
    /// and the optimizer take the stored `module`. A collective there: every node calls it at
    /// the same point.
    fn compute_module<M: Module<B>>(&self, module: &M) -> M {
        module.clone()
    }

    /// Whether every parameter is stored as the step computes with it: then
    /// [`ModulePlacement::compute_module`] and [`ModulePlacement::stored_state`] change
    /// nothing.
    fn stores_whole(&self) -> bool {
        true
    }

    /// The piece this layout stores of a whole optimizer state (read from a checkpoint) for
    /// the parameter at `path`: the state laid out as the parameter is where the layout
    /// stores parameters in pieces the optimizer's update runs on (a 2-D mesh's slices over
    /// its nodes); the state itself elsewhere. Local. (Making a stored state whole needs
    /// nothing of the layout: reading a tensor gathers it.)
    fn stored_state<const D: usize>(
        &self,
        _path: &str,
        state: Tensor<B::InnerBackend, D>,
    ) -> Tensor<B::InnerBackend, D> {
        state
    }
}

/// A step's backward pass and gradient sync, and the labels that name each layer's traffic.
/// The defaults are one device's: an ordinary backward pass, gradients as they come.
pub trait GradientSync<B: AutodiffBackend> {
    /// The labels of one step's layers.
    type Labels: StepLabels<B>;

    /// Starts labelling one step's layers.
    fn labels(&self) -> Self::Labels;

    /// [`GradientSync::labels`] for a pass whose gradients are synced once it ends: a layout
    /// that overlaps its sync with the backward pass starts the sums of `module`'s parameters
    /// (the module as stored) layer by layer as the pass leaves each layer, and
    /// [`GradientSync::sync`] then finds them summed. The default labels as `labels` does.
    fn labels_syncing<M: AutodiffModule<B>>(&self, _module: &M) -> Self::Labels {
        self.labels()
    }

    /// The backward pass from `loss` (labelled `loss:backward` on a mesh).
    fn backward(&self, loss: Tensor<B, 1>) -> B::Gradients {
        loss.backward()
    }

    /// The backward pass from `loss` and the gradients of `module`'s parameters out of it
    /// (the module as stored, not as [`ModulePlacement::compute_module`] gathers it), not yet
    /// synced: what gradient accumulation sums over micro-batches before one
    /// [`GradientSync::sync`].
    fn gradients<M: AutodiffModule<B>>(&self, module: &M, loss: Tensor<B, 1>) -> GradientsParams {
        GradientsParams::from_grads(self.backward(loss), module)
    }

    /// `module`'s gradients `grads`, each brought to its parameter's placement (the gradient
    /// sync, labelled per layer on a mesh), ready for an optimizer. Once per optimizer step,
    /// however many backward passes summed into `grads`.
    fn sync<M: AutodiffModule<B>>(&self, _module: &M, grads: GradientsParams) -> GradientsParams {
        grads
    }
}

/// What a step runs on, as a trainer needs to know it: the ranks, which process this is, a
/// line for logs, and what moved between ranks. The defaults are one device's in one process.
pub trait StepMesh {
    /// Ranks the batch is split over (1 on one device).
    fn ranks(&self) -> usize {
        1
    }

    /// The ranks and batch the plan itself runs on, for a global batch of `batch`: the whole
    /// mesh and batch on a 1-D mesh; one node's local ranks and its share on a 2-D mesh (what
    /// a plan's checks must hold for).
    fn plan_mesh(&self, batch: usize) -> (usize, usize) {
        (self.ranks(), batch)
    }

    /// One line saying where the step runs.
    fn describe(&self) -> String;

    /// What moved between ranks since the last reset (`None` on one device).
    fn traffic(&self) -> Option<LedgerSnapshot> {
        None
    }

    /// Clears the record of what moved.
    fn reset_traffic(&self) {}

    /// Runs `read`, a read of the step's figures back to the host (a training loop's loss and
    /// correct count) or their tally, with what it moves recorded under [`Phase::reads`], apart
    /// from the steps' traffic (which a dry run predicts). On one device it only runs it.
    fn reading<T>(&self, read: impl FnOnce() -> T) -> T {
        read()
    }

    /// Whether this process prints progress and writes results: process 0 of a mesh spanning
    /// processes; always on one process.
    fn primary(&self) -> bool {
        true
    }

    /// This process's index among the processes the layout spans (0 on one process).
    fn process(&self) -> usize {
        0
    }
}

/// Everything on one device of an autodiff backend.
#[derive(Debug, Clone)]
pub struct SingleDevice<B: AutodiffBackend> {
    device: B::Device,
}

impl<B: AutodiffBackend> SingleDevice<B> {
    /// The layout on `device`.
    pub fn new(device: B::Device) -> Self {
        Self { device }
    }
}

impl<B: AutodiffBackend> Feed<B> for SingleDevice<B> {
    fn device(&self) -> &B::Device {
        &self.device
    }
}

impl<B: AutodiffBackend> ModulePlacement<B> for SingleDevice<B> {}

impl<B: AutodiffBackend> GradientSync<B> for SingleDevice<B> {
    type Labels = NoLabels;

    fn labels(&self) -> NoLabels {
        NoLabels
    }
}

impl<B: AutodiffBackend> StepMesh for SingleDevice<B> {
    fn describe(&self) -> String {
        format!("one device ({:?})", self.device)
    }
}

/// A mesh of ranks of inner backend `IB`, a plan and an exchange scheme.
#[derive(Debug, Clone)]
pub struct MeshLayout<IB: Backend> {
    mesh: MeshDevice<IB::Device>,
    plan: Plan,
    /// Whether the gradient sums start during the backward pass, layer by layer.
    overlap: bool,
}

impl<IB: Backend> MeshLayout<IB> {
    /// The layout of `plan` on `mesh`, exchanging activities by `scheme`.
    pub fn new(mesh: MeshDevice<IB::Device>, plan: Plan, scheme: Exchange) -> Self {
        Self { mesh: mesh.with_exchange(scheme), plan, overlap: false }
    }

    /// This layout starting each layer's gradient sums as soon as the backward pass leaves the
    /// layer, instead of after the whole pass (PyTorch DDP's overlap): the same sums, bytes and
    /// results, in another order (see [`GradientSync::labels_syncing`]).
    pub fn with_overlapped_sync(self) -> Self {
        Self { overlap: true, ..self }
    }

    /// This layout sending float pieces in `wire` precision (bf16 or f16 halve the bytes of
    /// every activity exchange and gradient sum; sums are still taken in f32).
    pub fn with_wire(self, wire: WirePrecision) -> Self {
        Self { mesh: self.mesh.with_wire(wire), ..self }
    }

    /// The mesh.
    pub fn mesh(&self) -> &MeshDevice<IB::Device> {
        &self.mesh
    }
}

type AH<IB> = Autodiff<Hybrid<IB>>;

impl<IB: Backend> Feed<AH<IB>> for MeshLayout<IB> {
    fn device(&self) -> &MeshDevice<IB::Device> {
        &self.mesh
    }

    fn place_input<const D: usize>(&self, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        x.distribute(self.plan.input)
    }

    fn place_labels<const D: usize>(&self, y: Tensor<AH<IB>, D, Int>) -> Tensor<AH<IB>, D, Int> {
        y.distribute(self.plan.input)
    }

    fn upload_input<const D: usize>(&self, data: TensorData) -> Tensor<AH<IB>, D> {
        Tensor::upload(data, self.plan.input, &self.mesh, None)
    }

    fn upload_labels<const D: usize>(&self, data: TensorData, dtype: Option<DType>) -> Tensor<AH<IB>, D, Int> {
        Tensor::upload(data, self.plan.input, &self.mesh, dtype)
    }

    fn row_split(&self) -> RowSplit {
        RowSplit::of(&self.mesh, self.plan.input)
    }

    fn upload_input_rows<const D: usize>(
        &self,
        data: TensorData,
        rows: Range<usize>,
        total: usize,
    ) -> Tensor<AH<IB>, D> {
        Tensor::upload_rows(data, rows, total, self.plan.input, &self.mesh, None)
    }

    fn upload_labels_rows<const D: usize>(
        &self,
        data: TensorData,
        dtype: Option<DType>,
        rows: Range<usize>,
        total: usize,
    ) -> Tensor<AH<IB>, D, Int> {
        Tensor::upload_rows(data, rows, total, self.plan.input, &self.mesh, dtype)
    }
}

impl<IB: Backend> ModulePlacement<AH<IB>> for MeshLayout<IB> {
    fn plan(&self) -> Option<&Plan> {
        Some(&self.plan)
    }

    fn place_module<M: Module<AH<IB>>>(&self, module: M) -> Result<M, PlanError> {
        self.plan.try_apply(module, self.mesh.size())
    }
}

impl<IB: Backend> GradientSync<AH<IB>> for MeshLayout<IB> {
    type Labels = LayerLabels<IB>;

    fn labels(&self) -> LayerLabels<IB> {
        LayerLabels::new(&self.mesh).with_batch_stat_groups(self.plan.batch_stat_groups(self.mesh.size()))
    }

    fn labels_syncing<M: AutodiffModule<AH<IB>>>(&self, module: &M) -> LayerLabels<IB> {
        if self.overlap {
            LayerLabels::syncing(&self.mesh, module)
                .with_batch_stat_groups(self.plan.batch_stat_groups(self.mesh.size()))
        } else {
            self.labels()
        }
    }

    fn backward(&self, loss: Tensor<AH<IB>, 1>) -> <AH<IB> as AutodiffBackend>::Gradients {
        self.mesh.set_phase(Some(Phase::of("loss", Stage::Backward)));
        loss.backward()
    }

    fn sync<M: AutodiffModule<AH<IB>>>(&self, module: &M, grads: GradientsParams) -> GradientsParams {
        sync_gradients(module, grads, &self.mesh)
    }
}

impl<IB: Backend> StepMesh for MeshLayout<IB> {
    fn ranks(&self) -> usize {
        self.mesh.size()
    }

    fn describe(&self) -> String {
        let wire = match self.mesh.wire() {
            WirePrecision::Native => String::new(),
            w => format!(", wire {w}"),
        };
        let overlap = if self.overlap { ", sums overlapped" } else { "" };
        format!(
            "{} ranks, plan {}, scheme {}{wire}{overlap}",
            self.mesh.size(),
            self.plan.name,
            self.mesh.exchange().letter()
        )
    }

    /// The whole mesh's traffic: every process's ledger summed (a collective across
    /// processes).
    fn traffic(&self) -> Option<LedgerSnapshot> {
        Some(self.mesh.job_ledger_snapshot())
    }

    fn reset_traffic(&self) {
        self.mesh.reset_ledger()
    }

    fn reading<T>(&self, read: impl FnOnce() -> T) -> T {
        let _reads = self.mesh.phase(Phase::reads());
        read()
    }

    fn primary(&self) -> bool {
        self.mesh.process() == 0
    }

    fn process(&self) -> usize {
        self.mesh.process()
    }
}
