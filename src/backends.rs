//! Choosing the inner backend at run time (`--backend flex|wgpu|cuda`), with clear errors when
//! one is not compiled in or has no device.

use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::{AutodiffBackend, Backend};

use crate::error::OwtError;

/// The compute backends `owt` can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Burn's pure-Rust CPU backend (always available; what CI uses).
    #[default]
    Flex,
    /// wgpu (Vulkan/Metal/DX12; on a CPU-only Linux box, Mesa lavapipe). Needs `--features wgpu`.
    Wgpu,
    /// CUDA through CubeCL. Needs `--features cuda` and an NVIDIA driver.
    Cuda,
}

impl BackendKind {
    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Flex => "flex",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }
}

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
    /// Runs the work with one inner-backend device per rank.
    fn run<IB: Backend>(self, devices: Vec<IB::Device>) -> Result<Self::Output, OwtError>;
}

/// Runs `job` on `ranks` ranks of `kind`: with Flex, `ranks` virtual ranks on the CPU; with
/// wgpu, the default adapter and then the CPU adapter (two distinct devices where the machine
/// has both; further ranks share the default adapter); with CUDA, GPU `i` for rank `i`.
/// Meshes use the inner backends without kernel fusion: burn-fusion 0.21 loses tensor handles
/// when one program's tensors live on two devices.
pub fn run_on_mesh<J: MeshJob>(kind: BackendKind, ranks: usize, job: J) -> Result<J::Output, OwtError> {
    if ranks == 0 {
        return Err(OwtError::input("--devices must be at least 1, got 0"));
    }
    match kind {
        BackendKind::Flex => job.run::<Flex>(vec![Default::default(); ranks]),
        BackendKind::Wgpu => mesh_wgpu(ranks, job),
        BackendKind::Cuda => mesh_cuda(ranks, job),
    }
}

#[cfg(feature = "wgpu")]
fn mesh_wgpu<J: MeshJob>(ranks: usize, job: J) -> Result<J::Output, OwtError> {
    use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
    type W = CubeBackend<WgpuRuntime, f32, i32, u32>;
    probe::<W>(&WgpuDevice::DefaultDevice).map_err(|why| {
        OwtError::backend(format!(
            "--backend wgpu: no usable wgpu adapter ({why}); on a CPU-only Linux machine install mesa-vulkan-drivers"
        ))
    })?;
    let devices =
        (0..ranks).map(|r| if r == 1 { WgpuDevice::Cpu } else { WgpuDevice::DefaultDevice }).collect::<Vec<_>>();
    job.run::<W>(devices)
}

#[cfg(not(feature = "wgpu"))]
fn mesh_wgpu<J: MeshJob>(_ranks: usize, _job: J) -> Result<J::Output, OwtError> {
    run_wgpu(NoJob).map(|_| unreachable!("wgpu is not built in"))
}

#[cfg(feature = "cuda")]
fn mesh_cuda<J: MeshJob>(ranks: usize, job: J) -> Result<J::Output, OwtError> {
    use burn::backend::cuda::CudaDevice;
    type C = burn_cubecl::CubeBackend<cubecl_cuda::CudaRuntime, f32, i32, u8>;
    if !std::path::Path::new("/proc/driver/nvidia/version").exists()
        && std::env::var_os("OWT_SKIP_DRIVER_CHECK").is_none()
    {
        return Err(OwtError::backend(
            "--backend cuda: expected an NVIDIA GPU with its driver, found none (/proc/driver/nvidia/version is missing); use --backend flex",
        ));
    }
    let devices: Vec<CudaDevice> = (0..ranks).map(|index| CudaDevice { index }).collect();
    for (rank, device) in devices.iter().enumerate() {
        probe::<C>(device).map_err(|why| {
            OwtError::backend(format!(
                "--backend cuda --devices {ranks}: GPU {rank} is not usable ({why}); expected {ranks} GPUs"
            ))
        })?;
    }
    job.run::<C>(devices)
}

#[cfg(not(feature = "cuda"))]
fn mesh_cuda<J: MeshJob>(_ranks: usize, _job: J) -> Result<J::Output, OwtError> {
    run_cuda(NoJob).map(|_| unreachable!("cuda is not built in"))
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

/// Runs `job` on `kind`, or explains why that backend cannot be used here.
pub fn run_on<J: BackendJob>(kind: BackendKind, job: J) -> Result<J::Output, OwtError> {
    match kind {
        BackendKind::Flex => job.run::<Autodiff<Flex>>(Default::default()),
        BackendKind::Wgpu => run_wgpu(job),
        BackendKind::Cuda => run_cuda(job),
    }
}

#[cfg(feature = "wgpu")]
fn run_wgpu<J: BackendJob>(job: J) -> Result<J::Output, OwtError> {
    use burn::backend::wgpu::{Wgpu, WgpuDevice};
    let device = WgpuDevice::DefaultDevice;
    probe::<Wgpu>(&device).map_err(|why| {
        OwtError::backend(format!(
            "--backend wgpu: no usable wgpu adapter ({why}); on a CPU-only Linux machine install mesa-vulkan-drivers"
        ))
    })?;
    job.run::<Autodiff<Wgpu>>(device)
}

#[cfg(not(feature = "wgpu"))]
fn run_wgpu<J: BackendJob>(_job: J) -> Result<J::Output, OwtError> {
    Err(OwtError::backend(
        "--backend wgpu: this owt was built without the wgpu feature; rebuild with `cargo build --features wgpu` or use --backend flex",
    ))
}

#[cfg(feature = "cuda")]
fn run_cuda<J: BackendJob>(job: J) -> Result<J::Output, OwtError> {
    use burn::backend::cuda::{Cuda, CudaDevice};
    if !std::path::Path::new("/proc/driver/nvidia/version").exists()
        && std::env::var_os("OWT_SKIP_DRIVER_CHECK").is_none()
    {
        return Err(OwtError::backend(
            "--backend cuda: expected an NVIDIA GPU with its driver, found none (/proc/driver/nvidia/version is missing); use --backend flex",
        ));
    }
    let device = CudaDevice::default();
    probe::<Cuda>(&device)
        .map_err(|why| OwtError::backend(format!("--backend cuda: the GPU is not usable ({why})")))?;
    job.run::<Autodiff<Cuda>>(device)
}

#[cfg(not(feature = "cuda"))]
fn run_cuda<J: BackendJob>(_job: J) -> Result<J::Output, OwtError> {
    Err(OwtError::backend(
        "--backend cuda: this owt was built without the cuda feature; rebuild with `cargo build --features cuda` (needs an NVIDIA GPU) or use --backend flex",
    ))
}

/// Runs one tiny op on `device`; a backend that cannot start panics inside its runtime, so the
/// panic is caught (with the default hook silenced) and turned into a message.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn probe<B: burn::tensor::backend::Backend>(device: &B::Device) -> Result<(), String> {
    use burn::tensor::Tensor;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let device = device.clone();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let t = Tensor::<B, 1>::ones([4], &device);
        t.sum().into_scalar()
    }));
    std::panic::set_hook(hook);
    result.map(|_| ()).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the runtime panicked while starting".into())
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    })
}
