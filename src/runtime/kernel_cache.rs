//! CubeCL's caches in one fixed place, whatever the working directory, one directory per
//! kind of device: autotune results and compiled kernels (CUDA PTX, Vulkan SPIR-V) go under
//! [`device_dir`] (`$OWT_CACHE_DIR`, else the user's cache directory: `~/.cache/owt/cubecl`),
//! so a second run starts warm. Left alone, CubeCL puts its autotune cache in the `target/` of
//! the nearest `Cargo.toml` above the working directory (a different cache per place the tool
//! runs from), compiles every kernel again at each start, and keys both by device index only
//! (a cache shared by two GPU models would hand one the other's choices).
//!
//! A first run on a known kind of device need not autotune either: `kernel-cache/<class>/`
//! in the source tree holds autotune results recorded on such devices (see its README), built
//! into the binary and copied into the cache where it has no file of that name ([`seed`]).
//! CubeCL checks every entry against its candidate kernels and tunes again where they differ.
//!
//! A `cubecl.toml` the user wrote and the `CUBECL_*` environment variables still apply; only
//! the two locations they leave at CubeCL's defaults are changed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

mod seeds {
    include!(concat!(env!("OUT_DIR"), "/kernel_cache_seeds.rs"));
}

/// Where owt keeps CubeCL's caches, reading the environment through `var`: `$OWT_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/owt/cubecl`, else `$HOME/.cache/owt/cubecl`, with the owt version
/// appended (a new owt may compile different kernels under the same names).
pub fn cache_dir_from(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let base = var("OWT_CACHE_DIR").map(PathBuf::from).unwrap_or_else(|| {
        var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir)
            .join("owt")
            .join("cubecl")
    });
    base.join(env!("CARGO_PKG_VERSION"))
}

/// [`cache_dir_from`] this process's environment.
pub fn cache_dir() -> PathBuf {
    cache_dir_from(|name| std::env::var_os(name))
}

/// The directory name of a device class, in the cache and under `kernel-cache/` alike: any
/// character other than letters, digits, `-`, `_` and `.` becomes `-` (the driver's "NVIDIA
/// H200" is class `cuda-NVIDIA H200`, directory `cuda-NVIDIA-H200`).
pub fn class_dir_name(class: &str) -> String {
    class.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect()
}

/// The cache directory of one kind of device (`wgpu-cpu`, `cuda-NVIDIA-H200`, ...), named by
/// [`class_dir_name`].
pub fn device_dir(class: &str) -> PathBuf {
    cache_dir().join(class_dir_name(class))
}

/// The seed files built into this binary for device class `class`: (path under the class's
/// cache directory, contents).
pub fn seeds(class: &str) -> Vec<(&'static str, &'static [u8])> {
    seeds_of(seeds::SEEDS, class)
}

/// Of `all` (paths under `kernel-cache/`, contents), the seeds of device class `class`, found
/// under its [`class_dir_name`].
fn seeds_of(all: &[(&'static str, &'static [u8])], class: &str) -> Vec<(&'static str, &'static [u8])> {
    let prefix = format!("{}/", class_dir_name(class));
    all.iter().filter_map(|(path, bytes)| path.strip_prefix(prefix.as_str()).map(|p| (p, *bytes))).collect()
}

/// Copies the seeds of `class` into `dir` where `dir` has no file of that name (what CubeCL
/// learned on this machine is never overwritten). Returns how many files were written.
pub fn seed(dir: &Path, class: &str) -> std::io::Result<usize> {
    write_seeds(dir, &seeds(class))
}

/// Writes `seeds` (path under `dir`, contents) where `dir` has no file of that name.
fn write_seeds(dir: &Path, seeds: &[(&str, &[u8])]) -> std::io::Result<usize> {
    let mut written = 0;
    for &(path, bytes) in seeds {
        let target = dir.join(path);
        if target.exists() {
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // Written whole then renamed, so a concurrent CubeCL never reads half a file.
        let partial = target.with_extension(format!("seed-{}", std::process::id()));
        std::fs::write(&partial, bytes)?;
        std::fs::rename(&partial, &target)?;
        written += 1;
    }
    Ok(written)
}

/// Points CubeCL's autotune and compilation caches at [`device_dir`]`(class)`, seeded, before
/// any GPU device starts (CubeCL reads its configuration once). Does nothing if CubeCL's
/// configuration was read already (a device started earlier in this process) or if the
/// directory cannot be created (CubeCL then uses its defaults, with a warning). Returns the
/// directory when it took effect.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub fn configure(class: &str) -> Option<PathBuf> {
    use burn_cubecl::cubecl::config::cache::CacheConfig;
    use burn_cubecl::cubecl::config::CubeClRuntimeConfig;
    use cubecl_common::config::RuntimeConfig;

    static DONE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        if CubeClRuntimeConfig::storage().lock().is_some() {
            return None;
        }
        let dir = device_dir(class);
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| seed(&dir, class)) {
            crate::err_line!("warning: kernel cache {}: {e}; kernels are compiled and tuned afresh", dir.display());
            return None;
        }
        let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
        if matches!(config.autotune.cache, CacheConfig::Target) {
            config.autotune.cache = CacheConfig::File(dir.clone());
        }
        if config.compilation.cache.is_none() {
            config.compilation.cache = Some(CacheConfig::File(dir.clone()));
        }
        let mut storage = CubeClRuntimeConfig::storage().lock();
        if storage.is_some() {
            return None;
        }
        *storage = Some(std::sync::Arc::new(config));
        Some(dir)
    })
    .clone()
}

/// The kinds of the wgpu adapters CubeCL can use on this machine (Vulkan, Metal, DX12; empty when
/// there is no such driver). OpenGL adapters (Mesa llvmpipe over EGL) do not count: CubeCL does not
/// run on them.
#[cfg(feature = "wgpu")]
pub fn wgpu_adapters() -> Vec<wgpu::DeviceType> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = cubecl_common::future::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    adapters.iter().map(|a| a.get_info().device_type).collect()
}

/// The device class of wgpu adapters of these kinds: `wgpu-cpu` when every adapter is a CPU
/// (Mesa lavapipe on a machine without a GPU, where the default device is that CPU), else
/// `wgpu`.
#[cfg(feature = "wgpu")]
pub fn wgpu_class(adapters: &[wgpu::DeviceType]) -> String {
    let cpu_only = !adapters.is_empty() && adapters.iter().all(|t| *t == wgpu::DeviceType::Cpu);
    if cpu_only { "wgpu-cpu" } else { "wgpu" }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_directory_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
        };
        let v = env!("CARGO_PKG_VERSION");
        assert_eq!(cache_dir_from(env(&[("OWT_CACHE_DIR", "/c"), ("HOME", "/h")])), PathBuf::from(format!("/c/{v}")));
        assert_eq!(
            cache_dir_from(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            PathBuf::from(format!("/x/owt/cubecl/{v}"))
        );
        assert_eq!(cache_dir_from(env(&[("HOME", "/h")])), PathBuf::from(format!("/h/.cache/owt/cubecl/{v}")));
        assert!(device_dir("cuda-NVIDIA H200 (SXM)").ends_with("cuda-NVIDIA-H200--SXM-"));
    }

    #[test]
    fn seeds_fill_gaps_and_never_overwrite() {
        // The lavapipe seeds ship with owt (kernel-cache/wgpu-cpu).
        let class = "wgpu-cpu";
        let ours = seeds(class);
        assert!(ours.len() > 1, "the {class} seeds are built in");
        assert!(
            ours.iter().all(|(p, _)| p.starts_with("autotune/")),
            "{:?}",
            ours.iter().map(|s| s.0).collect::<Vec<_>>()
        );
        let dir = tempfile::tempdir().unwrap();
        let (kept, _) = ours[0];
        std::fs::create_dir_all(dir.path().join(kept).parent().unwrap()).unwrap();
        std::fs::write(dir.path().join(kept), b"learned here").unwrap();
        assert_eq!(seed(dir.path(), class).unwrap(), ours.len() - 1);
        assert_eq!(std::fs::read(dir.path().join(kept)).unwrap(), b"learned here");
        for (path, bytes) in &ours[1..] {
            assert_eq!(std::fs::read(dir.path().join(path)).unwrap(), *bytes, "{path}");
        }
        assert_eq!(seed(dir.path(), class).unwrap(), 0, "a second start writes nothing");
        assert!(seeds("no-such-device").is_empty());
    }

    #[test]
    fn a_cuda_gpus_seeds_are_found_by_the_name_its_driver_gives() {
        // As `kernel-cache/cuda-NVIDIA-Fake-X1/` would hold them after a harvest (README),
        // beside the lavapipe seeds; the class is what backends.rs makes of the driver's name.
        let autotune = "autotune/0.10.0/device-0-0-cuda/burn_cubecl-kernel-matmul-tune-base.json.log";
        let all: Vec<(&'static str, &'static [u8])> = vec![
            (
                "cuda-NVIDIA-Fake-X1/autotune/0.10.0/device-0-0-cuda/burn_cubecl-kernel-matmul-tune-base.json.log",
                b"{\"tuned\":1}",
            ),
            ("cuda-NVIDIA-Other/autotune/0.10.0/device-0-0-cuda/x.json.log", b"other"),
            ("wgpu-cpu/autotune/0.10.0/device-4-0-wgpu_spirv_/y.json.log", b"lavapipe"),
        ];
        let class = format!("cuda-{}", "NVIDIA Fake X1");
        let found = seeds_of(&all, &class);
        assert_eq!(found, vec![(autotune, &b"{\"tuned\":1}"[..])]);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(write_seeds(dir.path(), &found).unwrap(), 1);
        assert_eq!(std::fs::read(dir.path().join(autotune)).unwrap(), b"{\"tuned\":1}");
        assert_eq!(write_seeds(dir.path(), &found).unwrap(), 0, "never overwritten");
        // The cache directory and the seed directory have one name.
        assert!(device_dir(&class).ends_with(class_dir_name(&class)));
        assert_eq!(class_dir_name(&class), "cuda-NVIDIA-Fake-X1");
        // The lavapipe seeds built in are found the same way.
        assert_eq!(seeds_of(seeds::SEEDS, "wgpu-cpu"), seeds("wgpu-cpu"));
    }
}
