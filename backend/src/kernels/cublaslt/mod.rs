//! cuBLASLt's matmuls for CubeCL's CUDA backend (the FC layers: a Linear's forward and both
//! of its gradients, on one device and on each rank's column shard), on CubeCL's own stream and
//! buffers, TF32 or strict f32 under the same switch as the convolutions
//! ([`crate::kernels::cudnn::Math`]), libcublasLt loaded at run time where the machine has it.
//!
//! The mapping of a Burn matmul to cuBLASLt's column-major layouts ([`layout`]) is compiled
//! everywhere and tested against a host GEMM; the calls are compiled with the `cuda` feature.

#[cfg(feature = "cudnn")]
pub(crate) mod ffi;
pub mod layout;

pub use layout::{gemm, Gemm, Matrix};
