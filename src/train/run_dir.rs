//! The run directory (`--out`), made ready before any data is read or model built, so a bad
//! path fails in the first second rather than after an epoch: it must be, or be creatable as,
//! a writable directory (a probe file proves it), and a run may not silently replace the
//! checkpoint of another. Temporary files a killed run left behind are removed. The run holds
//! the directory's writer lock from then on (see [`crate::train::writer_lock`]), and a
//! directory it made and left empty (a run refused before writing anything) is removed again.

use std::path::{Path, PathBuf};

use crate::error::OwtError;
use crate::train::atomic::remove_stale_temporaries;
use crate::train::checkpoint::{checkpoint_path, Checkpoint};
use crate::train::writer_lock::WriterLock;

/// What a run intends to do with the checkpoint its directory may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Continue from it (`--resume`): it must be there.
    Resume,
    /// Replace it (`--overwrite`).
    Overwrite,
    /// Start afresh: refused if a checkpoint is there.
    Refuse,
}

impl Existing {
    /// What `--resume` and `--overwrite` say (resume wins).
    pub fn of(resume: bool, overwrite: bool) -> Self {
        match (resume, overwrite) {
            (true, _) => Existing::Resume,
            (false, true) => Existing::Overwrite,
            (false, false) => Existing::Refuse,
        }
    }
}

/// A run directory made ready ([`prepare`]), held for one writer until dropped; or, in a job
/// of several processes, the directory process 0 made ready, as the others see it
/// ([`RunDir::joined`]: no lock, nothing written).
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    existing: Existing,
    lock: Option<WriterLock>,
    /// The directories this run made (`--out` and any parents it lacked), deepest first.
    made: Vec<PathBuf>,
}

impl RunDir {
    /// The directory `out`, made ready by another process of the job (process 0, which
    /// writes it), for a run that treats its checkpoint as `existing`.
    pub fn joined(out: &Path, existing: Existing) -> Self {
        Self { path: out.to_path_buf(), existing, lock: None, made: Vec::new() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the run continues from the checkpoint the directory holds.
    pub fn resumes(&self) -> bool {
        self.existing == Existing::Resume
    }

    /// Whether this process writes the directory (it holds the writer lock).
    pub fn writes(&self) -> bool {
        self.lock.is_some()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        drop(self.lock.take());
        // Only an empty directory goes, deepest first: a refused run leaves no trace (not
        // even the parents it made for `--out q/r/s`), a run that wrote anything keeps it.
        for dir in &self.made {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// Makes `out` a writable run directory for `command` (`train`, `import`) that treats its
/// checkpoint as `existing`, and takes its writer lock; or says in one line what is wrong
/// with it, or which process is writing it.
pub fn prepare(out: &Path, existing: Existing, command: &str) -> Result<RunDir, OwtError> {
    let shown = out.display();
    if out.exists() && !out.is_dir() {
        return Err(OwtError::io(format!(
            "--out {shown}: is a file, expected a directory for metrics.json and checkpoint.owt"
        )));
    }
    let made: Vec<PathBuf> =
        out.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(Path::to_path_buf).collect();
    let cannot = |e: std::io::Error| OwtError::io(format!("--out {shown}: cannot create the directory: {e}"));
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot)?;
    }
    // From here the guard removes a directory this run made, whatever refuses the run.
    let mut run = RunDir { path: out.to_path_buf(), existing, lock: None, made };
    // The lock beside --out comes first: a writer refused here (another train, import or
    // prepare of it runs) has made nothing the other may be using, and removes nothing.
    let what = format!("--out {shown}");
    let beside = WriterLock::beside_run_dir(out, command, &what).inspect_err(|_| run.made.clear())?;
    std::fs::create_dir_all(out).map_err(cannot)?;
    run.lock = Some(WriterLock::run_dir(out, command, &what)?);
    drop(beside);
    remove_stale_temporaries(out, None);
    probe_write(out)?;
    let checkpoint = checkpoint_path(out);
    match existing {
        Existing::Resume if !checkpoint.exists() => Err(OwtError::checkpoint(format!(
            "--resume: {} holds no checkpoint (checkpoint.owt); train without --resume first",
            shown
        ))),
        Existing::Refuse if checkpoint.exists() => {
            let what = match Checkpoint::read_state(out) {
                Ok(state) => format!(
                    "a checkpoint of {} on {:?} after {} of {} epochs",
                    state.config.model.kind.name(),
                    state.config.dataset,
                    state.epochs_done,
                    state.config.epochs
                ),
                Err(_) => "a checkpoint (unreadable)".into(),
            };
            let advice = if command == "train" {
                "add --resume to continue it, or --overwrite to replace it"
            } else {
                "pass --overwrite to replace it, or choose another --out"
            };
            Err(OwtError::input(format!("--out {shown} already holds {what}: {advice}")))
        }
        _ => Ok(run),
    }
}

/// Writes, syncs and removes a small file in `dir`: what checkpoint writes will need.
fn probe_write(dir: &Path) -> Result<(), OwtError> {
    use std::io::Write;
    let probe = dir.join(format!(".owt-probe-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&probe)?;
        f.write_all(b"owt")?;
        f.sync_all()
    })();
    let _ = std::fs::remove_file(&probe);
    result.map_err(|e| OwtError::io(format!("--out {}: not writable: {e}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temporaries_of_dead_processes_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".checkpoint.owt.owt-tmp-4294967-0123456789abcdef");
        let mine = dir.path().join(format!(".checkpoint.owt.owt-tmp-{}-0123456789abcdef", std::process::id()));
        let other = dir.path().join("notes.tmp-1");
        // A user's file named as owt's temporaries once were: not owt's to remove.
        let users = dir.path().join(".checkpoint.owt.tmp-4294967");
        for f in [&dead, &mine, &other, &users] {
            std::fs::write(f, b"x").unwrap();
        }
        remove_stale_temporaries(dir.path(), None);
        assert!(!dead.exists());
        assert!(mine.exists() && other.exists() && users.exists());
    }
}
