//! NCCL's all-reduce over every rank of a mesh that spans processes: one communicator of K
//! ranks (one per GPU of the whole job), joined by a unique id that process 0 makes and sends
//! the others over the process group (MPI), so gradient sums go GPU to GPU across processes
//! and nodes instead of through the host. CubeCL keeps its own NCCL ids private to one
//! process, so this calls NCCL through cudarc on CubeCL's device buffers.
//!
//! Only the all-reduce crosses processes this way (the gradient sums: the bulk of a
//! data-parallel step); the activity exchanges between processes stay host-staged over MPI
//! (`collectives::route`), as on every other backend.

use std::ffi::c_void;
use std::sync::Mutex;

use super::join::{shared_gpu, JoinRefusal};
use super::plain::CudaPlain as Plain;
use crate::{DeviceAllReduce, ProcessGroup};
use burn::tensor::DType;
use burn_cubecl::tensor::CubeTensor;
use cubecl_cuda::CudaRuntime;
use cudarc::driver::result as driver;
use cudarc::driver::sys as cuda;
use cudarc::nccl::result as nccl;
use cudarc::nccl::sys as nccl_sys;

/// The bytes of NCCL's unique id (`ncclUniqueId`).
const ID_BYTES: usize = 128;

/// One of this process's ranks in the job's communicator.
struct LocalComm {
    ctx: cuda::CUcontext,
    comm: nccl_sys::ncclComm_t,
    stream: cuda::CUstream,
}

/// NCCL's communicator over all K ranks of a spanning mesh, this process's ranks' handles.
pub struct NcclWorld {
    comms: Mutex<Vec<LocalComm>>,
    first_rank: usize,
}

// SAFETY: the raw CUDA and NCCL handles are used only under the mutex, by one thread at a
// time, with their context made current first; NCCL communicators and CUDA streams may be
// used from any thread that way.
unsafe impl Send for NcclWorld {}
unsafe impl Sync for NcclWorld {}

/// Where a GPU is: the host's name and its PCI domain, bus and device (what tells two GPUs
/// apart across processes whatever `CUDA_VISIBLE_DEVICES` each process was given).
fn gpu_identity(ordinal: usize) -> Result<String, JoinRefusal> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
    let failed = |e: driver::DriverError| JoinRefusal::Failed(format!("GPU {ordinal}: {e:?}"));
    driver::init().map_err(failed)?;
    let device = driver::device::get(ordinal as i32).map_err(failed)?;
    let attribute = |a: cuda::CUdevice_attribute| {
        // SAFETY: `device` came from `device::get`.
        unsafe { driver::device::get_attribute(device, a) }.map_err(failed)
    };
    let domain = attribute(cuda::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
    let bus = attribute(cuda::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
    let slot = attribute(cuda::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
    Ok(format!("{host}/{domain:04x}:{bus:02x}:{slot:02x}"))
}

/// Process 0's unique id on every process: made by NCCL there, sent over the group.
fn unique_id(group: &dyn ProcessGroup) -> Result<nccl_sys::ncclUniqueId, JoinRefusal> {
    let made = (group.rank() == 0).then(|| match nccl::get_uniqueid() {
        Ok(id) => id.internal.iter().map(|&c| c as u8).collect::<Vec<u8>>(),
        Err(_) => Vec::new(),
    });
    let bytes = group.broadcast(0, made).map_err(|e| JoinRefusal::Failed(e.to_string()))?;
    if bytes.len() != ID_BYTES {
        return Err(JoinRefusal::Failed(
            "process 0 could not make NCCL's unique id (is libnccl.so loadable there?)".into(),
        ));
    }
    let mut internal = [0 as std::ffi::c_char; ID_BYTES];
    for (c, b) in internal.iter_mut().zip(bytes) {
        *c = b as std::ffi::c_char;
    }
    Ok(nccl_sys::ncclUniqueId { internal })
}

impl NcclWorld {
    /// Joins the job's processes in one communicator of `world` ranks, this process's ranks
    /// being `first_rank..first_rank + gpus.len()` on GPUs `gpus` (ordinals of this process).
    /// A collective: every process of `group` calls it. Refused, on every process alike, where
    /// two ranks share a GPU.
    pub fn join(
        group: &dyn ProcessGroup,
        first_rank: usize,
        world: usize,
        gpus: &[usize],
    ) -> Result<NcclWorld, JoinRefusal> {
        let mine = gpus.iter().map(|&g| gpu_identity(g)).collect::<Result<Vec<_>, _>>();
        // Every process takes part in the exchange even when its own GPUs failed, so none waits.
        let line = match &mine {
            Ok(ids) => ids.join("\n"),
            Err(_) => String::new(),
        };
        let every = group.all_gather(line.into_bytes()).map_err(|e| JoinRefusal::Failed(e.to_string()))?;
        mine?;
        let identities: Vec<String> = every
            .iter()
            .flat_map(|b| String::from_utf8_lossy(b).lines().map(str::to_string).collect::<Vec<_>>())
            .collect();
        if identities.len() != world {
            return Err(JoinRefusal::Failed(format!(
                "the processes named {} GPUs for a mesh of {world} ranks",
                identities.len()
            )));
        }
        if let Some(refusal) = shared_gpu(&identities) {
            return Err(refusal);
        }
        let id = unique_id(group)?;
        let failed = |what: &str, e: String| JoinRefusal::Failed(format!("{what}: {e}"));
        let mut comms = Vec::with_capacity(gpus.len());
        for &g in gpus {
            let device = driver::device::get(g as i32).map_err(|e| failed("cuDeviceGet", format!("{e:?}")))?;
            // SAFETY: `device` came from `device::get`; the primary context is the one CubeCL
            // uses, so its buffers' addresses are valid in it.
            let ctx = unsafe { driver::primary_ctx::retain(device) }
                .map_err(|e| failed("cuDevicePrimaryCtxRetain", format!("{e:?}")))?;
            // SAFETY: `ctx` is a live primary context.
            unsafe { driver::ctx::set_current(ctx) }.map_err(|e| failed("cuCtxSetCurrent", format!("{e:?}")))?;
            let stream = driver::stream::create(driver::stream::StreamKind::NonBlocking)
                .map_err(|e| failed("cuStreamCreate", format!("{e:?}")))?;
            comms.push(LocalComm { ctx, comm: std::ptr::null_mut(), stream });
        }
        // One thread initialises all of this process's ranks: NCCL wants them in one group.
        nccl::group_start().map_err(|e| failed("ncclGroupStart", format!("{e:?}")))?;
        let mut init = Ok(());
        for (i, local) in comms.iter_mut().enumerate() {
            // SAFETY: the context is live; `local.comm` is written by NCCL.
            let result = unsafe {
                driver::ctx::set_current(local.ctx).map_err(|e| format!("{e:?}")).and_then(|_| {
                    nccl::comm_init_rank(&mut local.comm, world as i32, id, (first_rank + i) as i32)
                        .map(|_| ())
                        .map_err(|e| format!("{e:?}"))
                })
            };
            if let Err(e) = result {
                init = Err(failed(&format!("ncclCommInitRank of rank {}", first_rank + i), e));
                break;
            }
        }
        nccl::group_end().map_err(|e| failed("ncclGroupEnd", format!("{e:?}")))?;
        init?;
        Ok(NcclWorld { comms: Mutex::new(comms), first_rank })
    }
}

/// NCCL's element type for a float tensor of `dtype`.
fn nccl_type(dtype: DType) -> nccl_sys::ncclDataType_t {
    match dtype {
        DType::F64 => nccl_sys::ncclDataType_t::ncclFloat64,
        DType::F16 => nccl_sys::ncclDataType_t::ncclFloat16,
        DType::BF16 => nccl_sys::ncclDataType_t::ncclBfloat16,
        _ => nccl_sys::ncclDataType_t::ncclFloat32,
    }
}

impl DeviceAllReduce<Plain> for NcclWorld {
    fn all_reduce_sum(&self, pieces: Vec<CubeTensor<CudaRuntime>>) -> Vec<CubeTensor<CudaRuntime>> {
        let comms = self.comms.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(pieces.len(), comms.len(), "NCCL world: one piece per rank of this process");
        // Contiguous copies that NCCL sums in place, counted from their buffers' size
        // ([`buffer`](super::buffer)), each finished on its GPU before NCCL (on its own stream) reads it.
        let buffers = super::buffer::nccl_buffers(pieces);
        let count = buffers[0].count;
        assert!(
            buffers.iter().all(|b| b.count == count),
            "NCCL world: the ranks' pieces differ in size ({:?} elements)",
            buffers.iter().map(|b| b.count).collect::<Vec<_>>()
        );
        let sums: Vec<CubeTensor<CudaRuntime>> = buffers.into_iter().map(|b| b.tensor).collect();
        for sum in &sums {
            cubecl_common::future::block_on(sum.client.sync())
                .unwrap_or_else(|e| panic!("Hybrid: NCCL world: the GPU failed before the all-reduce: {e:?}"));
        }
        let resources: Vec<_> = sums
            .iter()
            .map(|s| {
                s.client
                    .get_resource(s.handle.clone())
                    .unwrap_or_else(|e| panic!("Hybrid: NCCL world: no buffer for the all-reduce: {e:?}"))
            })
            .collect();
        let dtype = nccl_type(sums[0].dtype);
        let check = |what: &str, r: Result<(), String>| {
            if let Err(e) = r {
                panic!("Hybrid: NCCL world: {what} failed on rank {}: {e}", self.first_rank);
            }
        };
        check("ncclGroupStart", nccl::group_start().map(|_| ()).map_err(|e| format!("{e:?}")));
        for (local, resource) in comms.iter().zip(&resources) {
            let ptr = resource.resource().ptr as *mut c_void;
            // SAFETY: `ptr` is the live device buffer of `count` elements of `dtype` in this
            // context (held by `resource` until after the streams are synchronised); the
            // communicator and stream are this rank's.
            let result = unsafe {
                driver::ctx::set_current(local.ctx).map_err(|e| format!("{e:?}")).and_then(|_| {
                    nccl::all_reduce(
                        ptr as *const c_void,
                        ptr,
                        count,
                        dtype,
                        nccl_sys::ncclRedOp_t::ncclSum,
                        local.comm,
                        local.stream as nccl_sys::cudaStream_t,
                    )
                    .map(|_| ())
                    .map_err(|e| format!("{e:?}"))
                })
            };
            check("ncclAllReduce", result);
        }
        check("ncclGroupEnd", nccl::group_end().map(|_| ()).map_err(|e| format!("{e:?}")));
        for local in comms.iter() {
            // SAFETY: the context and stream are live.
            let result = unsafe {
                driver::ctx::set_current(local.ctx)
                    .and_then(|_| driver::stream::synchronize(local.stream))
                    .map_err(|e| format!("{e:?}"))
            };
            check("cuStreamSynchronize", result);
        }
        drop(resources);
        sums
    }

    fn spans_processes(&self) -> bool {
        true
    }
}

impl Drop for NcclWorld {
    fn drop(&mut self) {
        let comms = self.comms.get_mut().unwrap_or_else(|e| e.into_inner());
        for local in comms.drain(..) {
            // SAFETY: each handle is live and used by nobody else any more.
            unsafe {
                let _ = driver::ctx::set_current(local.ctx);
                let _ = nccl::comm_destroy(local.comm);
                let _ = driver::stream::destroy(local.stream);
            }
        }
    }
}
