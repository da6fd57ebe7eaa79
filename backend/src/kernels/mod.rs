//! owt's own formulations of ops a backend runs slowly (convolution gradients, max pooling),
//! built from any backend's tensor ops, and which backend gets them: chosen by the backend's
//! type, by measurement (Flex 0.21 takes its convolution gradients from burn-backend's generic
//! formulations and pools with a scalar loop; CubeCL has kernels of its own for both). And the
//! vendor libraries CUDA's convolutions and matmuls go to where a machine has them (cuDNN,
//! cuBLASLt: [`cuda_libraries`]). And one-pass kernels for a training step's small ops on
//! CubeCL's runtimes: counter-based dropout ([`counter_dropout`]) and the SGD step over many
//! parameters ([`sgd_momentum`]).

pub mod conv_grad;
pub mod counter_dropout;
pub mod cublaslt;
pub mod cuda_libraries;
pub mod cudnn;
pub mod libraries;
pub mod max_pool;
pub mod sgd_momentum;

use std::any::TypeId;

use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::Backend;

use crate::backend::Hybrid;

/// Whether `B` computes with Flex: Flex itself (Burn implements `Backend` for `Flex<f32, i32>`
/// only, so this is every Flex) or Flex inside the wrappers owt composes it with (`Hybrid`,
/// `Autodiff`, both). Any other backend, and a user's own wrapper around Flex, is not.
pub fn computes_on_flex<B: Backend>() -> bool {
    let b = TypeId::of::<B>();
    [
        TypeId::of::<Flex>(),
        TypeId::of::<Hybrid<Flex>>(),
        TypeId::of::<Autodiff<Flex>>(),
        TypeId::of::<Autodiff<Hybrid<Flex>>>(),
    ]
    .contains(&b)
}
