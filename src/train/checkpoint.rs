//! Checkpoints: one file holding the run's config, its metrics so far, the model and the
//! optimizer state, written atomically so a crash never leaves a half-written checkpoint,
//! and checksummed so damage is found, and named, before anything is loaded.
//!
//! Format 2 (written): `OWTCKPT2`, then for each section (state JSON, model record, optimizer
//! record) its length (u64 little-endian) and CRC-32 (u32 little-endian), then the CRC-32 of
//! everything before it (the header), then the three sections. Format 1 (`OWTCKPT1`, before
//! checksums): the magic, then each section as length + bytes; it still loads.

use std::path::{Path, PathBuf};

use burn::module::{Module, ModuleVisitor, ParamId};
use burn::record::{FullPrecisionSettings, NamedMpkBytesRecorder, PrecisionSettings, Record, Recorder};
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

use crate::error::OwtError;
use crate::train::atomic::write_atomic;
use crate::train::config::TrainConfig;
use crate::train::metrics::EpochMetrics;

/// The magic of every format: `OWTCKPT` and the format's digit.
const MAGIC_PREFIX: &[u8; 7] = b"OWTCKPT";
/// Format 1: no checksums.
const MAGIC_V1: &[u8; 8] = b"OWTCKPT1";
/// Format 2: a checksummed header and a checksum per section.
const MAGIC_V2: &[u8; 8] = b"OWTCKPT2";
/// The sections of a checkpoint, in file order.
const SECTIONS: [&str; 3] = ["state", "model", "optimizer"];
/// Bytes of a format-2 header: magic, (length, CRC) per section, the header's CRC.
const HEADER_V2: usize = 8 + SECTIONS.len() * 12 + 4;

/// File name of the checkpoint inside a run directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.owt";

/// The checkpoint of a run directory.
pub fn checkpoint_path(dir: &Path) -> PathBuf {
    dir.join(CHECKPOINT_FILE)
}

/// The JSON part of a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointState {
    /// The run's settings.
    pub config: TrainConfig,
    /// Epochs completed.
    pub epochs_done: usize,
    /// Metrics of the completed epochs.
    pub metrics: Vec<EpochMetrics>,
    /// Where the starting weights came from, when they were imported (`owt import`) rather
    /// than initialised by owt: "torchvision FILE". Kept by the runs that continue it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// The data the run trained on (`None` in checkpoints from before it was kept, and in an
    /// import no run has trained yet): a resume must read the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<crate::train::DatasetIdentity>,
}

impl CheckpointState {
    /// Imported weights no run has trained yet: any run of the same network may start from
    /// them, whatever its dataset, rate or batch.
    pub fn is_fresh_import(&self) -> bool {
        self.imported_from.is_some() && self.epochs_done == 0
    }

    /// Refuses to continue this checkpoint with `config` when a setting that decides the
    /// numbers differs (only the network's, for a fresh import), naming it and both values.
    pub fn check_resume(&self, config: &TrainConfig) -> Result<(), OwtError> {
        if self.epochs_done >= config.epochs {
            return Err(OwtError::input(format!(
                "--epochs {}: the checkpoint has already done {} epochs; pass --epochs {} or more to train on",
                config.epochs,
                self.epochs_done,
                self.epochs_done + 1
            )));
        }
        let diff = if self.is_fresh_import() {
            config.model_difference(&self.config)
        } else {
            config.difference(&self.config)
        };
        match diff {
            Some(diff) => Err(OwtError::checkpoint(format!("cannot resume: {diff}"))),
            None => Ok(()),
        }
    }

    /// Refuses to continue this checkpoint on `data` when it is not the data the run trained
    /// on (another folder, classes renamed or reordered, splits of other sizes), in words.
    /// Checkpoints that do not say what they trained on, and fresh imports, accept any.
    pub fn check_data(&self, data: &crate::train::DatasetIdentity) -> Result<(), OwtError> {
        let Some(saved) = self.dataset.as_ref().filter(|_| !self.is_fresh_import()) else { return Ok(()) };
        match data.difference(saved) {
            Some(diff) => Err(OwtError::checkpoint(format!("cannot resume: {diff}"))),
            None => Ok(()),
        }
    }
}

/// The start of a checkpoint file, read and checked: the file, open where the state ends.
struct Head {
    file: PathBuf,
    handle: std::fs::File,
    /// The file's bytes so far (header and state).
    bytes: Vec<u8>,
    state: CheckpointState,
    /// Bytes of the state section.
    state_len: u64,
}

/// A checkpoint read back: state and the two raw records, decoded on demand per backend.
pub struct Checkpoint {
    /// Config, progress, metrics.
    pub state: CheckpointState,
    model: Vec<u8>,
    optimizer: Vec<u8>,
}

fn recorder() -> NamedMpkBytesRecorder<FullPrecisionSettings> {
    NamedMpkBytesRecorder::default()
}

/// Serialises a record (module or optimizer state) to bytes.
pub fn record_to_bytes<B: Backend, R: Record<B>>(record: R) -> Result<Vec<u8>, OwtError> {
    Recorder::<B>::record(&recorder(), record, ())
        .map_err(|e| OwtError::checkpoint(format!("cannot encode record: {e}")))
}

/// Decodes a record from bytes onto `device`.
pub fn record_from_bytes<B: Backend, R: Record<B>>(bytes: &[u8], device: &B::Device) -> Result<R, OwtError> {
    Recorder::<B>::load(&recorder(), bytes.to_vec(), device)
        .map_err(|e| OwtError::checkpoint(format!("cannot decode record: {e}")))
}

/// A per-parameter record (an optimizer's state) whose entries are read in the module's
/// parameter order, and written as a map sorted by parameter id. Reading a sharded tensor of a
/// mesh that spans processes is a collective: every process must read the same tensor at the
/// same time, and an optimizer record is a hash map whose order differs from process to
/// process. Loads as the optimizer's own record (the same map).
pub struct InParameterOrder<T>(pub Vec<(ParamId, T)>);

impl<T> InParameterOrder<T> {
    /// `record`'s entries in the order of `module`'s parameters (entries of other ids last,
    /// by id).
    pub fn new<B: Backend, M: Module<B>>(record: impl IntoIterator<Item = (ParamId, T)>, module: &M) -> Self {
        struct Ids(Vec<ParamId>);
        impl<B: Backend> ModuleVisitor<B> for Ids {
            fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<burn::tensor::Tensor<B, D>>) {
                self.0.push(param.id);
            }
        }
        let mut ids = Ids(Vec::new());
        module.visit(&mut ids);
        let position: std::collections::HashMap<ParamId, usize> =
            ids.0.into_iter().enumerate().map(|(i, id)| (id, i)).collect();
        let mut entries: Vec<(ParamId, T)> = record.into_iter().collect();
        entries.sort_by_key(|(id, _)| (position.get(id).copied().unwrap_or(usize::MAX), *id));
        Self(entries)
    }
}

impl<B: Backend, T: Record<B>> Record<B> for InParameterOrder<T> {
    type Item<S: PrecisionSettings> = std::collections::BTreeMap<String, T::Item<S>>;

    fn into_item<S: PrecisionSettings>(self) -> Self::Item<S> {
        self.0.into_iter().map(|(id, record)| (id.serialize(), record.into_item())).collect()
    }

    fn from_item<S: PrecisionSettings>(item: Self::Item<S>, device: &B::Device) -> Self {
        Self(item.into_iter().map(|(id, item)| (ParamId::deserialize(&id), T::from_item(item, device))).collect())
    }
}

impl Checkpoint {
    /// Writes state and records to `dir/checkpoint.owt` atomically, in format 2.
    pub fn save(dir: &Path, state: &CheckpointState, model: &[u8], optimizer: &[u8]) -> Result<(), OwtError> {
        let json = serde_json::to_vec(state).map_err(|e| OwtError::checkpoint(e.to_string()))?;
        write_atomic(&checkpoint_path(dir), &encode([&json[..], model, optimizer]))
    }

    /// Reads the checkpoint at `path` (a run directory, or the checkpoint file itself), with
    /// one-line errors for a missing, foreign, truncated or damaged file that name the damaged
    /// section. Only a regular file is read, and only up to what a checkpoint of the network
    /// its state names can hold ([`max_checkpoint_bytes`]).
    pub fn load(path: &Path) -> Result<Checkpoint, OwtError> {
        use std::io::Read;
        // The header and the state are read once: the rest of the file follows from where
        // they end, once the state has said how much a checkpoint of its network can hold.
        let Head { file, handle, mut bytes, state, state_len } = Self::read_head(path)?;
        let arch = state.config.model.architecture().map_err(|e| {
            OwtError::checkpoint(format!("{}: its state names no network owt can build: {}", file.display(), e.0))
        })?;
        let (limit, what) = max_checkpoint_bytes(&arch, state_len)?;
        crate::host::bounded_read::check_size(&handle, limit, &what).map_err(|e| unreadable(&file, path, e))?;
        let rest = limit.saturating_sub(bytes.len() as u64);
        handle.take(rest).read_to_end(&mut bytes).map_err(|e| unreadable(&file, path, e))?;
        let mut sections = decode(&file, &bytes, SECTIONS.len())?;
        let optimizer = sections.pop().expect("three sections");
        let model = sections.pop().expect("three sections");
        // Believed only once the records are the network the state names, shape by shape.
        let params = crate::train::record_shapes::check_model_record(&file, &model, &arch)?;
        crate::train::record_shapes::check_optimizer_record(&file, &optimizer, &params)?;
        Ok(Checkpoint { state, model, optimizer })
    }

    /// Reads only the state of the checkpoint at `path` (config, progress, metrics), checked,
    /// without the records: enough to decide whether a run can resume from it.
    pub fn read_state(path: &Path) -> Result<CheckpointState, OwtError> {
        Ok(Self::read_head(path)?.state)
    }

    /// Opens the checkpoint at `path` (a regular file only) and reads its header and state
    /// section, checked.
    fn read_head(path: &Path) -> Result<Head, OwtError> {
        use std::io::Read;
        let file = resolve(path);
        let mut handle = crate::host::bounded_read::open_regular(&file).map_err(|e| unreadable(&file, path, e))?;
        let io = |e: std::io::Error| OwtError::checkpoint(format!("cannot read {}: {e}", file.display()));
        let mut head = Vec::new();
        (&mut handle).take(HEADER_V2 as u64).read_to_end(&mut head).map_err(io)?;
        // The state section follows the header; its length is the first in the table (format
        // 2) or follows the magic (format 1).
        let state_len = match head.get(..8) {
            Some(m) if m == MAGIC_V2 && head.len() == HEADER_V2 => read_u64(&head[8..16]),
            Some(m) if m == MAGIC_V1 && head.len() >= 16 => {
                read_u64(&head[8..16]).saturating_sub((HEADER_V2 - 16) as u64)
            }
            _ => 0,
        };
        if state_len > MAX_STATE_BYTES {
            // A header damaged in transit says so first.
            decode(&file, &head, 0)?;
            return Err(OwtError::checkpoint(format!(
                "{} is damaged or not a checkpoint: its state section claims {state_len} bytes, more than a run's state can hold ({MAX_STATE_BYTES} bytes at most)",
                file.display()
            )));
        }
        (&mut handle).take(state_len).read_to_end(&mut head).map_err(io)?;
        let sections = decode(&file, &head, 1)?;
        let state = parse_state(&file, &sections[0])?;
        let state_len = sections[0].len() as u64;
        Ok(Head { file, handle, bytes: head, state, state_len })
    }

    /// The model record's bytes.
    pub fn model_bytes(&self) -> &[u8] {
        &self.model
    }

    /// The optimizer record's bytes.
    pub fn optimizer_bytes(&self) -> &[u8] {
        &self.optimizer
    }
}

/// The most bytes a checkpoint's state section may have: the run's settings and the metrics
/// of as many epochs as a run may have.
pub const MAX_STATE_BYTES: u64 = crate::train::metrics::MAX_METRICS_BYTES;

/// Bytes a record may take beyond its parameters' values: tensor names, shapes and MessagePack
/// framing (a few KB for AlexNet's 16 tensors; 16 MiB leaves room for any).
const RECORD_OVERHEAD: u64 = 16 << 20;

/// The most bytes a checkpoint of `arch` with a state section of `state_len` bytes can have:
/// the header, the state, and two records (the model's and the optimizer's momentum) of at
/// most 8 bytes per parameter each; and how to name such a file in an error.
pub fn max_checkpoint_bytes(arch: &owt_models::Architecture, state_len: u64) -> Result<(u64, String), OwtError> {
    let params = arch.profile()?.total_params as u64;
    let records = 2 * (8 * params + RECORD_OVERHEAD);
    Ok((HEADER_V2 as u64 + state_len + records, format!("a checkpoint of {} ({params} parameters)", arch.name)))
}

/// The checkpoint file `path` names: `checkpoint.owt` in a directory (or in what does not
/// exist yet), else `path` itself (which is then read only if it is a regular file).
pub fn resolve(path: &Path) -> PathBuf {
    match path.metadata() {
        Ok(m) if !m.is_dir() => path.to_path_buf(),
        _ => checkpoint_path(path),
    }
}

fn unreadable(file: &Path, given: &Path, e: std::io::Error) -> OwtError {
    OwtError::checkpoint(format!("cannot read {}: {e} (train with --out {} first)", file.display(), given.display()))
}

fn read_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

fn read_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

/// The bytes of a format-2 checkpoint holding `sections`.
fn encode(sections: [&[u8]; 3]) -> Vec<u8> {
    let total: usize = sections.iter().map(|s| s.len()).sum();
    let mut bytes = Vec::with_capacity(HEADER_V2 + total);
    bytes.extend_from_slice(MAGIC_V2);
    for section in sections {
        bytes.extend_from_slice(&(section.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(section).to_le_bytes());
    }
    let header_crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&header_crc.to_le_bytes());
    for section in sections {
        bytes.extend_from_slice(section);
    }
    bytes
}

/// The first `count` sections of a checkpoint's bytes `bytes` (read from `path`), checked:
/// a foreign file, a newer format, a truncation or a checksum mismatch is an error naming the
/// part concerned.
fn decode(path: &Path, bytes: &[u8], count: usize) -> Result<Vec<Vec<u8>>, OwtError> {
    let damaged = |what: String| OwtError::checkpoint(format!("{} is damaged: {what}", path.display()));
    if bytes.len() < 8 || &bytes[..7] != MAGIC_PREFIX {
        if bytes.len() < 8 && MAGIC_V2.starts_with(bytes) {
            return Err(damaged(format!("truncated in its header ({} of {HEADER_V2} bytes)", bytes.len())));
        }
        return Err(OwtError::checkpoint(format!(
            "{} is not an owt checkpoint (expected it to start with OWTCKPT)",
            path.display()
        )));
    }
    if &bytes[..8] == MAGIC_V1 {
        return decode_v1(path, bytes, count);
    }
    if &bytes[..8] != MAGIC_V2 {
        return Err(OwtError::checkpoint(format!(
            "{} is in checkpoint format {} (a newer owt); this owt reads formats 1 and 2",
            path.display(),
            bytes[7] as char
        )));
    }
    if bytes.len() < HEADER_V2 {
        return Err(damaged(format!("truncated in its header ({} of {HEADER_V2} bytes)", bytes.len())));
    }
    if crc32fast::hash(&bytes[..HEADER_V2 - 4]) != read_u32(&bytes[HEADER_V2 - 4..]) {
        return Err(damaged("its header fails its checksum".into()));
    }
    let mut at = HEADER_V2;
    let mut sections = Vec::with_capacity(count);
    for (i, name) in SECTIONS.iter().enumerate().take(count) {
        let entry = &bytes[8 + 12 * i..];
        let (len, crc) = (read_u64(entry) as usize, read_u32(&entry[8..]));
        let remaining = bytes.len() - at;
        if len > remaining {
            return Err(damaged(format!("truncated in its {name} section ({remaining} of {len} bytes)")));
        }
        let section = &bytes[at..at + len];
        at += len;
        if crc32fast::hash(section) != crc {
            return Err(damaged(format!("its {name} section fails its checksum")));
        }
        sections.push(section.to_vec());
    }
    if count == SECTIONS.len() && at != bytes.len() {
        return Err(damaged(format!("{} unexpected bytes after its optimizer section", bytes.len() - at)));
    }
    Ok(sections)
}

/// The state section, read and checked for sanity: settings a run can have (as `owt train`
/// checks its flags), at most as many epochs done as the run has, and one entry of metrics for
/// each.
fn parse_state(path: &Path, json: &[u8]) -> Result<CheckpointState, OwtError> {
    let state: CheckpointState = serde_json::from_slice(json)
        .map_err(|e| OwtError::checkpoint(format!("{}: unreadable state: {e}", path.display())))?;
    let lies = |what: String| OwtError::checkpoint(format!("{}: its state is not a run's: {what}", path.display()));
    state.config.validate().map_err(|e| lies(e.to_string()))?;
    if state.epochs_done > state.config.epochs {
        return Err(lies(format!("{} epochs done of a run of {}", state.epochs_done, state.config.epochs)));
    }
    if state.metrics.len() != state.epochs_done {
        return Err(lies(format!("{} epochs done, metrics for {}", state.epochs_done, state.metrics.len())));
    }
    Ok(state)
}

/// The first `count` sections of a format-1 checkpoint (no checksums: only truncation shows).
fn decode_v1(path: &Path, bytes: &[u8], count: usize) -> Result<Vec<Vec<u8>>, OwtError> {
    let mut rest = &bytes[MAGIC_V1.len()..];
    let mut sections = Vec::with_capacity(count);
    for name in &SECTIONS[..count] {
        if rest.len() < 8 {
            return Err(OwtError::checkpoint(format!("{} is truncated before its {name} section", path.display())));
        }
        let len = u64::from_le_bytes(rest[..8].try_into().expect("8 bytes")) as usize;
        rest = &rest[8..];
        if rest.len() < len {
            return Err(OwtError::checkpoint(format!(
                "{} is truncated: its {name} section needs {len} bytes, {} remain",
                path.display(),
                rest.len()
            )));
        }
        sections.push(rest[..len].to_vec());
        rest = &rest[len..];
    }
    Ok(sections)
}
