//! One writer per output: train, resume, import, export and prepare hold an exclusive OS lock
//! on what they write (a run directory, an exported file, a packed copy) from before their
//! first write until they end, so a second writer started beside them is refused at once,
//! naming the first, instead of both finishing and one result silently replacing the other.
//! Every output has one lock beside it (`.NAME.lock`), which every command writing it takes,
//! so a `prepare` and a `train` of the same `--out` exclude each other; a run directory also
//! has one inside (`.owt.lock`), which a run whose parent directory it may not write still
//! takes. The lock is the kernel's
//! (`flock`), so a killed writer releases it; readers (eval, report, plan) take none and never
//! wait.
//!
//! The lock file holds the holder's process id and command; the holder removes it when done.
//! Removing a lock file is safe only because an acquirer checks, after locking, that the path
//! still names the file it locked, and starts over when it does not.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::error::OwtError;

/// The lock file of a run directory.
pub const RUN_LOCK_FILE: &str = ".owt.lock";

/// An exclusive hold on one output, released when the last clone is dropped (or the process
/// ends). A process that already holds an output gets the same hold again, so a command and
/// the library function it calls may both ask for it.
#[derive(Debug, Clone)]
pub struct WriterLock {
    /// The lock files held: a run directory's inner one first, so it is released first and the
    /// one beside the output, taken first, last.
    _held: Vec<Arc<Held>>,
}

#[derive(Debug)]
struct Held {
    path: PathBuf,
    file: File,
    /// The lock file is removed if a signal ends the process while it is held.
    _on_signal: crate::host::removed_on_signal::RemovedOnSignal,
}

impl Drop for Held {
    fn drop(&mut self) {
        // Removed while still locked: a waiter that opened this file finds, once it holds the
        // lock, that the path names another file or none, and starts over.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// The outputs this process holds, by lock file.
fn held() -> &'static Mutex<HashMap<PathBuf, Weak<Held>>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, Weak<Held>>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

impl WriterLock {
    /// Takes the lock of the run directory `dir` (which must exist) for `command` ("train",
    /// "import", ...); `what` names the output in messages ("--out runs/a").
    /// The run also holds the lock beside the directory (see [`WriterLock::file`]) where its
    /// parent may be written.
    pub fn run_dir(dir: &Path, command: &str, what: &str) -> Result<WriterLock, OwtError> {
        let beside = WriterLock::acquire(&lock_beside(dir), command, what, true)?;
        let inside = WriterLock::acquire(&dir.join(RUN_LOCK_FILE), command, what, false)?;
        Ok(WriterLock { _held: inside.into_iter().chain(beside).collect() })
    }

    /// Takes the lock beside the run directory `dir` alone, before `dir` is made (its parent
    /// must exist), so that of two writers starting together the second is refused before it
    /// makes or removes anything; [`WriterLock::run_dir`] then finds it held by this process.
    /// None where the parent may not be written.
    pub fn beside_run_dir(dir: &Path, command: &str, what: &str) -> Result<Option<WriterLock>, OwtError> {
        let held = WriterLock::acquire(&lock_beside(dir), command, what, true)?;
        Ok(held.map(|held| WriterLock { _held: vec![held] }))
    }

    /// Takes the lock of the output `path` (a file, or a directory not yet made) for
    /// `command`: a hidden `.NAME.lock` beside it, named from `path`'s canonical parent so
    /// that two spellings of one output take one lock.
    pub fn file(path: &Path, command: &str, what: &str) -> Result<WriterLock, OwtError> {
        let held = WriterLock::acquire(&lock_beside(path), command, what, false)?;
        Ok(WriterLock { _held: held.into_iter().collect() })
    }

    /// Takes the lock file `lock`, or says who holds it; with `optional`, none where the lock
    /// file's directory may not be written (no other owt can write an output there either).
    fn acquire(lock: &Path, command: &str, what: &str, optional: bool) -> Result<Option<Arc<Held>>, OwtError> {
        let key = std::path::absolute(lock).unwrap_or_else(|_| lock.to_path_buf());
        let mut table = held().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mine) = table.get(&key).and_then(Weak::upgrade) {
            return Ok(Some(mine));
        }
        let io = |e: std::io::Error| OwtError::io(format!("{what}: cannot lock {}: {e}", lock.display()));
        loop {
            let opened = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(lock);
            let mut file = match opened {
                Err(e)
                    if optional
                        && matches!(
                            e.kind(),
                            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                        ) =>
                {
                    return Ok(None)
                }
                opened => opened.map_err(io)?,
            };
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Err(busy(&mut file, what)),
                Err(TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
                    crate::err_line!(
                        "warning: {what}: the file system cannot lock files ({e}); a second writer started now would not be refused"
                    );
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
            if !same_file(&file, lock) {
                continue;
            }
            file.set_len(0).map_err(io)?;
            file.write_all(format!("{} {command}\n", std::process::id()).as_bytes()).map_err(io)?;
            let _on_signal = crate::host::removed_on_signal::RemovedOnSignal::new(lock);
            let held = Arc::new(Held { path: lock.to_path_buf(), file, _on_signal });
            table.retain(|_, h| h.strong_count() > 0);
            table.insert(key, Arc::downgrade(&held));
            return Ok(Some(held));
        }
    }
}

/// The lock file beside the output `path`: `.NAME.lock` in its parent, canonical where the
/// parent exists.
fn lock_beside(path: &Path) -> PathBuf {
    // `.` and `..` have no name of their own: named by what they are.
    let canonical;
    let path = if path.file_name().is_none() {
        canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        canonical.as_path()
    } else {
        path
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(crate::train::atomic::sibling_name(&name, ".lock"))
}

/// Whether `path` still names the open `file` (a lock file removed and made again by others
/// in between is another file).
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

/// The refusal of a second writer, naming the first from its lock file. The holder writes its
/// id just after taking the lock, so an empty file is read again for up to 100 ms.
fn busy(file: &mut File, what: &str) -> OwtError {
    let mut text = String::new();
    for _ in 0..50 {
        text.clear();
        let _ = file.rewind().and_then(|_| Read::by_ref(file).take(256).read_to_string(&mut text));
        if text.ends_with('\n') {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let mut words = text.split_whitespace();
    let holder = match (words.next().and_then(|p| p.parse::<u32>().ok()), words.next()) {
        (Some(pid), Some(command)) => format!("`owt {command}` (process {pid})"),
        (Some(pid), None) => format!("another owt (process {pid})"),
        _ => "another owt process (starting)".to_string(),
    };
    OwtError::input(format!("{what} is being written by {holder}: wait for it to end, or choose another output"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_holds_an_output_once_and_lets_it_go_when_done() {
        let dir = tempfile::tempdir().unwrap();
        let first = WriterLock::run_dir(dir.path(), "train", "--out x").unwrap();
        let lock = dir.path().join(RUN_LOCK_FILE);
        let text = std::fs::read_to_string(&lock).unwrap();
        assert_eq!(text, format!("{} train\n", std::process::id()));
        // The same process asking again (the CLI, then the trainer) gets the same hold.
        let again = WriterLock::run_dir(dir.path(), "train", "--out x").unwrap();
        drop(first);
        assert!(lock.exists(), "still held by the second handle");
        drop(again);
        assert!(!lock.exists(), "the last handle removes the lock file");
        // A lock file left by a killed writer (no lock on it) does not stop the next one.
        std::fs::write(&lock, b"4294967 train\n").unwrap();
        let next = WriterLock::run_dir(dir.path(), "import", "--out x").unwrap();
        assert_eq!(std::fs::read_to_string(&lock).unwrap(), format!("{} import\n", std::process::id()));
        drop(next);
    }

    #[test]
    fn a_lock_another_open_file_holds_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(RUN_LOCK_FILE);
        // Another process's hold, as this process sees it: its own open file, locked.
        let theirs = File::create(&lock).unwrap();
        theirs.lock().unwrap();
        std::fs::write(&lock, b"12345 train\n").unwrap();
        let e = WriterLock::run_dir(dir.path(), "import", "--out runs/a").unwrap_err().to_string();
        assert!(e.contains("--out runs/a is being written by `owt train` (process 12345)"), "{e}");
        theirs.unlock().unwrap();
        drop(WriterLock::run_dir(dir.path(), "import", "--out runs/a").unwrap());
    }

    #[test]
    fn exported_files_lock_a_hidden_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("w.safetensors");
        let lock = WriterLock::file(&out, "export", "--out w.safetensors").unwrap();
        assert!(dir.path().join(".w.safetensors.lock").exists());
        drop(lock);
        assert!(!dir.path().join(".w.safetensors.lock").exists());
    }
}
