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

/// The candidate file names of library `stem` (`cudnn`, `cublasLt`) as cudarc 0.19 tries them
/// on Linux: the unversioned name, then the sonames of CUDA 13 down to 9 and 1.
pub fn candidate_names(stem: &str) -> Vec<String> {
    std::iter::once(format!("lib{stem}.so"))
        .chain(["13", "12", "11", "10", "9", "1"].iter().map(|v| format!("lib{stem}.so.{v}")))
        .collect()
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
            "libcudnn.so, libcudnn.so.13",
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
