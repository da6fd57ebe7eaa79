//! Which kernels run CUDA's convolutions and matmuls in this process: what the command line
//! asked (`--conv`, `--matmul`, `--tf32`: [`choose`]), what the machine has (cuDNN and
//! cuBLASLt, looked for when the first CUDA device starts: [`install_once`]), said in one line
//! at the start of a run, and how many calls each took ([`report`], in `owt bench --json`).

use std::sync::{Mutex, OnceLock};

use owt_hybrid::cuda_libraries::{ConvKernels, Installed, KernelChoice, MatmulKernels, Usage};
#[cfg(not(feature = "cudnn"))]
use owt_hybrid::cuda_libraries::{Math, Runner};
use serde::Serialize;

use crate::error::OwtError;
use crate::runtime::backend_kind::BackendKind;

static CHOICE: Mutex<Option<KernelChoice>> = Mutex::new(None);
static INSTALLED: OnceLock<Result<Installed, String>> = OnceLock::new();

/// Records what the command line asks of CUDA's kernels, before any device starts, and turns
/// CubeCL's deterministic autotuning on or off with `--deterministic` (CUDA and wgpu). A library
/// forced on another backend is refused (`--conv cudnn` means nothing to Flex or wgpu).
pub fn choose(choice: KernelChoice, backend: BackendKind) -> Result<(), OwtError> {
    if backend != BackendKind::Cuda {
        let forced = [
            (choice.conv == ConvKernels::Cudnn, "--conv cudnn"),
            (choice.matmul == MatmulKernels::Cublaslt, "--matmul cublaslt"),
        ];
        if let Some((_, flag)) = forced.iter().find(|(on, _)| *on) {
            return Err(OwtError::input(format!(
                "{flag} runs on CUDA only; --backend {} has its own kernels (use --backend cuda, or leave it out)",
                backend.name()
            )));
        }
    }
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    cubecl_runtime::tune::set_deterministic(choice.deterministic);
    *CHOICE.lock().unwrap_or_else(|e| e.into_inner()) = Some(choice);
    Ok(())
}

/// What [`choose`] recorded (the defaults where nothing did).
pub fn choice() -> KernelChoice {
    CHOICE.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or_default()
}

/// Decides, once per process, who runs CUDA's convolutions and matmuls (cuDNN and cuBLASLt
/// where they load and the choice lets them), with cuDNN's algorithm choices kept in
/// `cache_dir`, each GPU's under its name (`gpus[i]` for device `i`); prints the decision in
/// one line (and any warning) where `speak`. Refused where the choice forces a library the
/// machine does not have, or strict f32 without both.
#[cfg(feature = "cudnn")]
pub fn install_once(gpus: &[String], cache_dir: Option<&std::path::Path>, speak: bool) -> Result<Installed, OwtError> {
    let result = INSTALLED.get_or_init(|| {
        owt_hybrid::cuda_libraries::install(choice(), &crate::runtime::cuda_preflight::HostSystem, cache_dir, gpus).map(
            |(installed, warnings)| {
                if speak {
                    for w in warnings {
                        crate::err_line!("warning: {w}");
                    }
                    crate::err_line!("{}", installed.line());
                }
                installed
            },
        )
    });
    result.clone().map_err(OwtError::input)
}

/// [`install_once`] in a build without the `cudnn` feature: CubeCL's kernels, said once;
/// refused where the choice forces a library or strict f32.
#[cfg(not(feature = "cudnn"))]
pub fn install_once(
    _gpus: &[String],
    _cache_dir: Option<&std::path::Path>,
    speak: bool,
) -> Result<Installed, OwtError> {
    let result = INSTALLED.get_or_init(|| {
        let choice = choice();
        let why = "this owt was built without the cudnn feature".to_string();
        if choice.conv == ConvKernels::Cudnn || choice.matmul == MatmulKernels::Cublaslt || choice.math == Math::Strict
        {
            return Err(format!("--conv cudnn, --matmul cublaslt and --tf32 off need cuDNN and cuBLASLt: {why}"));
        }
        let installed = Installed {
            conv: Runner::Cubecl { why: why.clone() },
            owt_strided_weight_gradients: false,
            matmul: Runner::Cubecl { why },
            math: choice.math.name(),
            deterministic: choice.deterministic,
        };
        if speak {
            crate::err_line!("{}", installed.line());
        }
        Ok(installed)
    });
    result.clone().map_err(OwtError::input)
}

/// What `owt bench --json` reports of CUDA's kernels: who runs them, the calls each took over
/// the timed steps, why any op a library was installed for went to CubeCL instead, and which
/// ops were not strict f32 under `--tf32 off`.
#[derive(Debug, Clone, Serialize)]
pub struct CudaKernelReport {
    /// Who runs convolutions and matmuls, in which math.
    pub installed: Installed,
    /// Calls each kind of kernel took over the timed steps.
    pub usage: Usage,
    /// Why ops went to CubeCL's kernels although a library runs their kind (each reason once).
    pub declines: Vec<String>,
    /// Under `--tf32 off`, the ops CubeCL's kernels ran because a library declined them, which
    /// rounded f32 through TF32 (empty: every op was strict, or the run is TF32).
    pub not_strict: Vec<String>,
}

/// The report over the calls since `from`, where CUDA's kernels were installed in this process.
pub fn report(from: &Usage) -> Option<CudaKernelReport> {
    let installed = INSTALLED.get()?.clone().ok()?;
    Some(CudaKernelReport {
        installed,
        usage: Usage::now().since(from),
        declines: declines(),
        not_strict: not_strict(),
    })
}

/// Why ops went to CubeCL's kernels although a library was installed for them.
pub fn declines() -> Vec<String> {
    #[cfg(feature = "cudnn")]
    return owt_hybrid::cuda_libraries::declines();
    #[cfg(not(feature = "cudnn"))]
    Vec::new()
}

/// Under `--tf32 off`, the ops that ran on CubeCL's TF32 kernels (a library declined them).
pub fn not_strict() -> Vec<String> {
    #[cfg(feature = "cudnn")]
    return owt_hybrid::cuda_libraries::not_strict();
    #[cfg(not(feature = "cudnn"))]
    Vec::new()
}

/// The one line that says, under `--tf32 off`, which ops were not strict f32 (CubeCL's kernels
/// ran them, rounding through TF32), or `None` where every op was.
pub fn not_strict_line() -> Option<String> {
    let ops = not_strict();
    (!ops.is_empty()).then(|| {
        format!(
            "owt: --tf32 off, but {} op(s) ran on CubeCL's kernels, which round f32 through TF32: {}",
            ops.len(),
            ops.join("; ")
        )
    })
}

/// How f32 matmuls round under `installed`, as `owt bench --json` says it (`cuda.f32_matmul`).
pub fn f32_matmul(installed: &Installed) -> &'static str {
    match (installed.matmul.is_library(), installed.math) {
        (true, "strict") => "strict f32 (cuBLASLt)",
        (true, _) => "tf32 (cuBLASLt)",
        (false, _) => "tf32 on tensor-core paths (CubeCL)",
    }
}

impl owt_hybrid::libraries::Loader for crate::runtime::cuda_preflight::HostSystem {
    fn loads(&self, name: &str) -> bool {
        crate::runtime::cuda_preflight::CudaSystem::loads(self, name)
    }
    fn var(&self, name: &str) -> Option<String> {
        crate::runtime::cuda_preflight::CudaSystem::var(self, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use owt_hybrid::cuda_libraries::Math;

    #[test]
    fn a_forced_library_on_another_backend_is_refused_naming_the_flag() {
        let forced = KernelChoice { conv: ConvKernels::Cudnn, ..Default::default() };
        let err = choose(forced, BackendKind::Flex).unwrap_err().to_string();
        assert!(err.contains("--conv cudnn runs on CUDA only") && err.contains("--backend flex"), "{err}");
        let forced = KernelChoice { matmul: MatmulKernels::Cublaslt, ..Default::default() };
        assert!(choose(forced, BackendKind::Wgpu).unwrap_err().to_string().contains("--matmul cublaslt"));
        // Strict f32 and CubeCL's own kernels mean the same on any backend.
        let strict = KernelChoice { math: Math::Strict, conv: ConvKernels::Cubecl, ..Default::default() };
        choose(strict, BackendKind::Flex).unwrap();
        assert_eq!(choice(), strict);
    }
}
