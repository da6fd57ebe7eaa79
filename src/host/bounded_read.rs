//! Reading a file owt did not write itself (metrics, checkpoints, state dicts, images, plans,
//! datasets): only a regular file, and never more than what such a file can legitimately
//! hold, so a FIFO, a device or a 50 GB file named like a checkpoint is one line at once
//! rather than a hang or the OOM killer.

use std::fs::File;
use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (after symlinks), without blocking on a
/// FIFO; otherwise an error saying what it is instead.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // A FIFO opened for reading waits for a writer; non-blocking, it opens at once and the
        // check below refuses it.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(Error::new(ErrorKind::InvalidInput, format!("{}, not a regular file", describe(kind))))
}

/// What a file that is not a regular file is.
fn describe(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// The size of the regular file `file`, refused above `limit` bytes with a sentence naming
/// `what` the file should be ("a metrics file") and both sizes.
pub fn check_size(file: &File, limit: u64, what: &str) -> std::io::Result<u64> {
    let len = file.metadata()?.len();
    if len > limit {
        return Err(Error::other(format!("{} bytes, more than {what} can hold ({limit} bytes at most)", len)));
    }
    Ok(len)
}

/// Reads the whole regular file `path` of at most `limit` bytes (see [`check_size`]).
pub fn read(path: &Path, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let len = check_size(&file, limit, what)?;
    let mut bytes = Vec::with_capacity(len as usize);
    // A file that grows while read still stops at the limit.
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_within_the_limit_are_read_and_others_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.json");
        std::fs::write(&file, b"[1, 2]").unwrap();
        assert_eq!(read(&file, 6, "a metrics file").unwrap(), b"[1, 2]");
        let e = read(&file, 5, "a metrics file").unwrap_err().to_string();
        assert_eq!(e, "6 bytes, more than a metrics file can hold (5 bytes at most)");
        assert!(read(dir.path(), 100, "x").unwrap_err().to_string().contains("a directory, not a regular file"));
        assert!(read(Path::new("/dev/zero"), 100, "x").unwrap_err().to_string().contains("a device"));
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
        if made {
            // No writer: a blocking open would wait forever.
            assert!(read(&fifo, 100, "x").unwrap_err().to_string().contains("a FIFO"));
        }
        assert_eq!(read(&dir.path().join("none"), 1, "x").unwrap_err().kind(), ErrorKind::NotFound);
    }
}
