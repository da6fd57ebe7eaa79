//! Labelling a training step's communication by layer and phase, so the ledger reads like an
//! analytic plan: `conv3:forward`, `conv3:backward`, `conv3:sync`, `fc6:forward`, ...,
//! `loss:forward`, `loss:backward`.
//!
//! Forward traffic is labelled as each layer starts ([`LayerLabels::enter`]); backward traffic
//! by a marker on each layer's input whose backward step relabels the ledger when the backward
//! pass reaches it; the gradient sync of every parameter is done explicitly, parameter by
//! parameter, by [`sync_gradients`] before the optimizer runs. A layer is whatever the caller
//! names: the labels work for any Burn module.

use burn::backend::Autodiff;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;

use crate::api::Distributed;
use crate::backend::Hybrid;
use crate::comm::{Phase, Stage};
use crate::mesh::MeshDevice;
use crate::phase_marker::mark_backward_phase;

type AH<IB> = Autodiff<Hybrid<IB>>;

/// The three phases of a training step, in the order a step runs them.
pub const PHASES: [&str; 3] = ["forward", "backward", "sync"];

/// Phase label of `layer` in `phase` ("forward", "backward" or "sync").
pub fn phase_label(layer: &str, phase: &str) -> String {
    format!("{layer}:{phase}")
}

/// The layer and phase of a label made by [`phase_label`] (`"-"` as the phase of a label
/// without one).
pub fn split_label(label: &str) -> (&str, &str) {
    label.split_once(':').unwrap_or((label, "-"))
}

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
}

impl<IB: Backend> LayerLabels<IB> {
    /// Labels on `mesh`, starting a new run of layers.
    pub fn new(mesh: &MeshDevice<IB::Device>) -> Self {
        Self { mesh: mesh.clone(), previous: None }
    }

    /// Enters `layer` with its input `x`: the forward traffic from now on is the layer's, and
    /// the backward pass, when it reaches `x`, starts labelling the previous layer's backward
    /// traffic.
    pub fn enter<const D: usize>(&mut self, layer: &str, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        self.mesh.set_phase(Some(Phase::of(layer, Stage::Forward)));
        let x = self.close(x);
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

/// What [`map_gradients`] makes of one parameter's gradient.
pub(crate) trait GradientMap<IB: Backend> {
    /// `param`'s gradient `grad`, transformed.
    fn map<const D: usize>(
        &mut self,
        param: &Param<Tensor<AH<IB>, D>>,
        grad: Tensor<Hybrid<IB>, D>,
    ) -> Tensor<Hybrid<IB>, D>;
}

/// Walks a module's parameters with their paths, replacing each one's gradient by `map`'s.
struct GradientMapper<'a, IB: Backend, F> {
    path: Vec<String>,
    grads: &'a mut GradientsParams,
    mesh: &'a MeshDevice<IB::Device>,
    map: F,
}

impl<IB: Backend, F: GradientMap<IB>> ModuleVisitor<AH<IB>> for GradientMapper<'_, IB, F> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AH<IB>, D>>) {
        let Some(grad) = self.grads.remove::<Hybrid<IB>, D>(param.id) else { return };
        let path = self.path.join(".");
        self.mesh.set_phase(Some(Phase::of(layer_of(&path), Stage::Sync)));
        let grad = self.map.map(param, grad);
        self.grads.register::<Hybrid<IB>, D>(param.id, grad);
    }
}

/// Replaces every gradient of `module`'s parameters in `grads` by `map`'s, in module order,
/// each labelled `layer:sync` on `mesh` by the module that holds the parameter
/// ([`layer_of`]); the phase is cleared after. What every gradient sync is made of.
pub(crate) fn map_gradients<IB: Backend, M: Module<AH<IB>>>(
    module: &M,
    grads: &mut GradientsParams,
    mesh: &MeshDevice<IB::Device>,
    map: impl GradientMap<IB>,
) {
    module.visit(&mut GradientMapper { path: Vec::new(), grads, mesh, map });
    mesh.set_phase(None);
}

/// Each gradient brought to its parameter's placement along every mesh dimension (inside
/// each node first, then over the nodes).
struct ToParamPlacement;

impl<IB: Backend> GradientMap<IB> for ToParamPlacement {
    fn map<const D: usize>(
        &mut self,
        param: &Param<Tensor<AH<IB>, D>>,
        grad: Tensor<Hybrid<IB>, D>,
    ) -> Tensor<Hybrid<IB>, D> {
        grad.distribute_all(&param.val().placements())
    }
}

/// Brings every gradient to its parameter's placement (a Partial gradient of a replicated
/// parameter is all-reduced: the data-parallel gradient sync), labelled `layer:sync` by the
/// module that holds the parameter ([`layer_of`]), so the optimizer step that follows moves
/// nothing.
/// Without it an optimizer still computes the same update (the placement rules resolve the
/// pending sums where the update needs them), with its traffic labelled by the optimizer's ops.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::nn::LinearConfig;
/// use burn::optim::GradientsParams;
/// use burn::prelude::*;
/// use owt_hybrid::{sync_gradients, Distributed, Hybrid, MeshDevice, Placement};
///
/// type B = Autodiff<Hybrid<Flex>>;
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let layer = LinearConfig::new(4, 2).init::<B>(&mesh); // replicated: data parallel
/// let x = Tensor::<B, 2>::ones([6, 4], &mesh).distribute(Placement::Shard(0));
/// let grads = GradientsParams::from_grads(layer.forward(x).sum().backward(), &layer);
/// mesh.reset_ledger();
/// let grads = sync_gradients(&layer, grads, &mesh);
/// let weight = grads.get::<Hybrid<Flex>, 2>(layer.weight.id).unwrap();
/// assert_eq!(weight.placement(), Placement::Replicate);
/// // The weight's pending sum all-reduced on a ring, 2 (K - 1) x its 4 x 2 x 4 bytes; the bias
/// // gradient (a sum of the whole output gradient) is whole already.
/// let ledger = mesh.ledger_snapshot();
/// assert_eq!(ledger.by_phase("weight:sync").bytes, 2 * (2 - 1) * 8 * 4);
/// assert_eq!(ledger.by_phase("bias:sync").bytes, 0);
/// ```
pub fn sync_gradients<IB: Backend, M: Module<AH<IB>>>(
    module: &M,
    grads: GradientsParams,
    mesh: &MeshDevice<IB::Device>,
) -> GradientsParams {
    let mut grads = grads;
    map_gradients(module, &mut grads, mesh, ToParamPlacement);
    grads
}
