//! The training step's small ops as owt-hybrid's one-pass kernels on CubeCL's runtimes,
//! registered for the backends a job runs on (one device, fused or not, and a mesh's ranks):
//! counter-based dropout in one kernel per layer (`owt_hybrid::counter_dropout`, registered
//! with the models by `owt_models::register_dropout_kernel`), and the SGD step over every
//! parameter in a few launches (`owt_hybrid::sgd_momentum`, registered with the run's optimizer,
//! `train::run_sgd`). Flex keeps the tensor-op formulations; the masks are the same either way
//! and the SGD arithmetic is Burn's, in its order.

use burn::backend::Autodiff;
use burn::prelude::*;
use owt_hybrid::counter_dropout::{counter_dropout, CounterDropoutBackend, CounterMask};
use owt_hybrid::sgd_momentum::MultiTensorSgdBackend;
use owt_hybrid::Hybrid;
use owt_models::{register_dropout_kernel, DropoutMask};

use crate::train::run_sgd::register_grouped_sgd;

/// Registers the kernels for one device of `B` and for a mesh of `B`'s devices, unless
/// `OWT_STEP_KERNELS=off` (Burn's tensor ops instead: a comparison on a GPU, or a way round a
/// kernel that misbehaves on one).
pub fn register<B: CounterDropoutBackend + MultiTensorSgdBackend>() {
    if std::env::var("OWT_STEP_KERNELS").is_ok_and(|v| v == "off") {
        return;
    }
    // Dropout acts only where gradients are tracked: on the autodiff backends.
    register_dropout_kernel::<Autodiff<B>>(dropout::<Autodiff<B>>);
    register_dropout_kernel::<Autodiff<Hybrid<B>>>(dropout::<Autodiff<Hybrid<B>>>);
    // The optimizer steps the autodiff backend's inner tensors.
    register_grouped_sgd::<B>();
    register_grouped_sgd::<Hybrid<B>>();
}

fn dropout<B: CounterDropoutBackend>(x: Tensor<B, 2>, mask: DropoutMask) -> Result<Tensor<B, 2>, Tensor<B, 2>> {
    let DropoutMask { words, first_row, keep_below, scale } = mask;
    counter_dropout(x, CounterMask { words, first_row, first_col: 0, keep_below, scale })
}
