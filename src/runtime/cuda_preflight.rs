//! Checks, before CubeCL is asked for a GPU, that CUDA can start here, and says in one line
//! what to fix when it cannot. CubeCL starts each GPU on a worker thread; when that fails the
//! caller only sees the worker hang up, so every cause we can recognise is checked first: the
//! driver, a stub `libcuda`, the number of GPUs, NVRTC (CUDA's run-time compiler, which
//! CubeCL loads by name), the CUDA headers NVRTC compiles against, and NCCL when ranks sit on
//! distinct GPUs.
//!
//! `cuInit` is the test of the driver: a sandboxed GPU machine (gVisor) may have no
//! `/proc/driver/nvidia/version`, so its absence is a warning, and an error only alongside a
//! driver that does not start. NVRTC compiles CubeCL's kernels to PTX that the driver loads
//! (cubecl-cuda 0.10.0 `compute/context.rs`, `get_ptx`, `module::load_data`): an NVRTC newer
//! than the driver's CUDA writes PTX the driver cannot read, so every kernel would fail to
//! load; that is refused naming both versions.
//!
//! The checks read the machine through [`CudaSystem`], so every message is tested on a machine
//! without a GPU with a substitute system.

use std::path::{Path, PathBuf};

use crate::error::OwtError;

/// The file the NVIDIA kernel driver provides when it is loaded.
pub const DRIVER_VERSION_FILE: &str = "/proc/driver/nvidia/version";

/// `CUDA_ERROR_NO_DEVICE`.
const CUDA_ERROR_NO_DEVICE: i32 = 100;
/// `CUDA_ERROR_STUB_LIBRARY`: the link-time stub `libcuda.so` was loaded instead of the driver's.
const CUDA_ERROR_STUB_LIBRARY: i32 = 34;
/// `CUDA_ERROR_INSUFFICIENT_DRIVER`.
const CUDA_ERROR_INSUFFICIENT_DRIVER: i32 = 35;

/// Names cudarc (CubeCL's CUDA binding) tries for NVRTC on Linux, in its order, for the CUDA
/// version it was built for (`owt_hybrid::libraries::candidate_names`).
pub fn nvrtc_names() -> Vec<String> {
    owt_hybrid::libraries::candidate_names("nvrtc")
}

/// Names cudarc tries for NCCL on Linux, in its order. It does not try NCCL's own soname
/// `libnccl.so.2`.
pub fn nccl_names() -> Vec<String> {
    owt_hybrid::libraries::candidate_names("nccl")
}

/// The header every CubeCL CUDA kernel includes.
pub const CUDA_RUNTIME_HEADER: &str = "include/cuda_runtime.h";

/// Why the driver library could not count GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverError {
    /// `libcuda` did not load (the dynamic loader's message).
    NotLoadable(String),
    /// A driver call returned a CUDA error code.
    Call {
        /// The call, e.g. `cuInit`.
        call: &'static str,
        /// The `CUresult`.
        code: i32,
    },
}

/// What the preflight reads of the machine.
pub trait CudaSystem {
    /// Whether the NVIDIA kernel driver is loaded.
    fn driver_loaded(&self) -> bool;
    /// An environment variable.
    fn var(&self, name: &str) -> Option<String>;
    /// Whether a file exists.
    fn exists(&self, path: &Path) -> bool;
    /// Whether a shared library of this name loads.
    fn loads(&self, name: &str) -> bool;
    /// Initialises the driver library and counts GPUs.
    fn count_gpus(&self) -> Result<usize, DriverError>;
    /// The CUDA version the driver supports (`cuDriverGetVersion`), if the driver answers.
    fn driver_cuda_version(&self) -> Option<CudaVersion>;
    /// The version of the NVRTC library `name` (`nvrtcVersion`), if it loads and answers.
    fn nvrtc_version(&self, name: &str) -> Option<CudaVersion>;
}

/// A CUDA version, major and minor (13.0 is the driver's 13000, NVRTC's (13, 0)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CudaVersion {
    /// Major version.
    pub major: i32,
    /// Minor version.
    pub minor: i32,
}

impl CudaVersion {
    /// The version `cuDriverGetVersion` writes as one number (`1000 * major + 10 * minor`).
    pub fn from_driver(v: i32) -> Self {
        CudaVersion { major: v / 1000, minor: (v % 1000) / 10 }
    }
}

impl std::fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The versions a CUDA run depends on, as `owt bench --json` reports them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CudaVersions {
    /// The GPU's name as the driver gives it (GPU 0).
    pub gpu: Option<String>,
    /// The CUDA version the driver supports.
    pub driver_cuda: Option<String>,
    /// The NVRTC library CubeCL loads (the first of [`nvrtc_names`] that loads).
    pub nvrtc_library: Option<String>,
    /// That library's version.
    pub nvrtc: Option<String>,
    /// How f32 matmuls round on this GPU: CubeCL registers TF32 on every GPU that has it and
    /// its tensor-core matmuls use it, so "f32" runs compare with PyTorch's TF32 figures.
    pub f32_matmul: &'static str,
}

/// The first NVRTC library of [`nvrtc_names`] that loads (the one cudarc loads).
pub fn nvrtc_library(system: &dyn CudaSystem) -> Option<String> {
    nvrtc_names().into_iter().find(|n| system.loads(n))
}

/// What `system` says of the versions a CUDA run depends on.
pub fn versions(system: &dyn CudaSystem, gpu: Option<String>) -> CudaVersions {
    let library = nvrtc_library(system);
    CudaVersions {
        gpu,
        driver_cuda: system.driver_cuda_version().map(|v| v.to_string()),
        nvrtc: library.as_deref().and_then(|l| system.nvrtc_version(l)).map(|v| v.to_string()),
        nvrtc_library: library,
        f32_matmul: "tf32 on tensor-core paths (CubeCL)",
    }
}

/// What a run needs of CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaNeeds {
    /// GPUs the ranks occupy (1 for virtual ranks on one GPU).
    pub gpus: usize,
    /// Whether tensors move between distinct GPUs (NCCL).
    pub transfers: bool,
}

/// The directories of `LD_LIBRARY_PATH` that hold a stub `libcuda` (CUDA's `.../stubs`).
fn stub_dirs(system: &dyn CudaSystem) -> Vec<PathBuf> {
    system
        .var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .filter(|d| d.components().any(|c| c.as_os_str() == "stubs"))
        .filter(|d| ["libcuda.so", "libcuda.so.1"].iter().any(|lib| system.exists(&d.join(lib))))
        .collect()
}

fn stub_message(dirs: &[PathBuf]) -> String {
    let shown = if dirs.is_empty() {
        "a directory on LD_LIBRARY_PATH".to_string()
    } else {
        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    };
    format!(
        "--backend cuda: the CUDA stub libcuda was loaded instead of the driver's (from {shown}); remove that `stubs` directory from LD_LIBRARY_PATH (stubs are for linking only)"
    )
}

/// The CUDA root CubeCL compiles against (`CUDA_PATH`, else the first of `/usr/local/cuda`,
/// `/opt/cuda`, and `/usr` when `/usr/bin/nvcc` exists), as cubecl-cuda looks it up.
pub fn cuda_root(system: &dyn CudaSystem) -> Option<PathBuf> {
    if let Some(path) = system.var("CUDA_PATH") {
        return Some(PathBuf::from(path));
    }
    ["/usr/local/cuda", "/opt/cuda"]
        .iter()
        .map(PathBuf::from)
        .find(|p| system.exists(p))
        .or_else(|| system.exists(Path::new("/usr/bin/nvcc")).then(|| PathBuf::from("/usr")))
}

/// Checks everything a CUDA run needs; the first problem found, as a one-line error. What is
/// odd but not fatal comes back as warnings, one line each, for the caller to print.
pub fn preflight(system: &dyn CudaSystem, needs: CudaNeeds) -> Result<Vec<String>, OwtError> {
    let mut warnings = Vec::new();
    let driver_file = system.driver_loaded();
    if !driver_file {
        warnings.push(format!(
            "--backend cuda: {DRIVER_VERSION_FILE} is missing (a sandboxed machine may lack it); asking the driver itself"
        ));
    }
    let stubs = stub_dirs(system);
    if !stubs.is_empty() {
        return Err(OwtError::backend(stub_message(&stubs)));
    }
    let found = system.count_gpus().map_err(|e| match e {
        DriverError::NotLoadable(_) | DriverError::Call { code: CUDA_ERROR_NO_DEVICE, .. } if !driver_file => {
            OwtError::backend(format!(
                "--backend cuda: expected an NVIDIA GPU with its driver, found none ({DRIVER_VERSION_FILE} is missing and {}); install the NVIDIA driver or use --backend flex",
                match &e {
                    DriverError::NotLoadable(why) => format!("libcuda does not load: {why}"),
                    _ => "cuInit sees no GPU".to_string(),
                }
            ))
        }
        DriverError::NotLoadable(why) => OwtError::backend(format!(
            "--backend cuda: the NVIDIA driver library libcuda.so.1 does not load ({why}); reinstall the driver, or add the directory holding libcuda.so.1 to LD_LIBRARY_PATH"
        )),
        DriverError::Call { code: CUDA_ERROR_STUB_LIBRARY, .. } => OwtError::backend(stub_message(&[])),
        DriverError::Call { code: CUDA_ERROR_NO_DEVICE, .. } => OwtError::backend(
            "--backend cuda: the NVIDIA driver is loaded but sees no GPU (CUDA_ERROR_NO_DEVICE); check CUDA_VISIBLE_DEVICES and nvidia-smi",
        ),
        DriverError::Call { code: CUDA_ERROR_INSUFFICIENT_DRIVER, call } => OwtError::backend(format!(
            "--backend cuda: {call} failed: the NVIDIA driver is older than the CUDA runtime needs (CUDA_ERROR_INSUFFICIENT_DRIVER); update the driver"
        )),
        DriverError::Call { code, call } => {
            OwtError::backend(format!("--backend cuda: {call} failed with CUDA error {code}; see nvidia-smi"))
        }
    })?;
    if found < needs.gpus {
        return Err(OwtError::backend(format!(
            "--backend cuda: expected {} GPUs (one per rank), found {found}; lower --devices or use --virtual-ranks to put every rank on GPU 0",
            needs.gpus
        )));
    }
    let Some(nvrtc) = nvrtc_library(system) else {
        return Err(OwtError::backend(format!(
            "--backend cuda: NVRTC (CUDA's run-time compiler) not found: tried {}; install it (CUDA toolkit `cuda-nvrtc`, or `pip install nvidia-cuda-nvrtc`) and add its lib directory to LD_LIBRARY_PATH",
            nvrtc_names().join(", ")
        )));
    };
    match (system.nvrtc_version(&nvrtc), system.driver_cuda_version()) {
        (Some(compiler), Some(driver)) if compiler > driver => {
            return Err(OwtError::backend(format!(
                "--backend cuda: NVRTC {compiler} ({nvrtc}) is newer than the driver's CUDA {driver}: the driver cannot load the kernels it compiles; put an NVRTC of CUDA {driver} or older first on LD_LIBRARY_PATH, or update the driver"
            )))
        }
        (None, _) => warnings.push(format!("--backend cuda: {nvrtc} loads but does not tell its version")),
        _ => {}
    }
    match cuda_root(system) {
        Some(root) if system.exists(&root.join(CUDA_RUNTIME_HEADER)) => {}
        Some(root) => {
            return Err(OwtError::backend(format!(
                "--backend cuda: CUDA headers not found: {} is missing; set CUDA_PATH to a CUDA toolkit root that has include/cuda_runtime.h",
                root.join(CUDA_RUNTIME_HEADER).display()
            )))
        }
        None => {
            return Err(OwtError::backend(
                "--backend cuda: CUDA headers not found: CUDA_PATH is unset and neither /usr/local/cuda nor /opt/cuda exists; install the CUDA toolkit headers (cuda_runtime.h) and set CUDA_PATH to their root",
            ))
        }
    }
    if needs.transfers && !nccl_names().iter().any(|n| system.loads(n)) {
        return Err(OwtError::backend(format!(
            "--backend cuda: NCCL not found (tensors move between GPUs through it): tried {}; install NCCL and, if only libnccl.so.2 exists, link it as libnccl.so in a directory on LD_LIBRARY_PATH",
            nccl_names().join(", ")
        )));
    }
    Ok(warnings)
}

/// The NVIDIA driver library: `libcuda.so.1`, else `libcuda.so`.
///
/// # Safety
/// Loading a library runs its initialisers; this is the driver's own, which CubeCL loads anyway.
unsafe fn libcuda() -> Result<libloading::Library, libloading::Error> {
    libloading::Library::new("libcuda.so.1").or_else(|_| libloading::Library::new("libcuda.so"))
}

/// This machine, read through the file system, the environment and the dynamic loader.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostSystem;

impl CudaSystem for HostSystem {
    fn driver_loaded(&self) -> bool {
        Path::new(DRIVER_VERSION_FILE).exists()
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn loads(&self, name: &str) -> bool {
        // SAFETY: loading a library runs its initialisers; these are CUDA's own libraries,
        // which CubeCL would load into this process anyway.
        unsafe { libloading::Library::new(name) }.is_ok()
    }

    fn count_gpus(&self) -> Result<usize, DriverError> {
        type CuInit = unsafe extern "C" fn(u32) -> i32;
        type CuDeviceGetCount = unsafe extern "C" fn(*mut i32) -> i32;
        // SAFETY: the driver's documented C entry points, called with valid arguments.
        unsafe {
            let lib = libcuda().map_err(|e| DriverError::NotLoadable(e.to_string()))?;
            let init: libloading::Symbol<CuInit> =
                lib.get(b"cuInit\0").map_err(|e| DriverError::NotLoadable(e.to_string()))?;
            let count: libloading::Symbol<CuDeviceGetCount> =
                lib.get(b"cuDeviceGetCount\0").map_err(|e| DriverError::NotLoadable(e.to_string()))?;
            let code = init(0);
            if code != 0 {
                return Err(DriverError::Call { call: "cuInit", code });
            }
            let mut n = 0i32;
            let code = count(&mut n);
            if code != 0 {
                return Err(DriverError::Call { call: "cuDeviceGetCount", code });
            }
            Ok(n.max(0) as usize)
        }
    }

    fn driver_cuda_version(&self) -> Option<CudaVersion> {
        type CuDriverGetVersion = unsafe extern "C" fn(*mut i32) -> i32;
        // SAFETY: the driver's documented C entry point, with a valid out pointer; it needs
        // no cuInit.
        unsafe {
            let lib = libcuda().ok()?;
            let get: libloading::Symbol<CuDriverGetVersion> = lib.get(b"cuDriverGetVersion\0").ok()?;
            let mut v = 0i32;
            (get(&mut v) == 0 && v > 0).then(|| CudaVersion::from_driver(v))
        }
    }

    fn nvrtc_version(&self, name: &str) -> Option<CudaVersion> {
        type NvrtcVersion = unsafe extern "C" fn(*mut i32, *mut i32) -> i32;
        // SAFETY: NVRTC's documented C entry point, with valid out pointers.
        unsafe {
            let lib = libloading::Library::new(name).ok()?;
            let get: libloading::Symbol<NvrtcVersion> = lib.get(b"nvrtcVersion\0").ok()?;
            let (mut major, mut minor) = (0i32, 0i32);
            (get(&mut major, &mut minor) == 0).then_some(CudaVersion { major, minor })
        }
    }
}

impl HostSystem {
    /// The name the driver gives GPU `index` (e.g. "NVIDIA H200"), if the driver answers.
    pub fn gpu_name(&self, index: usize) -> Option<String> {
        type CuInit = unsafe extern "C" fn(u32) -> i32;
        type CuDeviceGet = unsafe extern "C" fn(*mut i32, i32) -> i32;
        type CuDeviceGetName = unsafe extern "C" fn(*mut std::ffi::c_char, i32, i32) -> i32;
        // SAFETY: the driver's documented C entry points, with a buffer of the size passed.
        unsafe {
            let lib = libloading::Library::new("libcuda.so.1").ok()?;
            let init: libloading::Symbol<CuInit> = lib.get(b"cuInit\0").ok()?;
            let get: libloading::Symbol<CuDeviceGet> = lib.get(b"cuDeviceGet\0").ok()?;
            let name: libloading::Symbol<CuDeviceGetName> = lib.get(b"cuDeviceGetName\0").ok()?;
            let mut device = 0i32;
            if init(0) != 0 || get(&mut device, index as i32) != 0 {
                return None;
            }
            let mut buf = [0 as std::ffi::c_char; 256];
            if name(buf.as_mut_ptr(), buf.len() as i32, device) != 0 {
                return None;
            }
            Some(std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    /// A machine described by hand.
    #[derive(Default)]
    struct Fake {
        driver: bool,
        vars: HashMap<String, String>,
        files: HashSet<PathBuf>,
        libs: HashSet<String>,
        gpus: Option<Result<usize, DriverError>>,
        driver_cuda: Option<CudaVersion>,
        nvrtc: HashMap<String, CudaVersion>,
    }

    const V13_0: CudaVersion = CudaVersion { major: 13, minor: 0 };

    impl Fake {
        /// A working machine with `gpus` GPUs, NVRTC, NCCL and the toolkit in /usr/local/cuda.
        fn working(gpus: usize) -> Self {
            let mut f = Fake { driver: true, gpus: Some(Ok(gpus)), ..Default::default() };
            f.files.insert("/usr/local/cuda".into());
            f.files.insert("/usr/local/cuda/include/cuda_runtime.h".into());
            f.libs.insert("libnvrtc.so.13".into());
            f.libs.insert("libnccl.so".into());
            f.driver_cuda = Some(V13_0);
            f.nvrtc.insert("libnvrtc.so.13".into(), V13_0);
            f
        }
    }

    impl CudaSystem for Fake {
        fn driver_loaded(&self) -> bool {
            self.driver
        }
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn exists(&self, path: &Path) -> bool {
            self.files.contains(path)
        }
        fn loads(&self, name: &str) -> bool {
            self.libs.contains(name)
        }
        fn count_gpus(&self) -> Result<usize, DriverError> {
            self.gpus.clone().unwrap_or(Err(DriverError::NotLoadable("not faked".into())))
        }
        fn driver_cuda_version(&self) -> Option<CudaVersion> {
            self.driver_cuda
        }
        fn nvrtc_version(&self, name: &str) -> Option<CudaVersion> {
            self.nvrtc.get(name).copied().filter(|_| self.libs.contains(name))
        }
    }

    const ONE: CudaNeeds = CudaNeeds { gpus: 1, transfers: false };

    fn error(system: &Fake, needs: CudaNeeds) -> String {
        let e = preflight(system, needs).unwrap_err().to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(!e.contains("RecvError") && !e.contains("unwrap"), "{e}");
        e
    }

    #[test]
    fn a_working_machine_passes() {
        let warnings = preflight(&Fake::working(2), CudaNeeds { gpus: 2, transfers: true }).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_missing_proc_file_is_a_warning_when_the_driver_starts() {
        // A sandboxed GPU machine: no /proc/driver/nvidia/version, cuInit works.
        let warnings = preflight(&Fake { driver: false, ..Fake::working(1) }, ONE).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains(DRIVER_VERSION_FILE) && !warnings[0].contains('\n'), "{warnings:?}");
    }

    #[test]
    fn no_driver() {
        // Neither the file nor a loadable driver, or a driver that sees no GPU: one line.
        let gone = Some(Err(DriverError::NotLoadable("libcuda.so.1: cannot open shared object file".into())));
        let e = error(&Fake { driver: false, gpus: gone, ..Fake::working(1) }, ONE);
        assert!(e.contains("found none") && e.contains(DRIVER_VERSION_FILE) && e.contains("--backend flex"), "{e}");
        assert!(e.contains("libcuda does not load: libcuda.so.1: cannot open"), "{e}");
        let none = Some(Err(DriverError::Call { call: "cuInit", code: CUDA_ERROR_NO_DEVICE }));
        let e = error(&Fake { driver: false, gpus: none, ..Fake::working(1) }, ONE);
        assert!(e.contains("cuInit sees no GPU") && e.contains("--backend flex"), "{e}");
    }

    #[test]
    fn an_nvrtc_newer_than_the_driver_is_refused_naming_both() {
        let mut system = Fake::working(1);
        system.nvrtc.insert("libnvrtc.so.13".into(), CudaVersion { major: 13, minor: 1 });
        let e = error(&system, ONE);
        assert!(e.contains("NVRTC 13.1 (libnvrtc.so.13)") && e.contains("driver's CUDA 13.0"), "{e}");
        // Older or equal passes; an older major too (CUDA 12.8's NVRTC on a 13.0 driver).
        system.nvrtc.insert("libnvrtc.so.13".into(), CudaVersion { major: 12, minor: 8 });
        assert!(preflight(&system, ONE).unwrap().is_empty());
        // The library cudarc loads first is the one checked.
        system.libs.insert("libnvrtc.so".into());
        system.nvrtc.insert("libnvrtc.so".into(), CudaVersion { major: 13, minor: 2 });
        assert!(error(&system, ONE).contains("NVRTC 13.2 (libnvrtc.so)"));
        // A version the library does not tell is a warning.
        system.nvrtc.remove("libnvrtc.so");
        let warnings = preflight(&system, ONE).unwrap();
        assert!(warnings.len() == 1 && warnings[0].contains("libnvrtc.so loads but"), "{warnings:?}");
    }

    #[test]
    fn versions_are_reported_as_major_dot_minor() {
        assert_eq!(CudaVersion::from_driver(13000), V13_0);
        assert_eq!(CudaVersion::from_driver(12080).to_string(), "12.8");
        let v = versions(&Fake::working(1), Some("NVIDIA H200".into()));
        assert_eq!(v.driver_cuda.as_deref(), Some("13.0"));
        assert_eq!((v.nvrtc_library.as_deref(), v.nvrtc.as_deref()), (Some("libnvrtc.so.13"), Some("13.0")));
        assert!(v.f32_matmul.contains("tf32"));
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["gpu"], "NVIDIA H200");
    }

    #[test]
    fn a_stub_libcuda_on_the_library_path() {
        let mut system = Fake::working(1);
        system.vars.insert("LD_LIBRARY_PATH".into(), "/opt/x:/usr/local/cuda/lib64/stubs".into());
        system.files.insert("/usr/local/cuda/lib64/stubs/libcuda.so".into());
        let e = error(&system, ONE);
        assert!(e.contains("/usr/local/cuda/lib64/stubs") && e.contains("remove"), "{e}");
        // Found by the driver itself when the path does not show it.
        let system = Fake { gpus: Some(Err(DriverError::Call { call: "cuInit", code: 34 })), ..Fake::working(1) };
        let e = error(&system, ONE);
        assert!(e.contains("stub") && e.contains("LD_LIBRARY_PATH"), "{e}");
    }

    #[test]
    fn fewer_gpus_than_ranks() {
        let e = error(&Fake::working(1), CudaNeeds { gpus: 2, transfers: true });
        assert!(e.contains("expected 2 GPUs") && e.contains("found 1"), "{e}");
    }

    #[test]
    fn driver_errors_are_named() {
        let system = Fake { gpus: Some(Err(DriverError::Call { call: "cuInit", code: 100 })), ..Fake::working(1) };
        assert!(error(&system, ONE).contains("no GPU"));
        let system =
            Fake { gpus: Some(Err(DriverError::NotLoadable("libcuda.so.1: cannot open".into()))), ..Fake::working(1) };
        assert!(error(&system, ONE).contains("libcuda.so.1 does not load"));
        let system =
            Fake { gpus: Some(Err(DriverError::Call { call: "cuDeviceGetCount", code: 999 })), ..Fake::working(1) };
        assert!(error(&system, ONE).contains("cuDeviceGetCount failed with CUDA error 999"));
    }

    #[test]
    fn nvrtc_not_found_lists_the_names_tried() {
        let mut system = Fake::working(1);
        system.libs.remove("libnvrtc.so.13");
        let e = error(&system, ONE);
        assert!(
            e.contains("NVRTC") && nvrtc_names().iter().all(|n| e.contains(n.as_str())) && e.contains("install"),
            "{e}"
        );
    }

    #[test]
    fn cuda_headers_not_found() {
        let mut system = Fake::working(1);
        system.files.clear();
        let e = error(&system, ONE);
        assert!(e.contains("CUDA headers not found") && e.contains("CUDA_PATH"), "{e}");
        system.vars.insert("CUDA_PATH".into(), "/opt/toolkit".into());
        let e = error(&system, ONE);
        assert!(e.contains("/opt/toolkit/include/cuda_runtime.h is missing"), "{e}");
        system.files.insert("/opt/toolkit/include/cuda_runtime.h".into());
        preflight(&system, ONE).unwrap();
    }

    #[test]
    fn nccl_is_needed_only_between_gpus() {
        let mut system = Fake::working(2);
        system.libs.remove("libnccl.so");
        preflight(&system, CudaNeeds { gpus: 1, transfers: false }).unwrap();
        let e = error(&system, CudaNeeds { gpus: 2, transfers: true });
        assert!(e.contains("NCCL") && e.contains("libnccl.so.2"), "{e}");
    }

    #[test]
    fn this_machine_is_checked_for_real() {
        // Whatever this machine has, the answer is a clean one-line result.
        match preflight(&HostSystem, ONE) {
            Ok(warnings) => assert!(HostSystem.count_gpus().is_ok() && warnings.iter().all(|w| !w.contains('\n'))),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("--backend cuda:") && !e.contains('\n') && !e.contains("RecvError"), "{e}");
            }
        }
    }
}
