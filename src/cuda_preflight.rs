//! Checks, before CubeCL is asked for a GPU, that CUDA can start here, and says in one line
//! what to fix when it cannot. CubeCL starts each GPU on a worker thread; when that fails the
//! caller only sees the worker hang up, so every cause we can recognise is checked first: the
//! driver, a stub `libcuda`, the number of GPUs, NVRTC (CUDA's run-time compiler, which
//! CubeCL loads by name), the CUDA headers NVRTC compiles against, and NCCL when ranks sit on
//! distinct GPUs.
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

/// Names cudarc (CubeCL's CUDA binding) tries for NVRTC on Linux, in its order.
pub const NVRTC_NAMES: [&str; 7] = [
    "libnvrtc.so",
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so.11",
    "libnvrtc.so.10",
    "libnvrtc.so.9",
    "libnvrtc.so.1",
];

/// Names cudarc tries for NCCL on Linux. It does not try NCCL's own soname `libnccl.so.2`.
pub const NCCL_NAMES: [&str; 7] =
    ["libnccl.so", "libnccl.so.13", "libnccl.so.12", "libnccl.so.11", "libnccl.so.10", "libnccl.so.9", "libnccl.so.1"];

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

/// Checks everything a CUDA run needs; the first problem found, as a one-line error.
pub fn preflight(system: &dyn CudaSystem, needs: CudaNeeds) -> Result<(), OwtError> {
    if !system.driver_loaded() {
        return Err(OwtError::backend(format!(
            "--backend cuda: expected an NVIDIA GPU with its driver, found none ({DRIVER_VERSION_FILE} is missing); install the NVIDIA driver or use --backend flex"
        )));
    }
    let stubs = stub_dirs(system);
    if !stubs.is_empty() {
        return Err(OwtError::backend(stub_message(&stubs)));
    }
    let found = system.count_gpus().map_err(|e| match e {
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
    if !NVRTC_NAMES.iter().any(|n| system.loads(n)) {
        return Err(OwtError::backend(format!(
            "--backend cuda: NVRTC (CUDA's run-time compiler) not found: tried {}; install it (CUDA toolkit `cuda-nvrtc`, or `pip install nvidia-cuda-nvrtc`) and add its lib directory to LD_LIBRARY_PATH",
            NVRTC_NAMES.join(", ")
        )));
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
    if needs.transfers && !NCCL_NAMES.iter().any(|n| system.loads(n)) {
        return Err(OwtError::backend(format!(
            "--backend cuda: NCCL not found (tensors move between GPUs through it): tried {}; install NCCL and, if only libnccl.so.2 exists, link it as libnccl.so in a directory on LD_LIBRARY_PATH",
            NCCL_NAMES.join(", ")
        )));
    }
    Ok(())
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
            let lib = libloading::Library::new("libcuda.so.1")
                .or_else(|_| libloading::Library::new("libcuda.so"))
                .map_err(|e| DriverError::NotLoadable(e.to_string()))?;
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
    }

    impl Fake {
        /// A working machine with `gpus` GPUs, NVRTC, NCCL and the toolkit in /usr/local/cuda.
        fn working(gpus: usize) -> Self {
            let mut f = Fake { driver: true, gpus: Some(Ok(gpus)), ..Default::default() };
            f.files.insert("/usr/local/cuda".into());
            f.files.insert("/usr/local/cuda/include/cuda_runtime.h".into());
            f.libs.insert("libnvrtc.so.13".into());
            f.libs.insert("libnccl.so".into());
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
        preflight(&Fake::working(2), CudaNeeds { gpus: 2, transfers: true }).unwrap();
    }

    #[test]
    fn no_driver() {
        let e = error(&Fake { driver: false, ..Fake::working(1) }, ONE);
        assert!(e.contains("driver") && e.contains(DRIVER_VERSION_FILE) && e.contains("--backend flex"), "{e}");
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
        assert!(e.contains("NVRTC") && NVRTC_NAMES.iter().all(|n| e.contains(n)) && e.contains("install"), "{e}");
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
            Ok(()) => assert!(HostSystem.driver_loaded()),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("--backend cuda:") && !e.contains('\n') && !e.contains("RecvError"), "{e}");
            }
        }
    }
}
