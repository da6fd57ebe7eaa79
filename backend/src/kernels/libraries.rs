//! The vendor libraries owt loads at run time where a machine has them (cuDNN, cuBLASLt), how
//! they are looked for, and the one line that says what was looked for and where when one is
//! missing. They are loaded as cudarc loads them (`dlopen` of each candidate name, so the
//! dynamic loader's own search applies: `LD_LIBRARY_PATH`, the loader's cache, the system's
//! library directories); nothing is linked at build time, so a build with CUDA runs on a machine
//! without them, on CubeCL's kernels.

/// A library owt may load, and the file names it tries, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// What the library is, in words (`cuDNN`).
    pub what: &'static str,
    /// The file names tried, in order (cudarc's candidates on Linux).
    pub names: Vec<String>,
    /// Where a user typically gets it, for the line that says it is missing.
    pub hint: &'static str,
}

/// The CUDA version (major, minor) cudarc was built for, whose library names it tries first:
/// read off cudarc's own list where it is compiled in (the `cuda` feature), else 13.0 (what a
/// build without a CUDA toolkit gets: cudarc's `fallback-latest`, whose names start at 13).
pub fn cuda_version() -> (u32, u32) {
    #[cfg(feature = "cuda")]
    if let Some(version) = version_of(&cudarc::get_lib_name_candidates("x")) {
        return version;
    }
    (13, 0)
}

/// The CUDA version a list of cudarc's candidates for a library named `x` was made for: the
/// major from its soname entry (`libx.so.<major>`, the twelfth), the minor from the entry that
/// joins them (`libx64_<major><minor>.so`, the fourth).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn version_of(names: &[String]) -> Option<(u32, u32)> {
    let major = names.get(11)?.strip_prefix("libx.so.")?;
    let joined = names.get(3)?.strip_prefix("libx64_")?.strip_suffix(".so")?;
    let minor = joined.strip_prefix(major)?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The candidate file names of library `stem` (`cudnn`, `cublasLt`, `nvrtc`, `nccl`) in the
/// order cudarc 0.19 tries them on Linux for a build of CUDA `version` (`get_lib_name_candidates`:
/// the plain name, Windows-style names, the build's major soname, then 12 down to 9 and 1).
pub fn candidate_names_for(stem: &str, version: (u32, u32)) -> Vec<String> {
    let (major, minor) = version;
    let lib = |tail: String| format!("lib{stem}{tail}");
    vec![
        lib(".so".into()),
        lib("64.so".into()),
        lib(format!("64_{major}.so")),
        lib(format!("64_{major}{minor}.so")),
        lib(format!("64_{major}{minor}_0.so")),
        lib(format!("64_{major}0_{minor}.so")),
        lib("64_10.so".into()),
        lib("64_11.so".into()),
        lib("64_12.so".into()),
        lib(format!("64_{major}0_0.so")),
        lib("64_9.so".into()),
        lib(format!(".so.{major}")),
        lib(".so.12".into()),
        lib(".so.11".into()),
        lib(".so.10".into()),
        lib(".so.9".into()),
        lib(".so.1".into()),
    ]
}

/// [`candidate_names_for`] the CUDA version cudarc was built for ([`cuda_version`]): the names
/// a library is loaded by, so owt finds what cudarc will load and nothing it will not.
pub fn candidate_names(stem: &str) -> Vec<String> {
    candidate_names_for(stem, cuda_version())
}

impl Library {
    /// cuDNN (pip's `nvidia-cudnn-cu13` puts `libcudnn.so.9` under `site-packages/nvidia/cudnn/lib`).
    pub fn cudnn() -> Library {
        Library {
            what: "cuDNN",
            names: candidate_names("cudnn"),
            hint: "pip's nvidia-cudnn-cu13 installs it in site-packages/nvidia/cudnn/lib; add that directory to LD_LIBRARY_PATH",
        }
    }

    /// cuBLASLt (pip's `nvidia-cublas` puts `libcublasLt.so.13` under `site-packages/nvidia/cu13/lib`
    /// or `nvidia/cublas/lib`; the CUDA toolkit under `targets/x86_64-linux/lib`).
    pub fn cublaslt() -> Library {
        Library {
            what: "cuBLASLt",
            names: candidate_names("cublasLt"),
            hint: "the CUDA toolkit has it in targets/x86_64-linux/lib, pip's nvidia-cublas in site-packages/nvidia/cublas/lib (or nvidia/cu13/lib); add that directory to LD_LIBRARY_PATH",
        }
    }
}

/// What looking for libraries reads of the machine.
pub trait Loader {
    /// Whether a shared library of this file name loads.
    fn loads(&self, name: &str) -> bool;
    /// An environment variable.
    fn var(&self, name: &str) -> Option<String>;
}

/// A library that was looked for and not found: what, under which names, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    /// The library, in words.
    pub what: &'static str,
    /// The names tried.
    pub names: Vec<String>,
    /// `LD_LIBRARY_PATH` as it was.
    pub ld_library_path: Option<String>,
    /// Where to get it.
    pub hint: &'static str,
}

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = match self.ld_library_path.as_deref().filter(|p| !p.is_empty()) {
            Some(p) => format!("LD_LIBRARY_PATH={p}"),
            None => "LD_LIBRARY_PATH (unset)".into(),
        };
        write!(
            f,
            "no {} (looked for {} in {path} and the system's library directories; {})",
            self.what,
            self.names.join(", "),
            self.hint
        )
    }
}

/// The first of `library`'s names that loads, or what was looked for and where.
pub fn find(library: &Library, loader: &dyn Loader) -> Result<String, NotFound> {
    library.names.iter().find(|name| loader.loads(name)).cloned().ok_or_else(|| NotFound {
        what: library.what,
        names: library.names.clone(),
        ld_library_path: loader.var("LD_LIBRARY_PATH"),
        hint: library.hint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The loader's search over directories of files: a name loads when one of the
    /// `LD_LIBRARY_PATH` directories holds a file of that name.
    struct Directories(String);

    impl Loader for Directories {
        fn loads(&self, name: &str) -> bool {
            std::env::split_paths(&self.0).any(|dir: PathBuf| dir.join(name).is_file())
        }
        fn var(&self, name: &str) -> Option<String> {
            (name == "LD_LIBRARY_PATH").then(|| self.0.clone())
        }
    }

    #[test]
    fn names_follow_the_cuda_major_a_build_was_made_for() {
        let cuda13 = candidate_names_for("cudnn", (13, 0));
        let cuda12 = candidate_names_for("cudnn", (12, 8));
        assert_eq!(cuda13.len(), 17);
        // Under CUDA 13 the major soname comes right after the Windows-style names; a build for
        // CUDA 12 never tries .so.13 (pip's cu13 wheels' cuBLASLt does not load there).
        assert!(cuda13.iter().position(|n| n == "libcudnn.so.13") < cuda13.iter().position(|n| n == "libcudnn.so.12"));
        assert!(!cuda12.iter().any(|n| n.ends_with(".so.13")), "{cuda12:?}");
        assert_eq!(cuda12.iter().filter(|n| *n == "libcudnn.so.12").count(), 2, "cudarc's list repeats it");
        assert!(cuda12.contains(&"libcudnn64_128.so".to_string()));
        // The version comes back off the list it made.
        let x = candidate_names_for("x", (12, 8));
        assert_eq!(version_of(&x), Some((12, 8)));
        assert_eq!(version_of(&candidate_names_for("x", (13, 10))), Some((13, 10)));
        assert_eq!(version_of(&["libx.so".to_string()]), None);
    }

    #[test]
    fn a_library_in_a_searched_directory_is_found_by_its_first_name_present() {
        let (empty, lib) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(lib.path().join("libcudnn.so.9"), b"").unwrap();
        std::fs::write(lib.path().join("libcudnn.so.1"), b"").unwrap();
        let path = std::env::join_paths([empty.path(), lib.path()]).unwrap().into_string().unwrap();
        assert_eq!(find(&Library::cudnn(), &Directories(path)), Ok("libcudnn.so.9".to_string()));
    }

    #[test]
    fn a_missing_library_is_said_in_one_line_naming_names_and_places() {
        let empty = tempfile::tempdir().unwrap();
        let path = empty.path().display().to_string();
        let missing = find(&Library::cudnn(), &Directories(path.clone())).unwrap_err();
        let line = missing.to_string();
        assert!(!line.contains('\n'));
        for part in [
            "no cuDNN",
            "libcudnn.so, libcudnn64.so",
            "libcudnn.so.9",
            &format!("LD_LIBRARY_PATH={path}"),
            "nvidia/cudnn/lib",
        ] {
            assert!(line.contains(part), "{part:?} in {line}");
        }
        // A file of another library does not count.
        std::fs::write(empty.path().join("libcublasLt.so.13"), b"").unwrap();
        assert!(find(&Library::cudnn(), &Directories(path.clone())).is_err());
        assert_eq!(find(&Library::cublaslt(), &Directories(path)), Ok("libcublasLt.so.13".to_string()));
        let unset = NotFound { ld_library_path: None, ..missing };
        assert!(unset.to_string().contains("LD_LIBRARY_PATH (unset)"));
    }
}
