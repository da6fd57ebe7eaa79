//! Atomic file writes: a reader sees the old file or the new one, never half of one.

use std::io::Write;
use std::path::Path;

use crate::error::OwtError;

/// Writes `bytes` to `path` by writing a sibling temporary file, syncing it and renaming it
/// over `path` (a rename within one directory is atomic on POSIX file systems).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OwtError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| OwtError::io(format!("cannot create {}: {e}", dir.display())))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        OwtError::io(format!("cannot write {}: {e}", path.display()))
    })
}
