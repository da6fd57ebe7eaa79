//! Choosing the inner backend at run time (`--backend flex|wgpu|cuda`), with clear errors when
//! one is not compiled in or has no device.

use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::AutodiffBackend;

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
