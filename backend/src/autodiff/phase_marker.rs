//! Backward-pass phase labels: an identity op on `Autodiff<Hybrid<B>>` tensors whose backward
//! step relabels the mesh's ledger. Placed on a layer's output, its backward step runs just
//! before that layer's backward ops (Burn runs backward steps by depth, deepest first, and
//! every op of the layer is deeper than its input), so the traffic of each layer's backward
//! pass is recorded under the layer's own label. Placed on a layer's input, it runs once the
//! layer's backward is done: its parameters' gradients are then final, and the marker can
//! start their sums (the sync overlapped with the backward pass, as DDP's buckets).
//!
//! The marker also hands the gradient back in its tensor's own layout: a gradient that
//! arrives as a pending sum (the input gradient of a model-parallel layer) is reduce-scattered
//! there, so that traffic belongs to the layer that caused it rather than to whichever earlier
//! op would have needed the whole value.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorPrimitive};

use crate::backend::Hybrid;
use crate::comm::along::redistribute_along;
use crate::comm::collectives::redistribute;
use crate::ledger::Phase;
use crate::spec::placement::Placement;

/// A parameter whose gradient is final when a marker's backward step runs (the layer that
/// uses it has run its backward), and what its sync does there: its gradient brought to
/// `placements` (one per mesh dimension, outer first) under `phase` (`layer:sync`).
#[derive(Debug, Clone)]
pub(crate) struct ReadyParam<B: Backend> {
    /// The parameter (a leaf of the graph: its gradient is registered under its node).
    pub tensor: burn::tensor::ops::FloatTensor<Autodiff<Hybrid<B>>>,
    /// Its placement along every mesh dimension, outer first.
    pub placements: Vec<Placement>,
    /// The label of its sync.
    pub phase: Phase,
}

#[derive(Debug)]
struct PhaseMark<B: Backend> {
    /// The label from this step on; `None` keeps the one in force.
    phase: Option<Phase>,
    placement: Placement,
    /// Parameters to sync when the step runs.
    ready: Vec<ReadyParam<B>>,
}

impl<B: Backend> Backward<Hybrid<B>, 1> for PhaseMark<B> {
    type State = ();

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [parent] = ops.parents;
        let grad = redistribute(grads.consume::<Hybrid<B>>(&ops.node), self.placement);
        let mesh = grad.mesh().clone();
        let current = mesh.current_phase();
        // The layer this tensor enters has run its backward: its parameters' gradients are
        // complete, and each one's sum starts now rather than after the whole pass.
        for p in self.ready {
            if let Some(g) = grads.remove::<Hybrid<B>>(&p.tensor) {
                mesh.set_phase(Some(p.phase));
                let (inner, outer) = p.placements.split_last().expect("a placement per mesh dimension");
                let mut g = redistribute(g, *inner);
                for (j, placement) in outer.iter().enumerate().rev() {
                    g = redistribute_along(g, j, *placement);
                }
                grads.register::<Hybrid<B>>(p.tensor.node.id, g);
            }
        }
        mesh.set_phase(self.phase.or(current));
        if let Some(parent) = parent {
            grads.register::<Hybrid<B>>(parent.id, grad);
        }
    }
}

/// `tensor` unchanged; when the backward pass reaches it, its gradient is brought to
/// `tensor`'s placement (under the phase then current) and traffic from then on is recorded under
/// `backward_phase` (via [`crate::MeshDevice::set_phase`]) until the next marker. Forward
/// traffic is labelled by the caller with `set_phase` or a phase guard as usual.
pub fn mark_backward_phase<B: Backend, const D: usize>(
    tensor: Tensor<Autodiff<Hybrid<B>>, D>,
    backward_phase: impl Into<Phase>,
) -> Tensor<Autodiff<Hybrid<B>>, D> {
    mark_and_sync(tensor, Some(backward_phase.into()), Vec::new())
}

/// [`mark_backward_phase`] that also syncs the gradients of `ready` when the backward pass
/// reaches `tensor` (each under its own `layer:sync` label, after the redistribution of
/// `tensor`'s gradient and before `backward_phase`, or the phase in force when `None`,
/// takes over): the gradient sums overlapped with the rest of the backward pass.
pub(crate) fn mark_and_sync<B: Backend, const D: usize>(
    tensor: Tensor<Autodiff<Hybrid<B>>, D>,
    phase: Option<Phase>,
    ready: Vec<ReadyParam<B>>,
) -> Tensor<Autodiff<Hybrid<B>>, D> {
    let t = tensor.into_primitive().tensor();
    let placement = t.primitive.placement();
    let out = PhaseMark { phase, placement, ready }
        .prepare::<NoCheckpointing>([t.node.clone()])
        .compute_bound()
        .stateless(t.primitive);
    Tensor::from_primitive(TensorPrimitive::Float(out))
}
