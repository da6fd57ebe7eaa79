//! Atomic file writes: a reader sees the old file or the new one, never half of one.

use std::io::Write;
use std::path::Path;

use crate::error::OwtError;

/// Bytes a file name may have (NAME_MAX of Linux and macOS file systems).
const NAME_MAX: usize = 255;

/// Writes `bytes` to `path` by writing a sibling temporary file, syncing it and renaming it
/// over `path` (a rename within one directory is atomic on POSIX file systems). Temporaries
/// of earlier writes to `path` whose process is gone (killed mid-write) are removed first:
/// only names owt makes (`.NAME.owt-tmp-PID-TOKEN`), never a user's `.NAME.tmp-123`. A signal during
/// the write removes the temporary ([`crate::host::removed_on_signal`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OwtError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| OwtError::io(format!("cannot create {}: {e}", dir.display())))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    remove_stale_temporaries(dir, Some(&name));
    let tmp = dir.join(temporary_name(&name));
    let _on_signal = crate::host::removed_on_signal::RemovedOnSignal::new(&tmp);
    let result = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        crate::host::exit::write_fault(&tmp);
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        OwtError::io(format!("cannot write {}: {e}", path.display()))
    })
}

/// What marks a temporary as owt's: `.NAME` then this, the writer's process id, a dash and
/// its 16-digit token.
const TEMPORARY_MARK: &str = ".owt-tmp-";

/// Digits of a process's token.
const TOKEN_DIGITS: usize = 16;

/// The start of a temporary's name for a file named `name`: `.NAME.owt-tmp-`, NAME cut so
/// that, with a process id of up to 10 digits and the token, the temporary's name is never
/// longer than a legal `name` may be.
pub(crate) fn temporary_stem(name: &str) -> String {
    hidden_sibling(name, TEMPORARY_MARK, 10 + 1 + TOKEN_DIGITS)
}

/// This process's token: 16 hex digits drawn once, so that a temporary's name is one only
/// owt makes (`.NAME.owt-tmp-PID-TOKEN`), never a name a user or another tool would give.
fn process_token() -> &'static str {
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOKEN.get_or_init(|| format!("{:016x}", rand::random::<u64>()))
}

/// The temporary of this process's write of a file (or directory) named `name`.
pub(crate) fn temporary_name(name: &str) -> String {
    format!("{}{}-{}", temporary_stem(name), std::process::id(), process_token())
}

/// The writer's process id in a temporary's name after its stem (`PID-TOKEN`), if the rest
/// is exactly what owt makes.
fn writer_of(rest: &str) -> Option<u32> {
    let (pid, token) = rest.split_once('-')?;
    let hex = token.len() == TOKEN_DIGITS && token.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    if hex && digits {
        pid.parse().ok()
    } else {
        None
    }
}

/// The name of a hidden file beside a file named `name`: `.NAME` and `suffix`, NAME cut so
/// that the result is a legal name (a lock file's, say) whatever `name`'s length.
pub(crate) fn sibling_name(name: &str, suffix: &str) -> String {
    hidden_sibling(name, suffix, 0)
}

/// `.NAME` and `suffix`, NAME cut at a character boundary so that `reserve` more bytes still
/// fit in a file name.
fn hidden_sibling(name: &str, suffix: &str, reserve: usize) -> String {
    let room = NAME_MAX - ".".len() - suffix.len() - reserve;
    let mut cut = name.len().min(room);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(".{}{suffix}", &name[..cut])
}

/// Removes the temporaries in `dir` of atomic writes whose process is gone (killed
/// mid-write): those of the file named `name`, or, with `None`, of every file.
pub(crate) fn remove_stale_temporaries(dir: &Path, name: Option<&str>) {
    let stem = name.map(temporary_stem);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let rest = match &stem {
            Some(stem) => file.strip_prefix(stem.as_str()),
            None => file.strip_prefix('.').and_then(|n| n.rsplit_once(TEMPORARY_MARK)).map(|(_, rest)| rest),
        };
        let Some(pid) = rest.and_then(writer_of) else { continue };
        if pid != std::process::id() && !process_alive(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The temporaries in `dir` of the output named `name` that owt made (the name's stem, a
/// process id and a token) other than this process's own, with their writer's process id.
pub(crate) fn others_temporaries(dir: &Path, name: &str) -> Vec<(std::path::PathBuf, u32)> {
    let (stem, mine) = (temporary_stem(name), temporary_name(name));
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<_> = entries
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            let pid = file.strip_prefix(stem.as_str()).and_then(writer_of)?;
            (file != mine).then(|| (entry.path(), pid))
        })
        .collect();
    found.sort();
    found
}

/// Whether a process with this id runs (on Linux; elsewhere assumed alive, so kept).
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_of_long_names_stay_within_the_name_limit() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["w.safetensors".to_string(), format!("{}.safetensors", "a".repeat(243)), "é".repeat(127)] {
            assert!(name.len() <= NAME_MAX);
            let stem = temporary_stem(&name);
            assert!(stem.len() + 10 <= NAME_MAX, "{} bytes", stem.len() + 10);
            write_atomic(&dir.path().join(&name), b"x").unwrap();
            assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"x");
        }
    }

    #[test]
    fn a_write_removes_its_own_stale_temporaries_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".w.safetensors.owt-tmp-4294967-0123456789abcdef");
        // Another file's temporary, a user's file named as owt's once were, and names that
        // look like owt's but are not quite: all kept.
        let kept = [
            ".notes.owt-tmp-4294967-0123456789abcdef",
            ".w.safetensors.tmp-4294967",
            ".w.safetensors.owt-tmp-4294967",
            ".w.safetensors.owt-tmp-4294967-0123",
            ".w.safetensors.owt-tmp-x-0123456789abcdef",
        ];
        std::fs::write(&dead, b"half").unwrap();
        for k in kept {
            std::fs::write(dir.path().join(k), b"theirs").unwrap();
        }
        write_atomic(&dir.path().join("w.safetensors"), b"x").unwrap();
        assert!(!dead.exists());
        for k in kept {
            assert!(dir.path().join(k).exists(), "{k} kept");
        }
        // Only the finished file and what was there: the write's own temporary is gone.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), kept.len() + 1, "{names:?}");
    }
}
