//! Counter-based dropout as an autodiff op: the backward pass applies the same mask to the
//! gradient (the mask is a function of its key and the element's place, drawn again rather
//! than stored), which is what the tensor-op formulation's `mask_fill` and `mul_scalar`
//! backward passes compute, bit for bit.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

use crate::kernels::counter_dropout::{CounterDropoutBackend, CounterMask};

#[derive(Debug)]
struct CounterDropoutBackward;

impl<B: CounterDropoutBackend> Backward<B, 1> for CounterDropoutBackward {
    type State = CounterMask;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [parent] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        if let Some(parent) = parent {
            grads.register::<B>(parent.id, B::counter_dropout(grad, ops.state));
        }
    }
}

impl<B: CounterDropoutBackend, C: CheckpointStrategy> CounterDropoutBackend for Autodiff<B, C> {
    fn counter_dropout_takes(x: &FloatTensor<Self>) -> bool {
        B::counter_dropout_takes(&x.primitive)
    }

    fn counter_dropout(x: FloatTensor<Self>, mask: CounterMask) -> FloatTensor<Self> {
        match CounterDropoutBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(mask, B::counter_dropout(x.primitive, mask)),
            OpsKind::UnTracked(prep) => prep.finish(B::counter_dropout(x.primitive, mask)),
        }
    }
}
