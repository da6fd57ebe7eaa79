//! Labelling a training step's communication by layer and phase, so the ledger reads like the
//! analytic plan: `conv3:forward`, `conv3:backward`, `conv3:sync`, `fc6:forward`, ...,
//! `loss:forward`, `loss:backward`.
//!
//! Forward traffic is labelled as each layer starts (a [`LayerHook`]); backward traffic by a
//! marker on each layer's input whose backward step relabels the ledger when the backward pass
//! reaches it; the gradient sync of every parameter is done explicitly, parameter by
//! parameter, by [`sync_gradients`] before the optimizer runs.

use burn::backend::Autodiff;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;

use owt_hybrid::{mark_backward_phase, Distributed, Hybrid, MeshDevice};
use owt_models::{DropoutKey, LayerHook};

type AH<IB> = Autodiff<Hybrid<IB>>;

/// Phase label of `layer` in `phase` ("forward", "backward" or "sync").
pub fn phase_label(layer: &str, phase: &str) -> String {
    format!("{layer}:{phase}")
}

/// Where `layer` and `phase` sort in a step: conv1..conv5, fc6..fc8, the loss, then anything
/// else; forward, backward, sync within a layer (how plans and predictions list phases).
pub fn label_order(layer: &str, phase: &str) -> (usize, usize) {
    let layers = ["conv1", "conv2", "conv3", "conv4", "conv5", "fc6", "fc7", "fc8", "loss"];
    let l = layers.iter().position(|x| *x == layer).unwrap_or(layers.len());
    let p = ["forward", "backward", "sync"].iter().position(|x| *x == phase).unwrap_or(3);
    (l, p)
}

/// The layer hook that labels a step's forward and backward traffic by layer.
pub struct LayerPhases<IB: Backend> {
    mesh: MeshDevice<IB::Device>,
    previous: Option<String>,
    dropout: Option<DropoutKey>,
}

impl<IB: Backend> LayerPhases<IB> {
    /// Labels on `mesh`, starting a new step.
    pub fn new(mesh: &MeshDevice<IB::Device>) -> Self {
        Self { mesh: mesh.clone(), previous: None, dropout: None }
    }

    /// The same hook keying the pass's dropout masks with `key`.
    pub fn with_dropout(self, key: DropoutKey) -> Self {
        Self { dropout: Some(key), ..self }
    }

    /// Enters `layer`: its forward traffic gets its label, and the backward pass, when it
    /// reaches `x`, starts labelling the previous layer's backward traffic.
    fn enter<const D: usize>(&mut self, layer: &str, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        self.mesh.set_phase(Some(&phase_label(layer, "forward")));
        let x = self.close(x);
        self.previous = Some(layer.to_string());
        x
    }

    /// Ends a run of layers at `x` (the conv trunk's features): the backward pass, reaching
    /// `x`, labels the last layer entered; the next layer entered starts a fresh run.
    pub fn close<const D: usize>(&mut self, x: Tensor<AH<IB>, D>) -> Tensor<AH<IB>, D> {
        match self.previous.take() {
            Some(previous) => mark_backward_phase(x, &phase_label(&previous, "backward")),
            None => x,
        }
    }

    /// Enters the loss computation with `logits`; the caller sets `loss:backward` before it
    /// calls `backward()`.
    pub fn enter_loss(&mut self, logits: Tensor<AH<IB>, 2>) -> Tensor<AH<IB>, 2> {
        self.enter("loss", logits)
    }
}

impl<IB: Backend> LayerHook<AH<IB>> for LayerPhases<IB> {
    fn maps(&mut self, layer: &str, x: Tensor<AH<IB>, 4>) -> Tensor<AH<IB>, 4> {
        self.enter(layer, x)
    }

    fn features(&mut self, layer: &str, h: Tensor<AH<IB>, 2>) -> Tensor<AH<IB>, 2> {
        self.enter(layer, h)
    }

    fn dropout_key(&mut self) -> Option<DropoutKey> {
        self.dropout
    }
}

/// The layer a parameter path belongs to (`conv3.weight` -> `conv3`).
pub fn layer_of(path: &str) -> &str {
    path.split('.').next().unwrap_or(path)
}

struct Syncer<'a, IB: Backend> {
    path: Vec<String>,
    grads: &'a mut GradientsParams,
    mesh: MeshDevice<IB::Device>,
}

impl<IB: Backend> ModuleVisitor<AH<IB>> for Syncer<'_, IB> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AH<IB>, D>>) {
        let Some(grad) = self.grads.remove::<Hybrid<IB>, D>(param.id) else { return };
        let path = self.path.join(".");
        self.mesh.set_phase(Some(&phase_label(layer_of(&path), "sync")));
        let grad = grad.distribute(param.val().placement());
        self.grads.register::<Hybrid<IB>, D>(param.id, grad);
    }
}

/// Brings every gradient to its parameter's placement (a Partial gradient of a replicated
/// parameter is all-reduced: the data-parallel gradient sync), labelled `layer:sync`, so the
/// optimizer step that follows moves nothing.
pub fn sync_gradients<IB: Backend, M: Module<AH<IB>>>(
    module: &M,
    grads: GradientsParams,
    mesh: &MeshDevice<IB::Device>,
) -> GradientsParams {
    let mut grads = grads;
    let mut syncer = Syncer { path: Vec::new(), grads: &mut grads, mesh: mesh.clone() };
    module.visit(&mut syncer);
    mesh.set_phase(None);
    grads
}
