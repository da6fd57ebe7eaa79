//! The IDX format of MNIST and Fashion-MNIST (raw or gzip-compressed).

use std::io::Read;
use std::path::Path;

use crate::error::OwtError;

/// An unsigned-byte IDX array: its dimensions and its bytes in row-major order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    /// Dimensions from the header (e.g. `[60000, 28, 28]` for images, `[60000]` for labels).
    pub dims: Vec<usize>,
    /// `dims.iter().product()` bytes.
    pub data: Vec<u8>,
}

/// The most bytes an IDX file may hold, compressed or not: 4 GiB, which is the data of 5
/// million 28x28 images (MNIST has 70 000; EMNIST, the largest of its kind, 814 000).
pub const MAX_IDX_BYTES: u64 = 4 << 30;

/// Reads an IDX file (a regular file of at most [`MAX_IDX_BYTES`]), un-gzipping it if it
/// starts with the gzip magic bytes (to at most [`MAX_IDX_BYTES`] too).
pub fn read_idx(path: &Path) -> Result<IdxArray, OwtError> {
    let raw = crate::host::bounded_read::read(path, MAX_IDX_BYTES, "an IDX file")
        .map_err(|e| OwtError::data(format!("cannot read {}: {e}", path.display())))?;
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        // Every member of the stream, as zlib's and Python's readers do (`cat a.gz b.gz`, or
        // a file compressed in parts by pigz or bgzip, is one valid gzip file).
        flate2::read::MultiGzDecoder::new(raw.as_slice())
            .take(MAX_IDX_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(|e| OwtError::data(format!("{}: not a valid gzip stream ({e})", path.display())))?;
        if out.len() as u64 > MAX_IDX_BYTES {
            return Err(OwtError::data(format!(
                "{}: unpacks to more than an IDX file can hold ({MAX_IDX_BYTES} bytes at most)",
                path.display()
            )));
        }
        out
    } else {
        raw
    };
    parse_idx(&bytes).map_err(|e| OwtError::data(format!("{}: {e}", path.display())))
}

/// Parses IDX bytes: magic `00 00 08 n` (unsigned bytes, n dimensions), n big-endian u32
/// sizes, then the data. Errors name what was expected and what was found.
pub fn parse_idx(bytes: &[u8]) -> Result<IdxArray, String> {
    if bytes.len() < 4 {
        return Err(format!("truncated: an IDX header needs 4 bytes, the file has {}", bytes.len()));
    }
    let magic = &bytes[..4];
    if magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 {
        return Err(format!(
            "wrong magic number: expected 00 00 08 0N (unsigned-byte IDX), got {:02x} {:02x} {:02x} {:02x}",
            magic[0], magic[1], magic[2], magic[3]
        ));
    }
    let ndims = magic[3] as usize;
    let header = 4 + 4 * ndims;
    if bytes.len() < header {
        return Err(format!(
            "truncated: the header of {ndims} dimensions needs {header} bytes, the file has {}",
            bytes.len()
        ));
    }
    let dims: Vec<usize> =
        bytes[4..header].chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize).collect();
    let expected = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).unwrap_or(usize::MAX);
    let actual = bytes.len() - header;
    if actual < expected {
        return Err(format!("truncated: dimensions {dims:?} need {expected} data bytes, the file has {actual}"));
    }
    if actual > expected {
        return Err(format!(
            "{} trailing bytes after the {expected} data bytes of dimensions {dims:?}",
            actual - expected
        ));
    }
    Ok(IdxArray { dims, data: bytes[header..].to_vec() })
}

/// Encodes an unsigned-byte IDX array (for tests and for writing small fixtures).
pub fn encode_idx(array: &IdxArray) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, array.dims.len() as u8];
    for d in &array.dims {
        out.extend_from_slice(&(*d as u32).to_be_bytes());
    }
    out.extend_from_slice(&array.data);
    out
}
