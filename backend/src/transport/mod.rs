//! How pieces travel between ranks on distinct devices, decided once per mesh from what the
//! inner runtime can do ([`Transport::choose`]): CubeCL's CUDA runtime moves tensors between
//! GPUs itself (NCCL send/recv) and can all-reduce them (NCCL all-reduce); its wgpu runtime
//! cannot (its server-to-server `send` is unimplemented), so a wgpu mesh stages through host
//! memory. Ranks on one device (virtual ranks) never transfer at all.
//!
//! Also what a transfer is made of below the collectives: the processes a mesh spans and their
//! one all-to-all of bytes ([`process_group`]), the format of what crosses them (`wire`), and
//! NCCL on CUDA devices ([`nccl`]).

pub mod nccl;
pub mod process_group;
pub(crate) mod wire;

use burn::tensor::backend::Backend;

/// The path a piece takes between two ranks whose devices differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Transport {
    /// Read back to host memory, then uploaded to the other device: works on every backend.
    #[default]
    HostStaged,
    /// The inner backend's own device-to-device move (`to_device`): NCCL point-to-point on
    /// CubeCL CUDA, never through the host.
    DeviceToDevice,
}

/// What an inner runtime can do between its own devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RuntimeCapabilities {
    /// Its `to_device` moves data between two of its devices directly (CubeCL's
    /// `ServerCommunication::SERVER_COMM_ENABLED`).
    pub device_to_device: bool,
    /// It can all-reduce tensors across its devices itself (NCCL on CUDA).
    pub device_all_reduce: bool,
}

impl Transport {
    /// The transport of a mesh over `devices` on a runtime with `caps`: device to device
    /// where the runtime can and at least two ranks sit on distinct devices; host staging
    /// otherwise (which virtual ranks never use: they share their device's memory).
    pub fn choose<D: PartialEq>(caps: RuntimeCapabilities, devices: &[D]) -> Transport {
        let distinct = devices.iter().any(|d| d != &devices[0]);
        if caps.device_to_device && distinct {
            Transport::DeviceToDevice
        } else {
            Transport::HostStaged
        }
    }

    /// Whether a mesh over `devices` on a runtime with `caps` all-reduces on the devices.
    pub fn device_all_reduce<D: PartialEq>(caps: RuntimeCapabilities, devices: &[D]) -> bool {
        caps.device_all_reduce && Transport::choose(caps, devices) == Transport::DeviceToDevice
    }
}

/// An all-reduce (sum) that the inner backend runs across the ranks' devices itself, such as
/// NCCL's on CUDA. Installed on a mesh with [`crate::MeshDevice::set_device_all_reduce`]; the
/// collectives use it for float tensors with at least one element per rank, and record the
/// same bytes as their own ring (NCCL's ring moves the same volume), those that cross
/// processes apart as their ring's would.
pub trait DeviceAllReduce<B: Backend>: Send + Sync + 'static {
    /// The sum over every rank of the mesh of `pieces` (one per rank of this process, in rank
    /// order, same shape), on each of them.
    fn all_reduce_sum(&self, pieces: Vec<B::FloatTensorPrimitive>) -> Vec<B::FloatTensorPrimitive>;

    /// Whether it sums over the ranks of every process of a mesh that spans processes (a
    /// communicator over all the mesh's ranks, such as NCCL's joined by a unique id sent over
    /// MPI). One that does not is used only by meshes inside one process; a spanning mesh
    /// then sums by its own host-staged ring.
    fn spans_processes(&self) -> bool {
        false
    }
}

/// What keeps the source of a device-to-device transfer intact until the transfer is done,
/// where the inner runtime does not. CubeCL CUDA's send (cubecl-cuda 0.10.0 `server.rs`,
/// `send`) makes its NCCL stream wait for the source's compute stream, but nothing makes the
/// compute stream wait for the send: only the receiver calls `sync_collective`
/// (cubecl-runtime 0.10.0 `client.rs`, `to_client_tensor`). A source dropped after the call
/// returns its memory to the pool, and the next kernel on that device may overwrite it while
/// NCCL still reads it. Installed on a mesh with [`crate::MeshDevice::set_send_fence`]; the
/// collectives call it after every transfer between distinct devices, still holding the
/// source, before anything else is issued on the source's device.
pub trait SendFence<D>: Send + Sync + 'static {
    /// Makes all later work on `source` (this thread's queue of it) wait for the transfers
    /// started from it so far. Must not block the host.
    fn after_send(&self, source: &D);
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUDA_LIKE: RuntimeCapabilities = RuntimeCapabilities { device_to_device: true, device_all_reduce: true };
    const WGPU_LIKE: RuntimeCapabilities = RuntimeCapabilities { device_to_device: false, device_all_reduce: false };

    #[test]
    fn distinct_devices_use_the_runtimes_own_path_when_it_has_one() {
        assert_eq!(Transport::choose(CUDA_LIKE, &[0, 1]), Transport::DeviceToDevice);
        assert!(Transport::device_all_reduce(CUDA_LIKE, &[0, 1, 2]));
        assert_eq!(Transport::choose(WGPU_LIKE, &[0, 1]), Transport::HostStaged);
        assert!(!Transport::device_all_reduce(WGPU_LIKE, &[0, 1]));
    }

    #[test]
    fn virtual_ranks_never_need_a_transfer_path() {
        assert_eq!(Transport::choose(CUDA_LIKE, &[0, 0, 0]), Transport::HostStaged);
        assert!(!Transport::device_all_reduce(CUDA_LIKE, &[3, 3]));
        assert_eq!(Transport::choose(CUDA_LIKE, &[7]), Transport::HostStaged);
    }
}
