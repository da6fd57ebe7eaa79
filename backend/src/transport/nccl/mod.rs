//! NCCL on CubeCL CUDA devices, for any Burn program whose mesh's ranks sit on distinct GPUs:
//! the all-reduce inside one process (`NcclAllReduce`, CubeCL's own), one communicator over
//! the GPUs of every process of a job (`NcclWorld`, joined over a [`ProcessGroup`]), the fence
//! that keeps a sent buffer intact until NCCL has read it (`CudaSendFence`), and the
//! contiguous buffers both all-reduces sum in place (`buffer`, also under the `cubecl` feature
//! alone). These are compiled with the `cuda` feature. Why a job's processes may not
//! join one communicator ([`JoinRefusal`]) is decided without a GPU and compiled everywhere.
//!
//! A mesh of CUDA devices takes them through [`MeshDevice::set_device_all_reduce`] and
//! [`MeshDevice::set_send_fence`] (the `owt` CLI does so in `src/runtime/backends.rs`).
//!
//! [`ProcessGroup`]: crate::ProcessGroup
//! [`MeshDevice::set_device_all_reduce`]: crate::MeshDevice::set_device_all_reduce
//! [`MeshDevice::set_send_fence`]: crate::MeshDevice::set_send_fence

#[cfg(feature = "cuda")]
mod all_reduce;
#[cfg(feature = "cubecl")]
pub mod buffer;
mod join;
#[cfg(feature = "cuda")]
mod plain;
#[cfg(feature = "cuda")]
mod send_fence;
#[cfg(feature = "cuda")]
mod world;

#[cfg(feature = "cuda")]
pub use all_reduce::NcclAllReduce;
pub use join::{shared_gpu, JoinRefusal};
#[cfg(feature = "cuda")]
pub use plain::CudaPlain;
#[cfg(feature = "cuda")]
pub use send_fence::CudaSendFence;
#[cfg(feature = "cuda")]
pub use world::NcclWorld;
