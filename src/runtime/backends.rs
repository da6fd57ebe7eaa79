//! Choosing the inner backend at run time (`--backend flex|wgpu|cuda`), with clear errors when
//! one is not compiled in or cannot start, and building meshes over it: which devices the
//! ranks get and how pieces travel between them (decided by the runtime's capabilities in
//! [`mesh_over`]).

use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::{AutodiffBackend, Backend};
use owt_hybrid::{Hybrid, MeshDevice, RuntimeCapabilities, Transport};

use crate::error::OwtError;
pub use crate::runtime::backend_kind::BackendKind;
use crate::runtime::processes::Processes;

/// Work that runs on whichever autodiff backend the user picked.
pub trait BackendJob {
    /// What the work returns.
    type Output;
    /// Runs the work on backend `B`, device `device`.
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<Self::Output, OwtError>;
}

/// Work that runs on a mesh of ranks of whichever inner backend the user picked.
pub trait MeshJob {
    /// What the work returns.
    type Output;
    /// Runs the work on `mesh`, whose ranks are devices of inner backend `IB`.
    fn run<IB: Backend>(self, mesh: MeshDevice<IB::Device>) -> Result<Self::Output, OwtError>;
}

/// How many ranks a mesh has on this process, whether they share one device, and the
/// processes of the job (the mesh spans them all: K = P x `ranks`).
#[derive(Debug, Clone)]
pub struct MeshRequest {
    /// Ranks on this process (L; the mesh's K when the job is one process).
    pub ranks: usize,
    /// Every rank on the first device (always so on Flex): L virtual ranks of one GPU.
    pub virtual_ranks: bool,
    /// The job's processes.
    pub processes: Processes,
    /// Whether the mesh spans the processes (one mesh of P x L ranks); a 2-D mesh across
    /// processes has a mesh of its own on each (one node per process, the nodes joined by
    /// the process group instead).
    pub spans: bool,
}

impl MeshRequest {
    /// `ranks` ranks in a job of one process.
    pub fn local(ranks: usize, virtual_ranks: bool) -> Self {
        Self { ranks, virtual_ranks, processes: Processes::solo(), spans: true }
    }

    /// The processes the mesh spans: the job's, or this one alone where it does not span.
    pub fn spanned(&self) -> Processes {
        if self.spans {
            self.processes.clone()
        } else {
            Processes::solo()
        }
    }

    /// Ranks of the whole mesh (K = P x L).
    pub fn mesh_ranks(&self) -> usize {
        self.ranks * self.processes.count()
    }
}

/// The mesh over `devices` of a runtime with `caps`: pieces go device to device where the
/// runtime can move them itself, else through the host (the one place this is decided). In a
/// job of several processes, `devices` are this process's ranks of one mesh spanning them.
pub fn mesh_over<D: burn::tensor::backend::DeviceOps>(
    caps: RuntimeCapabilities,
    devices: Vec<D>,
    processes: &Processes,
) -> Result<MeshDevice<D>, OwtError> {
    let transport = Transport::choose(caps, &devices);
    if processes.count() == 1 {
        return Ok(MeshDevice::with_transport(devices, transport));
    }
    MeshDevice::spanning(devices, transport, processes.group()).map_err(|e| OwtError::input(e.to_string()))
}

/// Runs `job` on a mesh of `request.ranks` ranks of `kind`: with Flex, virtual ranks on the
/// CPU; with wgpu, the default adapter and then the CPU adapter (two distinct devices where
/// the machine has both; further ranks share the default adapter); with CUDA, GPU `i` for
/// rank `i`. `virtual_ranks` puts every rank on the first device. Meshes use the inner
/// backends without kernel fusion: burn-fusion 0.21 loses tensor handles when one program's
/// tensors live on two devices.
pub fn run_on_mesh<J: MeshJob>(kind: BackendKind, request: MeshRequest, job: J) -> Result<J::Output, OwtError> {
    if request.ranks == 0 {
        return Err(OwtError::input("--devices must be at least 1, got 0"));
    }
    match kind {
        BackendKind::Flex => {
            let cpu = vec![Default::default(); request.ranks];
            job.run::<Flex>(mesh_over(RuntimeCapabilities::default(), cpu, &request.spanned())?)
        }
        BackendKind::Wgpu => mesh_wgpu(request, job),
        BackendKind::Cuda => mesh_cuda(request, job),
    }
}

/// Whether single-device runs on `kind` can fuse kernels in this build: Burn's kernel-fusing
/// backend is compiled in only with the `fusion` feature (on with `cuda`), so a build for the
/// tests does not compile a second GPU backend it never runs.
pub fn fusion_built(kind: BackendKind) -> bool {
    match kind {
        BackendKind::Flex => false,
        BackendKind::Wgpu => cfg!(all(feature = "wgpu", feature = "fusion")),
        BackendKind::Cuda => cfg!(all(feature = "cuda", feature = "fusion")),
    }
}

/// The backend of single-device runs on the CPU: Flex under owt's wrapper with one rank, so its
/// convolutions' gradients come from the formulations `owt_hybrid::conv_grad` chooses for Flex
/// (faster than Flex's own; benches/README.md), as on a mesh.
pub type SingleFlex = Autodiff<Hybrid<Flex>>;

/// Runs `job` on `kind`, or explains why that backend cannot be used here. `fusion` asks for
/// Burn's kernel-fusing backend on wgpu and CUDA where it is built in ([`fusion_built`]),
/// else the plain CubeCL one runs. On Flex, one device is a one-rank mesh ([`SingleFlex`]).
pub fn run_on<J: BackendJob>(kind: BackendKind, fusion: bool, job: J) -> Result<J::Output, OwtError> {
    match kind {
        BackendKind::Flex => job.run::<SingleFlex>(MeshDevice::virtual_ranks(Default::default(), 1)),
        BackendKind::Wgpu => run_wgpu(fusion, job),
        BackendKind::Cuda => run_cuda(fusion, job),
    }
}

#[cfg(feature = "wgpu")]
pub(crate) mod wgpu_backend {
    use super::*;
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};

    /// The plain CubeCL wgpu backend (meshes, `--no-fusion`, builds without `fusion`).
    pub type Plain = CubeBackend<WgpuRuntime, f32, i32, u32>;

    /// The wgpu backend of a single-device run: Burn's kernel-fusing one where built in.
    #[cfg(feature = "fusion")]
    pub type Single = burn::backend::wgpu::Wgpu;
    /// The wgpu backend of a single-device run: the plain one (built without `fusion`).
    #[cfg(not(feature = "fusion"))]
    pub type Single = Plain;

    /// What CubeCL's wgpu runtime can do between its devices.
    pub fn capabilities() -> RuntimeCapabilities {
        use burn_cubecl::cubecl::server::ServerCommunication;
        let comm = <<WgpuRuntime as burn_cubecl::cubecl::Runtime>::Server as ServerCommunication>::SERVER_COMM_ENABLED;
        RuntimeCapabilities { device_to_device: comm, device_all_reduce: false }
    }

    fn usable(device: &WgpuDevice) -> Result<(), OwtError> {
        let adapters = crate::runtime::kernel_cache::wgpu_adapters();
        if adapters.is_empty() {
            return Err(OwtError::backend(
                "--backend wgpu: no Vulkan, Metal or DX12 adapter found; on a CPU-only Linux machine install mesa-vulkan-drivers (apt-get install mesa-vulkan-drivers)",
            ));
        }
        crate::runtime::kernel_cache::configure(&crate::runtime::kernel_cache::wgpu_class(&adapters));
        crate::runtime::step_kernels::register::<Plain>();
        #[cfg(feature = "fusion")]
        crate::runtime::step_kernels::register::<Single>();
        probe::<Plain>(device).map_err(|why| {
            OwtError::backend(format!(
                "--backend wgpu: no usable wgpu adapter ({why}); on a CPU-only Linux machine install mesa-vulkan-drivers"
            ))
        })
    }

    pub fn mesh<J: MeshJob>(request: MeshRequest, job: J) -> Result<J::Output, OwtError> {
        usable(&WgpuDevice::DefaultDevice)?;
        let devices = (0..request.ranks)
            .map(|r| if r == 1 && !request.virtual_ranks { WgpuDevice::Cpu } else { WgpuDevice::DefaultDevice })
            .collect::<Vec<_>>();
        job.run::<Plain>(mesh_over(capabilities(), devices, &request.spanned())?)
    }

    pub fn single<J: BackendJob>(fusion: bool, job: J) -> Result<J::Output, OwtError> {
        let device = WgpuDevice::DefaultDevice;
        usable(&device)?;
        #[cfg(feature = "fusion")]
        if fusion {
            return job.run::<Autodiff<Single>>(device);
        }
        let _ = fusion;
        job.run::<Autodiff<Plain>>(device)
    }
}

#[cfg(feature = "wgpu")]
pub use wgpu_backend::{capabilities as wgpu_capabilities, Single as WgpuSingle};

#[cfg(feature = "wgpu")]
fn mesh_wgpu<J: MeshJob>(request: MeshRequest, job: J) -> Result<J::Output, OwtError> {
    wgpu_backend::mesh(request, job)
}

#[cfg(feature = "wgpu")]
fn run_wgpu<J: BackendJob>(fusion: bool, job: J) -> Result<J::Output, OwtError> {
    wgpu_backend::single(fusion, job)
}

#[cfg(not(feature = "wgpu"))]
fn mesh_wgpu<J: MeshJob>(_request: MeshRequest, _job: J) -> Result<J::Output, OwtError> {
    run_wgpu(true, NoJob).map(|_| unreachable!("wgpu is not built in"))
}

#[cfg(not(feature = "wgpu"))]
fn run_wgpu<J: BackendJob>(_fusion: bool, _job: J) -> Result<J::Output, OwtError> {
    Err(OwtError::backend(
        "--backend wgpu: this owt was built without the wgpu feature; rebuild with `cargo build --features wgpu` or use --backend flex",
    ))
}

#[cfg(feature = "cuda")]
mod cuda_backend {
    use std::sync::Arc;

    use super::*;
    use crate::runtime::cuda_preflight::{nccl_names, preflight, CudaNeeds, CudaSystem, HostSystem};
    use burn::backend::cuda::CudaDevice;
    use cubecl_cuda::CudaRuntime;

    /// The plain CubeCL CUDA backend (meshes, `--no-fusion`).
    pub type Plain = burn_cubecl::CubeBackend<CudaRuntime, f32, i32, u8>;

    /// What CubeCL's CUDA runtime can do between its devices: NCCL send/recv and all-reduce.
    pub fn capabilities() -> RuntimeCapabilities {
        use burn_cubecl::cubecl::server::ServerCommunication;
        let comm = <<CudaRuntime as burn_cubecl::cubecl::Runtime>::Server as ServerCommunication>::SERVER_COMM_ENABLED;
        RuntimeCapabilities { device_to_device: comm, device_all_reduce: comm }
    }

    /// Checks that CUDA can start on `devices` and starts them; before the first, points
    /// CubeCL's caches at owt's and decides who runs convolutions and matmuls (cuDNN and
    /// cuBLASLt where they load), said in one line where `speak`.
    fn usable<B: Backend<Device = CudaDevice>>(
        devices: &[CudaDevice],
        transfers: bool,
        speak: bool,
    ) -> Result<(), OwtError> {
        let gpus = devices.iter().map(|d| d.index).max().map_or(1, |i| i + 1);
        for warning in preflight(&HostSystem, CudaNeeds { gpus, transfers })? {
            crate::err_line!("warning: {warning}");
        }
        let name = HostSystem.gpu_name(0).unwrap_or_else(|| "unknown".into());
        let class = format!("cuda-{name}");
        crate::runtime::kernel_cache::configure(&class);
        let cache = crate::runtime::kernel_cache::device_dir(&class);
        // Each GPU's name, so two models in one machine keep their cuDNN choices apart.
        let names: Vec<String> = (0..gpus.max(HostSystem.count_gpus().unwrap_or(0)))
            .map(|i| HostSystem.gpu_name(i).unwrap_or_else(|| name.clone()))
            .collect();
        crate::runtime::cuda_kernels::install_once(&names, Some(&cache), speak)?;
        crate::runtime::step_kernels::register::<Plain>();
        crate::runtime::step_kernels::register::<burn::backend::Cuda>();
        for device in devices {
            probe::<B>(device).map_err(|why| {
                OwtError::backend(format!("--backend cuda: GPU {} did not start: {why}", device.index))
            })?;
        }
        Ok(())
    }

    pub fn mesh<J: MeshJob>(request: MeshRequest, job: J) -> Result<J::Output, OwtError> {
        let visible = HostSystem.count_gpus().ok();
        let first = first_gpu(request.processes.local_rank(), request.ranks, request.virtual_ranks, visible);
        let devices: Vec<CudaDevice> = (0..request.ranks)
            .map(|index| CudaDevice { index: first + if request.virtual_ranks { 0 } else { index } })
            .collect();
        let caps = capabilities();
        let on_devices = Transport::device_all_reduce(caps, &devices);
        // Across processes, one NCCL communicator over every rank's GPU sums the gradients
        // (virtual ranks share a GPU, which NCCL refuses: they stay on the host path), where
        // every process can load NCCL (asked of all of them: joining is a collective).
        let transfers = Transport::choose(caps, &devices) == Transport::DeviceToDevice;
        usable::<Plain>(&devices, transfers, request.processes.primary())?;
        let spanned = request.spanned();
        let world = caps.device_all_reduce
            && spanned.count() > 1
            && !request.virtual_ranks
            && every_process_loads_nccl(&spanned)?;
        let gpus: Vec<usize> = devices.iter().map(|d| d.index).collect();
        let mesh = mesh_over(caps, devices, &spanned)?;
        if mesh.transport() == Transport::DeviceToDevice {
            mesh.set_send_fence(Arc::new(owt_hybrid::nccl::CudaSendFence));
        }
        if on_devices && spanned.count() == 1 {
            mesh.set_device_all_reduce::<Plain>(Arc::new(owt_hybrid::nccl::NcclAllReduce));
        }
        if world {
            match owt_hybrid::nccl::NcclWorld::join(mesh.group().as_ref(), mesh.local_ranks().start, mesh.size(), &gpus)
            {
                Ok(nccl) => mesh.set_device_all_reduce::<Plain>(Arc::new(nccl)),
                Err(why) if request.processes.primary() => {
                    crate::err_line!("owt: gradients cross processes through MPI on the host: {why}")
                }
                Err(_) => {}
            }
        }
        job.run::<Plain>(mesh)
    }

    /// Whether NCCL loads on every process of the job (a collective; `false` on every
    /// process, said once by process 0, where one cannot).
    fn every_process_loads_nccl(processes: &Processes) -> Result<bool, OwtError> {
        let here = nccl_names().iter().any(|n| HostSystem.loads(n));
        let every = processes.group().all_gather(vec![here as u8]).map_err(|e| OwtError::backend(e.to_string()))?;
        let missing: Vec<usize> = (0..every.len()).filter(|&p| every[p] != [1]).collect();
        if !missing.is_empty() && processes.primary() {
            crate::err_line!(
                "owt: gradients cross processes through MPI on the host: NCCL does not load on process(es) {missing:?} (tried {})",
                nccl_names().join(", ")
            );
        }
        Ok(missing.is_empty())
    }

    pub fn single<J: BackendJob>(fusion: bool, job: J) -> Result<J::Output, OwtError> {
        let device = CudaDevice::default();
        #[cfg(feature = "fusion")]
        if fusion {
            use burn::backend::cuda::Cuda;
            usable::<Cuda>(std::slice::from_ref(&device), false, true)?;
            return job.run::<Autodiff<Cuda>>(device);
        }
        let _ = fusion;
        usable::<Plain>(std::slice::from_ref(&device), false, true)?;
        job.run::<Autodiff<Plain>>(device)
    }
}

/// The first GPU a process takes for its `ranks` ranks: those of its place on the node (local
/// rank i: GPUs i*L..(i+1)*L, or GPU i*L alone for virtual ranks), unless the process sees too
/// few GPUs for that but enough for its own ranks (`visible`, where known), as when the
/// launcher gives each process its own GPUs (`CUDA_VISIBLE_DEVICES` per task): then from GPU 0.
pub fn first_gpu(local_rank: usize, ranks: usize, virtual_ranks: bool, visible: Option<usize>) -> usize {
    let first = local_rank * ranks;
    let needs = if virtual_ranks { 1 } else { ranks };
    match visible {
        Some(v) if v < first + needs && v >= needs => 0,
        _ => first,
    }
}

#[cfg(feature = "cuda")]
pub use cuda_backend::capabilities as cuda_capabilities;

#[cfg(feature = "cuda")]
fn mesh_cuda<J: MeshJob>(request: MeshRequest, job: J) -> Result<J::Output, OwtError> {
    cuda_backend::mesh(request, job)
}

#[cfg(feature = "cuda")]
fn run_cuda<J: BackendJob>(fusion: bool, job: J) -> Result<J::Output, OwtError> {
    cuda_backend::single(fusion, job)
}

#[cfg(not(feature = "cuda"))]
fn mesh_cuda<J: MeshJob>(_request: MeshRequest, _job: J) -> Result<J::Output, OwtError> {
    run_cuda(true, NoJob).map(|_| unreachable!("cuda is not built in"))
}

#[cfg(not(feature = "cuda"))]
fn run_cuda<J: BackendJob>(_fusion: bool, _job: J) -> Result<J::Output, OwtError> {
    Err(OwtError::backend(
        "--backend cuda: this owt was built without the cuda feature; rebuild with `cargo build --features cuda` (needs an NVIDIA GPU) or use --backend flex",
    ))
}

/// A job that never runs: lets the mesh paths reuse the single-device "not built in" errors.
#[cfg(any(not(feature = "wgpu"), not(feature = "cuda")))]
struct NoJob;

#[cfg(any(not(feature = "wgpu"), not(feature = "cuda")))]
impl BackendJob for NoJob {
    type Output = ();
    fn run<B: AutodiffBackend>(self, _device: B::Device) -> Result<(), OwtError> {
        Ok(())
    }
}

/// Runs one tiny op on `device`. A backend that cannot start panics on its runtime's worker
/// thread and the caller sees only the hang-up; [`crate::host::panics::capture`] reports the
/// worker's own message instead.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn probe<B: Backend>(device: &B::Device) -> Result<(), String> {
    use burn::tensor::Tensor;
    let device = device.clone();
    crate::host::panics::capture(move || {
        let t = Tensor::<B, 1>::ones([4], &device);
        t.sum().into_scalar()
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::first_gpu;

    #[test]
    fn each_process_takes_the_gpus_of_its_place_on_the_node() {
        // 8 GPUs, 4 processes of 2 ranks: GPUs 0-1, 2-3, 4-5, 6-7.
        let firsts: Vec<usize> = (0..4).map(|i| first_gpu(i, 2, false, Some(8))).collect();
        assert_eq!(firsts, vec![0, 2, 4, 6]);
        // Virtual ranks take one GPU each.
        assert_eq!(first_gpu(3, 2, true, Some(8)), 6);
        // Unknown count: the place on the node (the preflight then names what is missing).
        assert_eq!(first_gpu(1, 1, false, None), 1);
    }

    #[test]
    fn a_process_given_only_its_own_gpus_starts_at_gpu_0() {
        // Slurm's --gpus-per-task: each process sees its one GPU as GPU 0.
        assert_eq!(first_gpu(5, 1, false, Some(1)), 0);
        assert_eq!(first_gpu(1, 2, false, Some(2)), 0);
        // Too few for even its own ranks: kept, so the preflight names the missing GPUs.
        assert_eq!(first_gpu(1, 2, false, Some(1)), 2);
    }
}
