//! A backend's own kernel for [`CounterDropout`](crate::CounterDropout), looked up by the
//! backend's type. The models stay generic over any `Backend` (no extra bound a user's backend
//! would have to meet); whoever composes a model with a backend that has such a kernel (owt's
//! CLI, for CubeCL's runtimes) registers it once, and every dropout on that backend then draws
//! and applies its mask in one pass instead of the generic formulation's many tensor ops. The
//! kernel must compute the same numbers: same generator, same mask, same scaling.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use burn::prelude::*;

/// One layer's mask at one step, for a `[rows, features]` tensor whose first row is global row
/// `first_row`: element (r, c) is kept when [`keeps_element`](crate::keeps_element)`(words,
/// first_row + r, c, p)`, that is when the top 24 bits of its hash are below `keep_below`; kept
/// elements are multiplied by `scale` (`1 / (1 - p)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DropoutMask {
    /// The layer's key words at this step ([`DropoutKey::words`](crate::DropoutKey::words)).
    pub words: [u32; 2],
    /// The global row of the tensor's first row.
    pub first_row: u32,
    /// Elements whose 24-bit draw is below this are kept.
    pub keep_below: u32,
    /// What the kept elements are multiplied by.
    pub scale: f64,
}

/// A kernel applying a [`DropoutMask`] to `x`, or giving `x` back where it cannot take that
/// tensor (then the generic formulation runs).
pub type DropoutKernel<B> = fn(Tensor<B, 2>, DropoutMask) -> Result<Tensor<B, 2>, Tensor<B, 2>>;

fn kernels() -> &'static RwLock<HashMap<TypeId, Box<dyn Any + Send + Sync>>> {
    static KERNELS: OnceLock<RwLock<HashMap<TypeId, Box<dyn Any + Send + Sync>>>> = OnceLock::new();
    KERNELS.get_or_init(Default::default)
}

/// Makes `kernel` the dropout of every [`CounterDropout`](crate::CounterDropout) on backend
/// `B` from now on (replacing one registered before).
pub fn register_dropout_kernel<B: Backend>(kernel: DropoutKernel<B>) {
    kernels().write().unwrap_or_else(|e| e.into_inner()).insert(TypeId::of::<B>(), Box::new(kernel));
}

/// The kernel registered for `B`, if any.
pub fn dropout_kernel<B: Backend>() -> Option<DropoutKernel<B>> {
    let kernels = kernels().read().unwrap_or_else(|e| e.into_inner());
    kernels.get(&TypeId::of::<B>()).and_then(|k| k.downcast_ref::<DropoutKernel<B>>()).copied()
}
