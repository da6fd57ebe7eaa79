//! Backward-pass phase labels: an identity op on `Autodiff<Hybrid<B>>` tensors whose backward
//! step relabels the mesh's ledger. Placed on a layer's output, its backward step runs just
//! before that layer's backward ops (Burn runs backward steps in reverse creation order), so
//! the traffic of each layer's backward pass is recorded under the layer's own label.
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
use crate::comm::collectives::redistribute;
use crate::comm::Phase;
use crate::tensor::placement::Placement;

#[derive(Debug)]
struct PhaseMark {
    phase: Phase,
    placement: Placement,
}

impl<B: Backend> Backward<Hybrid<B>, 1> for PhaseMark {
    type State = ();

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [parent] = ops.parents;
        let grad = redistribute(grads.consume::<Hybrid<B>>(&ops.node), self.placement);
        grad.mesh().set_phase(Some(self.phase));
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
    let t = tensor.into_primitive().tensor();
    let placement = t.primitive.placement();
    let out = PhaseMark { phase: backward_phase.into(), placement }
        .prepare::<NoCheckpointing>([t.node.clone()])
        .compute_bound()
        .stateless(t.primitive);
    Tensor::from_primitive(TensorPrimitive::Float(out))
}
