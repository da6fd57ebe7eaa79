//! Redistribution as an autodiff op: the forward pass moves a tensor to a placement, the
//! backward pass brings its gradient back to the placement the tensor had, which applies the
//! dual collective (Megatron's paired mappings, DTensor's differentiable `redistribute`). The
//! value is unchanged either way; only the layout moves, so the gradient's value is the
//! upstream gradient's and only its placement changes.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorPrimitive};

use crate::backend::Hybrid;
use crate::spec::placement::Placement;

#[derive(Debug)]
struct Redistribute {
    /// Where the gradient goes: the input's placement, or whole for a pending sum (every
    /// summand's gradient is the whole upstream gradient).
    back_to: Placement,
    /// Along which dimension: the mesh's own ranks (`None`), or outer dimension `j`.
    along: Option<usize>,
    /// What the backward pass's traffic is labelled, where not the phase of the moment.
    label: Option<crate::ledger::Phase>,
}

impl<B: Backend> Backward<Hybrid<B>, 1> for Redistribute {
    type State = ();

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [parent] = ops.parents;
        let grad = grads.consume::<Hybrid<B>>(&ops.node);
        let _label = self.label.map(|label| grad.mesh().phase(label));
        let grad = match self.along {
            None => crate::comm::collectives::redistribute(grad, self.back_to),
            Some(j) => crate::comm::along::redistribute_along(grad, j, self.back_to),
        };
        if let Some(parent) = parent {
            grads.register::<Hybrid<B>>(parent.id, grad);
        }
    }
}

/// `tensor` laid out as `placement`, differentiably (see the module docs).
pub(crate) fn redistribute<B: Backend, const D: usize>(
    tensor: Tensor<Autodiff<Hybrid<B>>, D>,
    placement: Placement,
) -> Tensor<Autodiff<Hybrid<B>>, D> {
    let t = tensor.into_primitive().tensor();
    let from = t.primitive.placement();
    let back_to = if from.is_partial() { Placement::Replicate } else { from };
    let out = Redistribute { back_to, along: None, label: None }
        .prepare::<NoCheckpointing>([t.node.clone()])
        .compute_bound()
        .stateless(crate::comm::collectives::redistribute(t.primitive, placement));
    Tensor::from_primitive(TensorPrimitive::Float(out))
}

/// `tensor` laid out as `placement` along outer dimension `j` of its mesh, differentiably:
/// the backward pass brings the gradient back to the placement the tensor had along that
/// dimension by the dual collective (Megatron's mappings across nodes: the FSDP-style gather
/// of a parameter's slices, whose gradient is reduce-scattered back to the slices).
pub(crate) fn redistribute_along<B: Backend, const D: usize>(
    tensor: Tensor<Autodiff<Hybrid<B>>, D>,
    j: usize,
    placement: Placement,
) -> Tensor<Autodiff<Hybrid<B>>, D> {
    redistribute_along_labelled(tensor, j, placement, None)
}

/// [`redistribute_along`] whose backward traffic is labelled `label` (a parameter's gather,
/// whose gradient's reduce-scatter is its layer's sync).
pub(crate) fn redistribute_along_labelled<B: Backend, const D: usize>(
    tensor: Tensor<Autodiff<Hybrid<B>>, D>,
    j: usize,
    placement: Placement,
    label: Option<crate::ledger::Phase>,
) -> Tensor<Autodiff<Hybrid<B>>, D> {
    let t = tensor.into_primitive().tensor();
    let from = t.primitive.outer[j];
    let back_to = if from.is_partial() { Placement::Replicate } else { from };
    let out = Redistribute { back_to, along: Some(j), label }
        .prepare::<NoCheckpointing>([t.node.clone()])
        .compute_bound()
        .stateless(crate::comm::along::redistribute_along(t.primitive, j, placement));
    Tensor::from_primitive(TensorPrimitive::Float(out))
}
