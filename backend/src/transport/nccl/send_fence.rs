//! CUDA's [`SendFence`]: what keeps a device-to-device transfer's source buffer intact until
//! NCCL has read it. Line numbers are of the crates pinned in Cargo.lock.
//!
//! CubeCL CUDA moves a tensor between GPUs with NCCL send and receive, each on its GPU's NCCL
//! stream (cubecl-runtime 0.10.0 `src/client.rs` 641-680, `to_client_tensor`; cubecl-cuda
//! 0.10.0 `src/compute/server.rs` 408 `send`, 475 `recv`):
//!
//! - the send makes the NCCL stream wait for the source's compute stream (server.rs 435,
//!   `Fence::new(stream).wait_async(self.comm_stream)`), so NCCL reads the finished piece;
//! - the receiver's compute stream waits for its NCCL stream (client.rs 671,
//!   `server_dst.sync_collective`), so the receiver reads the finished copy;
//! - nothing makes the source's compute stream wait for the send. Once the caller drops the
//!   source, its memory goes back to CubeCL's pool, and the next kernel on that GPU may write
//!   into it while NCCL still reads it.
//!
//! The fence is the receiver's step, taken on the source: `ComputeClient::sync_collective`
//! (client.rs 589) submits the server's `sync_collective` (server.rs 390-405,
//! `Fence::new(self.comm_stream).wait_async(stream)`), so the source's compute stream (this
//! thread's) waits for everything issued on its NCCL stream so far, the send included. It
//! does not block the host. The collectives issue it while still holding the source
//! ([`collectives::route`](crate::comm::collectives)), so the buffer cannot return to the pool before the
//! wait is in the stream.

use cubecl_cuda::{CudaDevice, CudaRuntime};

use crate::SendFence;

/// [`SendFence`] for meshes of CubeCL CUDA devices.
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaSendFence;

impl SendFence<CudaDevice> for CudaSendFence {
    fn after_send(&self, source: &CudaDevice) {
        <CudaRuntime as burn_cubecl::cubecl::Runtime>::client(source).sync_collective();
    }
}
