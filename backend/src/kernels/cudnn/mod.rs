//! cuDNN's convolutions for CubeCL's CUDA backend: forward, input gradient and weight
//! gradient, groups included, on CubeCL's own stream and buffers (queued through the vendored
//! cubecl-cuda's `run_foreign`, no host synchronisation per call), the algorithm of each
//! problem searched once and kept across runs ([`algorithm_cache`]), TF32 math by default and
//! strict f32 on request ([`Math`]), libcudnn loaded at run time where the machine has it.
//!
//! What needs no GPU is compiled everywhere and tested on any machine: the mapping of a
//! convolution to cuDNN's descriptors ([`problem`]) and the algorithm cache's file. The calls
//! into cuDNN are compiled with the `cuda` feature.

pub mod algorithm_cache;
#[cfg(feature = "cudnn")]
pub(crate) mod ffi;
pub mod problem;

pub use algorithm_cache::{AlgorithmCache, Choice, Identity};
pub use problem::{output_dims, ConvDtype, ConvOp, ConvProblem, Math, Tensor4, Unsupported};
