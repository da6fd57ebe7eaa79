//! The cuDNN algorithm each convolution problem runs with, searched once per problem and kept
//! in a file beside CubeCL's kernel cache, so a second run neither searches nor autotunes its
//! convolutions (as PyTorch's `cudnn.benchmark` cache, kept across runs).
//!
//! The file is JSON: a format tag and version, the GPU and the cuDNN version it was searched
//! on, and one entry per problem ([`super::ConvProblem::key`]): the algorithm, the math type
//! cuDNN reported for it and its workspace in bytes, or `null` where no algorithm runs the
//! problem (it stays on CubeCL's kernels). A file that does not parse, has another format, or
//! an entry no cuDNN algorithm has, is damaged; one searched on another GPU or cuDNN is
//! foreign: either is set aside with one line of warning and the search starts afresh (a
//! choice measured elsewhere is no choice here). Writes replace the file whole (a temporary
//! file renamed over it), so a reader never sees half of one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::problem::ConvOp;

/// The file's name in a device's cache directory.
pub const FILE_NAME: &str = "cudnn-algorithms.json";

/// The format tag every file carries.
const FORMAT: &str = "owt cudnn algorithms";

/// The format's version.
const VERSION: u32 = 1;

/// What a search chose for one problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The algorithm (`cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t`).
    pub algo: u32,
    /// The math type cuDNN ran it with (`cudnnMathType_t`), set on the descriptor before each run.
    pub math_type: u32,
    /// Workspace bytes it needs.
    pub workspace: u64,
}

/// The GPU and cuDNN a cache's choices were measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The GPU's name, as the driver gives it.
    pub gpu: String,
    /// cuDNN's version (`cudnnGetVersion`: 90300 for 9.3.0).
    pub cudnn: u64,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} with cuDNN {}", self.gpu, version_name(self.cudnn))
    }
}

/// cuDNN's version number as cuDNN 9 writes it (`major * 10000 + minor * 100 + patch`).
pub fn version_name(v: u64) -> String {
    format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
}

#[derive(Serialize, Deserialize)]
struct File {
    format: String,
    version: u32,
    gpu: String,
    cudnn: u64,
    entries: BTreeMap<String, Option<Choice>>,
}

/// The algorithms chosen on one GPU with one cuDNN, by problem key, and the file they are
/// kept in.
#[derive(Debug, Clone, PartialEq)]
pub struct AlgorithmCache {
    identity: Identity,
    entries: BTreeMap<String, Option<Choice>>,
    path: Option<PathBuf>,
}

impl AlgorithmCache {
    /// An empty cache for `identity`, kept in `path` (or nowhere).
    pub fn empty(identity: Identity, path: Option<PathBuf>) -> Self {
        Self { identity, entries: BTreeMap::new(), path }
    }

    /// The cache in `path` for `identity`, and a one-line warning where the file was set aside:
    /// damaged, or foreign (searched on another GPU or cuDNN). A missing file is an empty cache
    /// without a warning.
    pub fn load(path: &Path, identity: Identity) -> (Self, Option<String>) {
        let empty = Self::empty(identity.clone(), Some(path.to_path_buf()));
        let text = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (empty, None),
            Err(e) => return (empty, Some(format!("cuDNN algorithm cache {}: {e}; searching afresh", path.display()))),
        };
        match Self::parse(&text, &identity) {
            Ok(entries) => (Self { entries, ..empty }, None),
            Err(why) => (empty, Some(format!("cuDNN algorithm cache {}: {why}; searching afresh", path.display()))),
        }
    }

    /// The entries of a file's bytes, or why they are set aside ("damaged: ...", "written for
    /// ...").
    fn parse(bytes: &[u8], identity: &Identity) -> Result<BTreeMap<String, Option<Choice>>, String> {
        let file: File = serde_json::from_slice(bytes).map_err(|e| format!("damaged ({e})"))?;
        if file.format != FORMAT || file.version != VERSION {
            return Err(format!(
                "damaged (format {:?} version {}, expected {FORMAT:?} version {VERSION})",
                file.format, file.version
            ));
        }
        let found = Identity { gpu: file.gpu, cudnn: file.cudnn };
        if &found != identity {
            return Err(format!("written for {found}, this is {identity}"));
        }
        for (key, choice) in &file.entries {
            check_entry(key, choice.as_ref()).map_err(|why| format!("damaged ({why})"))?;
        }
        Ok(file.entries)
    }

    /// What the cache holds for `key`: `None` if it was never searched, `Some(None)` where no
    /// algorithm runs it.
    pub fn get(&self, key: &str) -> Option<Option<Choice>> {
        self.entries.get(key).copied()
    }

    /// Records what the search found for `key`.
    pub fn insert(&mut self, key: String, choice: Option<Choice>) {
        self.entries.insert(key, choice);
    }

    /// Problems searched.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was searched.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let file = File {
            format: FORMAT.into(),
            version: VERSION,
            gpu: self.identity.gpu.clone(),
            cudnn: self.identity.cudnn,
            entries: self.entries.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).expect("the cache serialises");
        bytes.push(b'\n');
        bytes
    }

    /// Writes the cache to its file, whole (a temporary file in the same directory renamed
    /// over it); nothing where it has no file.
    pub fn save(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let partial = path.with_extension(format!("json.partial-{}", std::process::id()));
        std::fs::write(&partial, self.to_bytes())?;
        std::fs::rename(&partial, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&partial);
        })
    }
}

/// Whether an entry names an algorithm cuDNN has for its key's computation and a math type
/// cuDNN has.
fn check_entry(key: &str, choice: Option<&Choice>) -> Result<(), String> {
    let op = [ConvOp::Forward, ConvOp::BackwardData, ConvOp::BackwardFilter]
        .into_iter()
        .find(|op| key.split(' ').next() == Some(op.name()))
        .ok_or_else(|| format!("entry {key:?} names no convolution computation"))?;
    let Some(choice) = choice else { return Ok(()) };
    if choice.algo >= algorithm_count(op) {
        return Err(format!(
            "entry {key:?}: algorithm {} of {} has only {}",
            choice.algo,
            op.name(),
            algorithm_count(op)
        ));
    }
    if choice.math_type > 3 {
        return Err(format!("entry {key:?}: math type {} is none of cuDNN's 0..=3", choice.math_type));
    }
    Ok(())
}

/// How many algorithms cuDNN 9 has for `op` (`CUDNN_CONVOLUTION_*_ALGO_COUNT`).
pub fn algorithm_count(op: ConvOp) -> u32 {
    match op {
        ConvOp::Forward => 8,
        ConvOp::BackwardData => 6,
        ConvOp::BackwardFilter => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> Identity {
        Identity { gpu: "NVIDIA H200".into(), cudnn: 91000 }
    }

    const KEY: &str =
        "fwd f32 tf32 x 2.3.8.8/192.64.8.1 w 4.3.3.3 y 2.4.6.6/144.36.6.1 pad 0.0 stride 1.1 dil 1.1 groups 1";

    #[test]
    fn a_saved_cache_loads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join(FILE_NAME);
        let mut cache = AlgorithmCache::empty(h200(), Some(path.clone()));
        cache.insert(KEY.into(), Some(Choice { algo: 1, math_type: 0, workspace: 4096 }));
        cache.insert(KEY.replacen("fwd", "bwd-filter", 1), None);
        cache.save().unwrap();
        let (loaded, warning) = AlgorithmCache::load(&path, h200());
        assert_eq!(warning, None);
        assert_eq!(loaded, cache);
        assert_eq!(loaded.get(KEY), Some(Some(Choice { algo: 1, math_type: 0, workspace: 4096 })));
        assert_eq!(loaded.get(&KEY.replacen("fwd", "bwd-filter", 1)), Some(None));
        assert_eq!(loaded.get("fwd other"), None);
        // Nothing but the file is left in the directory.
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(FILE_NAME)]);
    }

    #[test]
    fn a_missing_file_is_an_empty_cache_without_a_word() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, warning) = AlgorithmCache::load(&dir.path().join(FILE_NAME), h200());
        assert!(cache.is_empty());
        assert_eq!(warning, None);
    }

    fn load_bytes(bytes: &[u8]) -> (AlgorithmCache, Option<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, bytes).unwrap();
        AlgorithmCache::load(&path, h200())
    }

    #[test]
    fn a_damaged_file_is_set_aside_in_one_line() {
        let mut good = AlgorithmCache::empty(h200(), None);
        good.insert(KEY.into(), Some(Choice { algo: 7, math_type: 3, workspace: 0 }));
        let text = String::from_utf8(good.to_bytes()).unwrap();
        let truncated = &text.as_bytes()[..text.len() / 2];
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (truncated.to_vec(), "damaged"),
            (b"\x00\x01garbage".to_vec(), "damaged"),
            (text.replace("owt cudnn algorithms", "something else").into_bytes(), "expected \"owt cudnn algorithms\""),
            (text.replace("\"version\": 1", "\"version\": 2").into_bytes(), "version 2"),
            // Forward has 8 algorithms (0..=7); 8 is none.
            (text.replace("\"algo\": 7", "\"algo\": 8").into_bytes(), "algorithm 8 of fwd has only 8"),
            (text.replace("\"math_type\": 3", "\"math_type\": 9").into_bytes(), "math type 9"),
            (text.replace("fwd f32", "sideways f32").into_bytes(), "names no convolution computation"),
        ];
        for (bytes, says) in cases {
            let (cache, warning) = load_bytes(&bytes);
            assert!(cache.is_empty());
            let warning = warning.expect("a warning");
            assert!(warning.contains(says) && warning.contains("searching afresh"), "{warning}");
            assert!(!warning.contains('\n'), "one line: {warning}");
        }
    }

    #[test]
    fn a_file_from_another_gpu_or_cudnn_is_foreign() {
        for other in [
            Identity { gpu: "NVIDIA H100 80GB HBM3".into(), cudnn: 91000 },
            Identity { gpu: "NVIDIA H200".into(), cudnn: 90300 },
        ] {
            let mut theirs = AlgorithmCache::empty(other.clone(), None);
            theirs.insert(KEY.into(), Some(Choice { algo: 1, math_type: 0, workspace: 0 }));
            let (cache, warning) = load_bytes(&theirs.to_bytes());
            assert!(cache.is_empty());
            let warning = warning.unwrap();
            assert!(
                warning.contains(&format!("written for {other}, this is NVIDIA H200 with cuDNN 9.10.0")),
                "{warning}"
            );
        }
    }
}
