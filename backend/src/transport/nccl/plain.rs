//! The backend the NCCL all-reduces are written for.

/// The plain CubeCL CUDA backend (no fusion) that meshes of CUDA devices run on, and the one
/// the NCCL all-reduces are implemented for.
pub type CudaPlain = burn_cubecl::CubeBackend<cubecl_cuda::CudaRuntime, f32, i32, u8>;
