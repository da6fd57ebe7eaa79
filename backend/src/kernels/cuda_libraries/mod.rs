//! Which kernels run a CUDA device's convolutions and matmuls: cuDNN's and cuBLASLt's where
//! the machine has them and the user lets them ([`KernelChoice`]), CubeCL's otherwise, decided
//! once at the start of a run and said in one line ([`Installed::line`]); and how many calls
//! each took ([`Usage`], what `owt bench --json` reports).
//!
//! The choice reaches every way a convolution or matmul runs on CubeCL's CUDA backend (one
//! device, fused or not, and each rank of a mesh) through the hook of the vendored
//! burn-cubecl (`burn_cubecl::kernel::external`), registered by `install` (the `cudnn` feature).

mod choice;
mod decisions;
#[cfg(feature = "cudnn")]
mod install;
mod usage;

pub use super::cudnn::Math;
pub use choice::{ConvKernels, Installed, KernelChoice, MatmulKernels, Runner};
pub use decisions::{Decisions, Failure, LibraryCalls, NothingRemembered, Remembered, Reporter, Searched};
#[cfg(feature = "cudnn")]
pub use install::{declines, install, not_strict};
pub use usage::Usage;
