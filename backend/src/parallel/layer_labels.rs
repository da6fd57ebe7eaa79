//! Labelling a training step's communication by layer and stage, so the ledger reads like an
//! analytic plan: `conv3:forward`, `conv3:backward`, `conv3:sync`, `fc6:forward`, ...,
//! `loss:forward`, `loss:backward`.
//!
//! Forward traffic is labelled as each layer starts ([`LayerLabels::enter`]); backward traffic
//! by a marker on each layer's input whose backward step relabels the ledger when the backward
//! pass reaches it; the gradient sync (`gradient_sync.rs`) labels each parameter's sums with
//! its layer ([`layer_of`]). A layer is whatever the caller names: the labels work for any
//! Burn module.

use burn::backend::Autodiff;
use burn::prelude::*;

use std::collections::HashMap;

use burn::module::{Module, ModuleVisitor, Param};

use crate::api::distributed::Distributed;
use crate::autodiff::phase_marker::{mark_and_sync, mark_backward_phase, ReadyParam};
use crate::backend::Hybrid;
use crate::ledger::{Phase, Stage};
use crate::mesh::MeshDevice;

type AH<IB> = Autodiff<Hybrid<IB>>;

/// The layer a parameter path belongs to: the module that holds it (`conv3.weight` ->
/// `conv3`, `net.fc6.bias` -> `net.fc6`; a top-level parameter is its own layer).
pub fn layer_of(path: &str) -> &str {
    path.rsplit_once('.').map_or(path, |(module, _)| module)
}

/// Labels one step's forward and backward traffic layer by layer on a mesh: call
/// [`LayerLabels::enter`] with each layer's input as the layer starts, and
/// [`LayerLabels::close`] on the output of the last layer of a run.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::prelude::*;
/// use owt_hybrid::{Distributed, Hybrid, LayerLabels, MeshDevice, Placement};
///
/// type B = Autodiff<Hybrid<Flex>>;
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let w = Tensor::<B, 2>::ones([3, 4], &mesh).distribute(Placement::Shard(1)).require_grad();
/// let x = Tensor::<B, 2>::ones([6, 3], &mesh).distribute(Placement::Shard(0));
/// let mut labels = LayerLabels::<Flex>::new(&mesh);
/// let y = labels.enter("fc", x).matmul(w); // the rows of x gathered, labelled fc:forward
/// let y = labels.close(y);
/// let _ = y.sum().backward();
/// assert!(mesh.ledger_snapshot().by_phase("fc:forward").bytes > 0);
/// ```
pub struct LayerLabels<IB: Backend> {
    mesh: MeshDevice<IB::Device>,
    previous: Option<String>,
    /// Per layer, the parameters to sync as soon as the backward pass leaves the layer.
    ready: HashMap<String, Vec<ReadyParam<IB>>>,
    /// Into how many groups of rows batch normalisation takes its statistics (1: the batch's).
    stat_groups: usize,
}

impl<IB: Backend> LayerLabels<IB> {
    /// Labels on `mesh`, starting a new run of layers.
    pub fn new(mesh: &MeshDevice<IB::Device>) -> Self {
        Self { mesh: mesh.clone(), previous: None, ready: HashMap::new(), stat_groups: 1 }
    }

    /// These labels with batch normalisation taking its statistics in `groups` groups of rows
    /// (the ranks of a plan with [`crate::BatchStats::Local`]; 1: the whole batch's).
    pub fn with_batch_stat_groups(self, groups: usize) -> Self {
        Self { stat_groups: groups.max(1), ..self }
    }

    /// Into how many groups of rows batch normalisation takes its statistics.
    pub fn batch_stat_groups(&self) -> usize {
        self.stat_groups
    }

    /// Labels that also start each layer's gradient sums as soon as the backward pass leaves
    /// the layer (overlapped with the backward of the layers before it, as PyTorch DDP's
    /// buckets): the sync of every parameter of `module` (the module as stored: its parameters
    /// are the graph's leaves) held by a layer this run enters. A parameter whose gradient is
    /// not complete there (one computed through an op of its own, as a cast to a compute
    /// precision or a gather over the nodes) is left to the sync after the pass.
    pub fn syncing<M: Module<AH<IB>>>(mesh: &MeshDevice<IB::Device>, module: &M) -> Self {
        let mut found = ReadyParams::<IB> { path: Vec::new(), ready: HashMap::new() };
        module.visit(&mut found);
        Self { ready: found.ready, ..Self::new(mesh) }
    }

    /// Enters `layer` with its input `x`: the forward traffic from now on is the layer's, and
    /// the backward pass, when it reaches `x`, starts labelling the previous layer's backward
    /// traffic (and, with [`LayerLabels::syncing`], first starts the sums of `layer`'s
    /// gradients).
    pub fn enter<const D: usize>(&mut self, layer: &str, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        self.mesh.set_phase(Some(Phase::of(layer, Stage::Forward)));
        let ready = self.ready.remove(layer).unwrap_or_default();
        let previous = self.previous.take().map(|p| Phase::of(&p, Stage::Backward));
        let x = if ready.is_empty() && previous.is_none() { x } else { mark_and_sync(x, previous, ready) };
        self.previous = Some(layer.to_string());
        x
    }

    /// Ends a run of layers at `x` (e.g. a conv trunk's features): the backward pass, reaching
    /// `x`, labels the last layer entered; the next layer entered starts a fresh run.
    pub fn close<const D: usize>(&mut self, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        match self.previous.take() {
            Some(previous) => mark_backward_phase(x, Phase::of(&previous, Stage::Backward)),
            None => x,
        }
    }
}

/// Every parameter of a module that is a leaf of the graph, by layer, with its placements.
struct ReadyParams<IB: Backend> {
    path: Vec<String>,
    ready: HashMap<String, Vec<ReadyParam<IB>>>,
}

impl<IB: Backend> ModuleVisitor<AH<IB>> for ReadyParams<IB> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AH<IB>, D>>) {
        let tensor = param.val();
        if !tensor.is_require_grad() {
            return;
        }
        let path = self.path.join(".");
        let layer = layer_of(&path).to_string();
        let placements = tensor.placements();
        let ready =
            ReadyParam { tensor: tensor.into_primitive().tensor(), placements, phase: Phase::of(&layer, Stage::Sync) };
        self.ready.entry(layer).or_default().push(ready);
    }
}
