//! Where a job runs: the inner backend chosen at run time (`backend_kind`) and the meshes
//! built over it (`backends`), what CUDA needs before it starts (`cuda_preflight`), who runs CUDA's
//! convolutions and matmuls (`cuda_kernels`: cuDNN, cuBLASLt or CubeCL), the step's small ops
//! (dropout, SGD) in one-pass kernels on CubeCL's runtimes (`step_kernels`), CubeCL's caches in one
//! place (`kernel_cache`), and this process among the processes of a job (`processes`).

pub mod backend_kind;
pub mod backends;
pub mod cuda_kernels;
pub mod cuda_preflight;
pub mod kernel_cache;
// owt-hybrid's NCCL buffers against CubeCL's CUDA allocator, on a machine without a GPU.
#[cfg(all(test, feature = "wgpu"))]
mod nccl_buffers_check;
pub mod processes;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub mod step_kernels;
