//! The cuDNN algorithm each convolution problem runs with, searched once per problem and kept
//! in a file beside CubeCL's kernel cache, so a second run neither searches nor autotunes its
//! convolutions (as PyTorch's `cudnn.benchmark` cache, kept across runs).
//!
//! The file is JSON: a format tag and version, then one section per GPU and cuDNN version the
//! choices were measured on ([`Identity`]), each with one entry per problem
//! ([`super::ConvProblem::key`]): the algorithm, the math type cuDNN reported for it and its
//! workspace in bytes, or `null` where no algorithm runs the problem (it stays on CubeCL's
//! kernels). A run reads the section of each of its GPUs (two GPU models in one machine keep
//! apart) and leaves the others as they are. A file that does not parse, has another format,
//! or holds an entry cuDNN cannot have (an algorithm past the computation's count, a math type
//! past cuDNN's, a workspace over [`MAX_WORKSPACE`], a non-deterministic algorithm under a
//! deterministic key) is damaged: set aside with one line of warning, the search starts afresh.
//!
//! Writes merge: the file is read again under a lock beside it, this process's entries are laid
//! over it (and the entries it forgot, whose choices failed here, taken out), and the result
//! replaces the file whole (a temporary file renamed over it). Several processes of one job
//! (one per GPU) therefore keep every entry each of them searched, and a reader never sees half
//! of a file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::problem::ConvOp;

/// The file's name in a device's cache directory.
pub const FILE_NAME: &str = "cudnn-algorithms.json";

/// The format tag every file carries.
const FORMAT: &str = "owt cudnn algorithms";

/// The format's version (1: one GPU per file, keys without alignment).
const VERSION: u32 = 2;

/// The most workspace an entry may name: what a search lets an algorithm use (PyTorch caps its
/// search by the largest free block; an algorithm needing more is not worth its memory here).
pub const MAX_WORKSPACE: u64 = 1 << 30;

/// What a search chose for one problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The algorithm (`cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t`).
    pub algo: u32,
    /// The math type cuDNN ran it with (`cudnnMathType_t`), set on the descriptor before each run.
    pub math_type: u32,
    /// Workspace bytes it needs.
    pub workspace: u64,
    /// Whether cuDNN is handed packed copies of the input and output (gradient) rather than
    /// CubeCL's pitched tensors (the search found a packed layout faster, or the algorithm runs
    /// only on packed tensors). Absent in files written before it existed: pitched.
    #[serde(default)]
    pub packed: bool,
}

/// The GPU and cuDNN a section's choices were measured on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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

/// One GPU's entries, as the file holds them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Section {
    gpu: String,
    cudnn: u64,
    entries: BTreeMap<String, Option<Choice>>,
}

#[derive(Serialize, Deserialize)]
struct File {
    format: String,
    version: u32,
    sections: Vec<Section>,
}

/// The version of a file of any format version, read first.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

/// The algorithms chosen, by GPU and problem key, and the file they are kept in.
#[derive(Debug, Clone, PartialEq)]
pub struct AlgorithmCache {
    sections: BTreeMap<Identity, BTreeMap<String, Option<Choice>>>,
    /// Entries this process took out (their choices failed here), kept out when merging.
    forgotten: BTreeSet<(Identity, String)>,
    path: Option<PathBuf>,
}

impl AlgorithmCache {
    /// An empty cache, kept in `path` (or nowhere).
    pub fn empty(path: Option<PathBuf>) -> Self {
        Self { sections: BTreeMap::new(), forgotten: BTreeSet::new(), path }
    }

    /// The cache in `path`, and a one-line warning where the file was set aside (damaged, or
    /// of another version). A missing file is an empty cache without a warning.
    pub fn load(path: &Path) -> (Self, Option<String>) {
        let empty = Self::empty(Some(path.to_path_buf()));
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (empty, None),
            Err(e) => return (empty, Some(format!("cuDNN algorithm cache {}: {e}; searching afresh", path.display()))),
        };
        match parse(&bytes) {
            Ok(sections) => (Self { sections, ..empty }, None),
            Err(why) => (empty, Some(format!("cuDNN algorithm cache {}: {why}; searching afresh", path.display()))),
        }
    }

    /// What the cache holds for `key` on `gpu`: `None` if it was never searched, `Some(None)`
    /// where no algorithm runs it.
    pub fn get(&self, gpu: &Identity, key: &str) -> Option<Option<Choice>> {
        self.sections.get(gpu)?.get(key).copied()
    }

    /// Records what a search on `gpu` found for `key`.
    pub fn insert(&mut self, gpu: &Identity, key: String, choice: Option<Choice>) {
        self.forgotten.remove(&(gpu.clone(), key.clone()));
        self.sections.entry(gpu.clone()).or_default().insert(key, choice);
    }

    /// Takes `key` out for `gpu` (its choice failed here), in the file too at the next save.
    pub fn forget(&mut self, gpu: &Identity, key: &str) {
        if let Some(entries) = self.sections.get_mut(gpu) {
            entries.remove(key);
        }
        self.forgotten.insert((gpu.clone(), key.to_string()));
    }

    /// Problems searched, on every GPU.
    pub fn len(&self) -> usize {
        self.sections.values().map(BTreeMap::len).sum()
    }

    /// Whether nothing was searched.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let sections = self
            .sections
            .iter()
            .filter(|(_, entries)| !entries.is_empty())
            .map(|(id, entries)| Section { gpu: id.gpu.clone(), cudnn: id.cudnn, entries: entries.clone() })
            .collect();
        let file = File { format: FORMAT.into(), version: VERSION, sections };
        let mut bytes = serde_json::to_vec_pretty(&file).expect("the cache serialises");
        bytes.push(b'\n');
        bytes
    }

    /// Writes the cache to its file, merged with what the file holds now (read under a lock
    /// file beside it, so two processes saving at once both keep their entries; a damaged file
    /// is replaced); nothing where it has no file.
    pub fn save(&mut self) -> std::io::Result<()> {
        let Some(path) = self.path.clone() else { return Ok(()) };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let lock = std::fs::File::create(path.with_extension("json.lock"))?;
        lock.lock()?;
        if let Ok(bytes) = std::fs::read(&path) {
            if let Ok(theirs) = parse(&bytes) {
                self.merge_under(theirs);
            }
        }
        let partial = path.with_extension(format!("json.partial-{}", std::process::id()));
        std::fs::write(&partial, self.to_bytes())?;
        std::fs::rename(&partial, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&partial);
        })
    }

    /// Lays this cache over `theirs` (this process's entries win; those it forgot stay out).
    fn merge_under(&mut self, mut theirs: BTreeMap<Identity, BTreeMap<String, Option<Choice>>>) {
        for (id, key) in &self.forgotten {
            if let Some(entries) = theirs.get_mut(id) {
                entries.remove(key);
            }
        }
        for (id, entries) in std::mem::take(&mut self.sections) {
            theirs.entry(id).or_default().extend(entries);
        }
        self.sections = theirs;
    }
}

/// The sections of a file's bytes, or why they are set aside ("damaged: ...", "version ...").
fn parse(bytes: &[u8]) -> Result<BTreeMap<Identity, BTreeMap<String, Option<Choice>>>, String> {
    let header: Header = serde_json::from_slice(bytes).map_err(|e| format!("damaged ({e})"))?;
    if header.format != FORMAT {
        return Err(format!("damaged (format {:?}, expected {FORMAT:?})", header.format));
    }
    if header.version != VERSION {
        return Err(format!("written in version {} of its format, this owt reads version {VERSION}", header.version));
    }
    let file: File = serde_json::from_slice(bytes).map_err(|e| format!("damaged ({e})"))?;
    let mut sections = BTreeMap::new();
    for section in file.sections {
        let id = Identity { gpu: section.gpu, cudnn: section.cudnn };
        for (key, choice) in &section.entries {
            check_entry(key, choice.as_ref()).map_err(|why| format!("damaged ({id}: {why})"))?;
        }
        if sections.insert(id.clone(), section.entries).is_some() {
            return Err(format!("damaged (two sections for {id})"));
        }
    }
    Ok(sections)
}

/// Whether an entry names an algorithm cuDNN has for its key's computation, a math type cuDNN
/// has, a workspace within [`MAX_WORKSPACE`], and, under a deterministic key, an algorithm
/// cuDNN documents as deterministic.
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
    if choice.workspace > MAX_WORKSPACE {
        return Err(format!("entry {key:?}: a workspace of {} bytes is over {MAX_WORKSPACE}", choice.workspace));
    }
    if key.split(' ').any(|w| w == "deterministic") && !is_deterministic(op, choice.algo) {
        return Err(format!("entry {key:?}: algorithm {} of {} is not deterministic", choice.algo, op.name()));
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

/// Whether cuDNN's documentation makes algorithm `algo` of `op` deterministic whatever the
/// problem: the backward computations' `ALGO_0` (and the filter gradient's `ALGO_3`) sum with
/// atomics, so their rounding depends on the order threads finish in; every forward algorithm
/// and the others are deterministic. A search under `--deterministic` also reads cuDNN's own
/// `determinism` field per problem; this is what the cache's file is checked against.
pub fn is_deterministic(op: ConvOp, algo: u32) -> bool {
    match op {
        ConvOp::Forward => true,
        ConvOp::BackwardData => algo != 0,
        ConvOp::BackwardFilter => algo != 0 && algo != 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> Identity {
        Identity { gpu: "NVIDIA H200".into(), cudnn: 91000 }
    }

    fn h100() -> Identity {
        Identity { gpu: "NVIDIA H100 80GB HBM3".into(), cudnn: 91000 }
    }

    const KEY: &str = "fwd f32 tf32 x 2.3.8.8/192.64.8.1 w 4.3.3.3 y 2.4.6.6/144.36.6.1 pad 0.0 stride 1.1 dil 1.1 groups 1 align 256";

    fn choice(algo: u32) -> Option<Choice> {
        Some(Choice { algo, math_type: 0, workspace: 4096, packed: false })
    }

    #[test]
    fn a_saved_cache_loads_back_whole_with_each_gpu_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join(FILE_NAME);
        let mut cache = AlgorithmCache::empty(Some(path.clone()));
        cache.insert(&h200(), KEY.into(), Some(Choice { algo: 1, math_type: 0, workspace: 4096, packed: true }));
        cache.insert(&h200(), KEY.replacen("fwd", "bwd-filter", 1), None);
        cache.insert(&h100(), KEY.into(), choice(6));
        cache.save().unwrap();
        let (loaded, warning) = AlgorithmCache::load(&path);
        assert_eq!(warning, None);
        assert_eq!(loaded.sections, cache.sections);
        assert_eq!(
            loaded.get(&h200(), KEY),
            Some(Some(Choice { algo: 1, math_type: 0, workspace: 4096, packed: true }))
        );
        assert_eq!(loaded.get(&h100(), KEY), Some(choice(6)));
        assert_eq!(loaded.get(&h200(), &KEY.replacen("fwd", "bwd-filter", 1)), Some(None));
        assert_eq!(loaded.get(&h100(), &KEY.replacen("fwd", "bwd-filter", 1)), None);
        let other_cudnn = Identity { cudnn: 90300, ..h200() };
        assert_eq!(loaded.get(&other_cudnn, KEY), None, "another cuDNN's choices are not this one's");
        // Nothing but the file and its lock is left in the directory.
        let mut names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from(FILE_NAME), std::ffi::OsString::from("cudnn-algorithms.json.lock")]
        );
    }

    #[test]
    fn an_entry_written_before_packed_existed_reads_as_pitched() {
        let text = format!(
            r#"{{"format": "owt cudnn algorithms", "version": 2, "sections": [{{"gpu": "NVIDIA H200", "cudnn": 91000,
                "entries": {{"{KEY}": {{"algo": 1, "math_type": 0, "workspace": 0}}}}}}]}}"#
        );
        let (cache, warning) = load_bytes(text.as_bytes());
        assert_eq!(warning, None);
        assert_eq!(cache.get(&h200(), KEY), Some(Some(Choice { algo: 1, math_type: 0, workspace: 0, packed: false })));
    }

    #[test]
    fn two_processes_saving_in_turn_keep_both_their_entries_and_a_forgotten_one_stays_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut first = AlgorithmCache::load(&path).0;
        let mut second = AlgorithmCache::load(&path).0;
        first.insert(&h200(), KEY.into(), choice(1));
        first.insert(&h200(), "fwd other".into(), choice(2));
        first.save().unwrap();
        // The second process loaded before the first saved; its save keeps the first's entries.
        second.insert(&h200(), "bwd-data b".into(), choice(3));
        second.forget(&h200(), "fwd other");
        second.save().unwrap();
        let (merged, _) = AlgorithmCache::load(&path);
        assert_eq!(merged.get(&h200(), KEY), Some(choice(1)));
        assert_eq!(merged.get(&h200(), "bwd-data b"), Some(choice(3)));
        assert_eq!(merged.get(&h200(), "fwd other"), None, "the second process's failed choice is taken out");
        // Saving side by side from threads loses nothing either.
        let threads: Vec<_> = (0..6u32)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut cache = AlgorithmCache::load(&path).0;
                    cache.insert(&h100(), format!("fwd thread {i}"), choice(i));
                    cache.save().unwrap();
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let (all, _) = AlgorithmCache::load(&path);
        for i in 0..6u32 {
            assert_eq!(all.get(&h100(), &format!("fwd thread {i}")), Some(choice(i)), "thread {i}");
        }
        assert_eq!(all.len(), 2 + 6);
    }

    #[test]
    fn a_missing_file_is_an_empty_cache_without_a_word() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, warning) = AlgorithmCache::load(&dir.path().join(FILE_NAME));
        assert!(cache.is_empty());
        assert_eq!(warning, None);
    }

    fn load_bytes(bytes: &[u8]) -> (AlgorithmCache, Option<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, bytes).unwrap();
        AlgorithmCache::load(&path)
    }

    #[test]
    fn a_damaged_file_is_set_aside_in_one_line() {
        let mut good = AlgorithmCache::empty(None);
        good.insert(&h200(), KEY.into(), Some(Choice { algo: 7, math_type: 3, workspace: 0, packed: false }));
        let det = KEY.replacen("fwd", "bwd-filter", 1) + " deterministic";
        good.insert(&h200(), det.clone(), Some(Choice { algo: 1, math_type: 0, workspace: 0, packed: false }));
        let text = String::from_utf8(good.to_bytes()).unwrap();
        assert!(load_bytes(text.as_bytes()).1.is_none(), "the good file loads");
        let truncated = &text.as_bytes()[..text.len() / 2];
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (truncated.to_vec(), "damaged"),
            (b"\x00\x01garbage".to_vec(), "damaged"),
            (text.replace("owt cudnn algorithms", "something else").into_bytes(), "expected \"owt cudnn algorithms\""),
            (text.replace("\"version\": 2", "\"version\": 1").into_bytes(), "version 1 of its format"),
            // Forward has 8 algorithms (0..=7); 8 is none.
            (text.replace("\"algo\": 7", "\"algo\": 8").into_bytes(), "algorithm 8 of fwd has only 8"),
            (text.replace("\"math_type\": 3", "\"math_type\": 9").into_bytes(), "math type 9"),
            (text.replace("fwd f32", "sideways f32").into_bytes(), "names no convolution computation"),
            (text.replacen("\"workspace\": 0", "\"workspace\": 1073741825", 1).into_bytes(), "is over 1073741824"),
            (text.replace("\"algo\": 1", "\"algo\": 3").into_bytes(), "algorithm 3 of bwd-filter is not deterministic"),
        ];
        for (bytes, says) in cases {
            let (cache, warning) = load_bytes(&bytes);
            assert!(cache.is_empty());
            let warning = warning.expect("a warning");
            assert!(warning.contains(says) && warning.contains("searching afresh"), "{says:?} in {warning}");
            assert!(!warning.contains('\n'), "one line: {warning}");
        }
    }

    #[test]
    fn a_damaged_file_is_replaced_by_the_next_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, b"{ not json").unwrap();
        let (mut cache, warning) = AlgorithmCache::load(&path);
        assert!(warning.is_some());
        cache.insert(&h200(), KEY.into(), choice(2));
        cache.save().unwrap();
        assert_eq!(AlgorithmCache::load(&path), (cache, None));
    }

    #[test]
    fn the_backward_computations_atomic_algorithms_are_the_non_deterministic_ones() {
        let all = |op| (0..algorithm_count(op)).filter(move |&a| !is_deterministic(op, a)).collect::<Vec<_>>();
        assert_eq!(all(ConvOp::Forward), Vec::<u32>::new());
        assert_eq!(all(ConvOp::BackwardData), vec![0]);
        assert_eq!(all(ConvOp::BackwardFilter), vec![0, 3]);
    }
}
