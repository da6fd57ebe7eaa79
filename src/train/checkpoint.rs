//! Checkpoints: one file holding the run's config, its metrics so far, the model and the
//! optimizer state, written atomically so a crash never leaves a half-written checkpoint.
//!
//! Layout: `OWTCKPT1`, then three length-prefixed (u64 little-endian) sections: JSON state,
//! model record, optimizer record (both named MessagePack, full precision).

use std::path::{Path, PathBuf};

use burn::record::{FullPrecisionSettings, NamedMpkBytesRecorder, Record, Recorder};
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

use crate::error::OwtError;
use crate::train::atomic::write_atomic;
use crate::train::config::TrainConfig;
use crate::train::metrics::EpochMetrics;

const MAGIC: &[u8; 8] = b"OWTCKPT1";

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

impl Checkpoint {
    /// Writes state and records to `dir/checkpoint.owt` atomically.
    pub fn save(dir: &Path, state: &CheckpointState, model: &[u8], optimizer: &[u8]) -> Result<(), OwtError> {
        let json = serde_json::to_vec(state).map_err(|e| OwtError::checkpoint(e.to_string()))?;
        let mut bytes = Vec::with_capacity(8 + 24 + json.len() + model.len() + optimizer.len());
        bytes.extend_from_slice(MAGIC);
        for section in [&json[..], model, optimizer] {
            bytes.extend_from_slice(&(section.len() as u64).to_le_bytes());
            bytes.extend_from_slice(section);
        }
        write_atomic(&checkpoint_path(dir), &bytes)
    }

    /// Reads `dir/checkpoint.owt`, with errors for a missing, foreign or truncated file.
    pub fn load(dir: &Path) -> Result<Checkpoint, OwtError> {
        let path = checkpoint_path(dir);
        let bytes = std::fs::read(&path).map_err(|e| unreadable(&path, dir, e))?;
        let mut sections = parse_sections(&path, &bytes, &["state", "model", "optimizer"])?;
        let optimizer = sections.pop().expect("three sections");
        let model = sections.pop().expect("three sections");
        let state = parse_state(&path, &sections[0])?;
        Ok(Checkpoint { state, model, optimizer })
    }

    /// Reads only the state of `dir/checkpoint.owt` (config, progress, metrics), without the
    /// records: enough to decide whether a run can resume from it.
    pub fn read_state(dir: &Path) -> Result<CheckpointState, OwtError> {
        use std::io::Read;
        let path = checkpoint_path(dir);
        let mut file = std::fs::File::open(&path).map_err(|e| unreadable(&path, dir, e))?;
        let mut head = Vec::new();
        let io = |e: std::io::Error| OwtError::checkpoint(format!("cannot read {}: {e}", path.display()));
        (&mut file).take(MAGIC.len() as u64 + 8).read_to_end(&mut head).map_err(io)?;
        if head.len() == MAGIC.len() + 8 && &head[..MAGIC.len()] == MAGIC {
            let len = u64::from_le_bytes(head[MAGIC.len()..].try_into().expect("8 bytes"));
            file.take(len).read_to_end(&mut head).map_err(io)?;
        }
        let sections = parse_sections(&path, &head, &["state"])?;
        parse_state(&path, &sections[0])
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

fn unreadable(path: &Path, dir: &Path, e: std::io::Error) -> OwtError {
    OwtError::checkpoint(format!("cannot read {}: {e} (train with --out {} first)", path.display(), dir.display()))
}

fn parse_state(path: &Path, json: &[u8]) -> Result<CheckpointState, OwtError> {
    serde_json::from_slice(json).map_err(|e| OwtError::checkpoint(format!("{}: unreadable state: {e}", path.display())))
}

/// The first `names.len()` length-prefixed sections after the magic of a checkpoint's bytes
/// `bytes` (read from `path`), with errors for a foreign or truncated file.
fn parse_sections(path: &Path, bytes: &[u8], names: &[&str]) -> Result<Vec<Vec<u8>>, OwtError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(OwtError::checkpoint(format!(
            "{} is not an owt checkpoint (expected it to start with OWTCKPT1)",
            path.display()
        )));
    }
    let mut rest = &bytes[MAGIC.len()..];
    let mut sections = Vec::with_capacity(names.len());
    for name in names {
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
