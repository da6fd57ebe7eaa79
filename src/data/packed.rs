//! The packed format (`owt prepare`, `--dataset packed`): each split's images decoded and
//! resized once, stored as raw RGB in shards that are memory-mapped, so that training only
//! cuts crops (FFCV, WebDataset and DALI's pre-resized ImageNet are the anchors). A split is
//! a directory holding `index.json` (the classes, the shards with their sizes and CRC-32s,
//! the record table's CRC-32), `records.bin` (per image: shard, offset, width, height,
//! class) and the shards. Truncation is refused when the split is opened, naming the shard;
//! a shard's checksum is verified the first time one of its images is read (a whole
//! ImageNet is hundreds of gigabytes: checking it all at every start would cost minutes), and
//! a damaged shard stops the run there, naming it, before any of its pixels are used.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use memmap2::Mmap;
use owt_models::ResizeFilter;
use serde::{Deserialize, Serialize};

use owt_pixels::{resize_shorter_to, Crop, Rgb};

use crate::data::filter::filter_of;
use crate::data::images::{Batch, ImageSource};
use crate::data::stages::{Stage, StageClock};
use crate::error::OwtError;

/// What `index.json` says the split is.
pub const FORMAT: &str = "owt-packed";

/// The version of the format this owt writes (2: the index carries a CRC-32 of its classes;
/// 3: a CRC-32 of the whole index, so that reordered shards or an edited entry are found).
pub const VERSION: u32 = 3;

/// The versions this owt reads: 1 (from before the class checksum, read unchecked), 2 (its
/// entries unchecked but for the classes) and 3.
pub const READ_VERSIONS: std::ops::RangeInclusive<u32> = 1..=3;

/// A split's index file.
pub const INDEX_FILE: &str = "index.json";

/// A split's record table.
pub const RECORDS_FILE: &str = "records.bin";

/// Bytes of one record: shard (u32), offset (u64), width (u32), height (u32), class (u32),
/// little-endian.
pub const RECORD_BYTES: usize = 24;

/// The largest index file read (a million classes' names).
const MAX_INDEX_BYTES: u64 = 64 << 20;

/// A split's index: what it holds and how to check it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackedIndex {
    /// [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The shorter side every image was resized to.
    pub side: usize,
    /// Class names, in class-id order (the source's folder names).
    pub classes: Vec<String>,
    /// Images in the split.
    pub images: usize,
    /// CRC-32 of `records.bin`.
    pub records_crc32: u32,
    /// CRC-32 of the class names ([`classes_crc32`]): an edit of the class list (which
    /// relabels every image, and is not caught by comparing the splits' lists when both are
    /// edited alike) is refused. Absent in version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes_crc32: Option<u32>,
    /// The shards, in order.
    pub shards: Vec<ShardInfo>,
    /// Files of the source left out because they could not be decoded.
    #[serde(default)]
    pub left_out: usize,
    /// The filter they were resized with.
    pub resize_filter: ResizeFilter,
    /// CRC-32 of every entry above as stored ([`PackedIndex::sealed`]): the shards' order, an
    /// edited side, count or filter. Absent before version 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_crc32: Option<u32>,
}

impl PackedIndex {
    /// The CRC-32 of the index's entries (its JSON without `index_crc32`).
    fn checksum(&self) -> u32 {
        let bare = PackedIndex { index_crc32: None, ..self.clone() };
        crate::data::checksum::json_crc32(&bare)
    }

    /// This index with its checksum, as `owt prepare` writes it.
    pub fn sealed(self) -> Self {
        let index_crc32 = Some(self.checksum());
        PackedIndex { index_crc32, ..self }
    }
}

/// One shard of a split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// File name within the split's directory.
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// CRC-32 of its bytes.
    pub crc32: u32,
}

/// Where one image lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Shard index.
    pub shard: u32,
    /// Byte offset in the shard.
    pub offset: u64,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Class id.
    pub class: u32,
}

impl Record {
    /// The record as stored.
    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut out = [0u8; RECORD_BYTES];
        out[0..4].copy_from_slice(&self.shard.to_le_bytes());
        out[4..12].copy_from_slice(&self.offset.to_le_bytes());
        out[12..16].copy_from_slice(&self.width.to_le_bytes());
        out[16..20].copy_from_slice(&self.height.to_le_bytes());
        out[20..24].copy_from_slice(&self.class.to_le_bytes());
        out
    }

    /// A stored record.
    pub fn from_bytes(b: &[u8]) -> Self {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Record {
            shard: u32_at(0),
            offset: u64::from_le_bytes(b[4..12].try_into().expect("8 bytes")),
            width: u32_at(12),
            height: u32_at(16),
            class: u32_at(20),
        }
    }

    /// Bytes of the image's pixels.
    pub fn len(&self) -> u64 {
        self.width as u64 * self.height as u64 * 3
    }

    /// Whether the image has no pixels.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A memory-mapped shard and, once checked, whether its bytes are what the index says.
#[derive(Debug)]
struct Shard {
    path: PathBuf,
    map: Mmap,
    crc32: u32,
    verified: OnceLock<Result<(), String>>,
}

impl Shard {
    /// The shard's bytes, after their checksum was verified (the first call reads the whole
    /// shard once).
    fn verified_bytes(&self) -> Result<&[u8], String> {
        let check = self.verified.get_or_init(|| {
            let got = crc32fast::hash(&self.map);
            (got == self.crc32).then_some(()).ok_or_else(|| {
                format!(
                    "{} is damaged: its CRC-32 is {got:08x}, the index says {:08x}; prepare the split again (owt prepare)",
                    self.path.display(),
                    self.crc32
                )
            })
        });
        check.clone().map(|()| &self.map[..])
    }
}

/// A packed split as an image source: training crops and flips cut from the stored images
/// (drawn exactly as an image folder draws them, so a packed copy trains on the folder's
/// pixels), centre crops for evaluation.
#[derive(Debug, Clone)]
pub struct PackedImages {
    dir: PathBuf,
    index: Arc<PackedIndex>,
    records: Arc<Vec<Record>>,
    shards: Arc<Vec<Shard>>,
    channels: usize,
    /// The shorter side the crops are cut from (the stored side, or images are resized to it).
    resize: usize,
    crop: usize,
    /// The filter of any resize at load time (a side other than the stored one).
    filter: ResizeFilter,
    clock: Arc<StageClock>,
    /// The first damaged shard met.
    damaged: Arc<OnceLock<String>>,
}

impl PackedImages {
    /// Opens the packed split in `dir`, for `channels` (1 or 3) and `crop` x `crop` inputs cut
    /// from images whose shorter side is `resize` (the stored side; other sides are resized
    /// from the stored images at load time), resized with `filter` (the one they were stored
    /// with: another would not give the folder's pixels). Refused in one line when the index is
    /// missing, of another format or damaged, the filter is not the stored one, or a shard is
    /// missing or truncated.
    pub fn open(
        dir: &Path,
        channels: usize,
        resize: usize,
        crop: usize,
        filter: ResizeFilter,
    ) -> Result<Self, OwtError> {
        if channels != 1 && channels != 3 {
            return Err(OwtError::data(format!("packed images give 1 or 3 channels, got {channels}")));
        }
        let index_path = dir.join(INDEX_FILE);
        let bytes =
            crate::host::bounded_read::read(&index_path, MAX_INDEX_BYTES, "a packed split's index").map_err(|e| {
                OwtError::data(format!(
                    "{}: {e}; --dataset packed reads the output of `owt prepare` (DIR/train, DIR/val)",
                    index_path.display()
                ))
            })?;
        let index: PackedIndex = serde_json::from_slice(&bytes)
            .map_err(|e| OwtError::data(format!("{}: not a packed split's index: {e}", index_path.display())))?;
        if index.format != FORMAT || !READ_VERSIONS.contains(&index.version) {
            return Err(OwtError::data(format!(
                "{}: format {:?} version {}, expected {FORMAT:?} version {} to {}",
                index_path.display(),
                index.format,
                index.version,
                READ_VERSIONS.start(),
                READ_VERSIONS.end()
            )));
        }
        let crc = classes_crc32(&index.classes);
        match index.classes_crc32 {
            Some(stored) if stored == crc => {}
            None if index.version == 1 => {}
            stored => {
                return Err(OwtError::data(format!(
                    "{}: its class list ({} classes, first {:?}) was changed since it was packed: its CRC-32 is {crc:08x}, the index says {}; every image's label is an index into it, so restore the list or prepare the split again (owt prepare)",
                    index_path.display(),
                    index.classes.len(),
                    index.classes.first().map(String::as_str).unwrap_or(""),
                    stored.map_or("none".to_string(), |s| format!("{s:08x}"))
                )));
            }
        }
        // The class list first (its own message), then every other entry.
        match index.index_crc32 {
            Some(stored) if stored == index.checksum() => {}
            None if index.version < 3 => {}
            stored => {
                return Err(OwtError::data(format!(
                    "{}: its entries (the shards, their order, the side, counts or filter) were changed since it was packed: their CRC-32 is {:08x}, the index says {}; restore it or prepare the split again (owt prepare)",
                    index_path.display(),
                    index.checksum(),
                    stored.map_or("none".to_string(), |s| format!("{s:08x}"))
                )));
            }
        }
        if index.side < crop {
            return Err(OwtError::data(format!(
                "{}: its images were resized to a shorter side of {}, smaller than the {crop} x {crop} input cut from them; prepare it with --side {} or more",
                dir.display(),
                index.side,
                resize.max(crop)
            )));
        }
        if index.resize_filter != filter {
            return Err(OwtError::data(format!(
                "{}: its images were resized with the {} filter, the model resizes with {}; prepare it with --resize-filter {}",
                dir.display(),
                index.resize_filter.name(),
                filter.name(),
                filter.name()
            )));
        }
        let records = read_records(dir, &index)?;
        let shards = index.shards.iter().map(|s| map_shard(dir, s)).collect::<Result<Vec<_>, _>>()?;
        check_records(dir, &index, &records)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            index: Arc::new(index),
            records: Arc::new(records),
            shards: Arc::new(shards),
            channels,
            resize,
            crop,
            filter,
            clock: Arc::default(),
            damaged: Arc::default(),
        })
    }

    /// `n` of the split's images, evenly spaced through it (every class keeps its share):
    /// `--limit`. All of them when `n` is not smaller.
    pub fn evenly_spaced(mut self, n: usize) -> Self {
        let len = self.records.len();
        if n < len {
            self.records = Arc::new((0..n).map(|i| self.records[i * len / n]).collect());
        }
        self
    }

    /// Class names, in class-id order.
    pub fn class_names(&self) -> &[String] {
        &self.index.classes
    }

    /// The shorter side the images were stored at.
    pub fn stored_side(&self) -> usize {
        self.index.side
    }

    /// The image at `index` as stored (or resized to the side asked for), or why not (its
    /// shard is damaged).
    pub fn resized(&self, index: usize) -> Result<Rgb, String> {
        let record = self.records[index];
        let shard = &self.shards[record.shard as usize];
        let bytes = self.clock.time(Stage::Read, || shard.verified_bytes())?;
        let pixels = &bytes[record.offset as usize..(record.offset + record.len()) as usize];
        let stored = Rgb { width: record.width as usize, height: record.height as usize, pixels: pixels.to_vec() };
        self.clock.count(1);
        if stored.shorter_side() == self.resize {
            return Ok(stored);
        }
        Ok(self.clock.time(Stage::Resize, || resize_shorter_to(&stored, self.resize, filter_of(self.filter))))
    }

    /// The patch of the image at `index`: cut straight from the mapped shard when the
    /// stored side is the one asked for.
    fn patch(&self, index: usize, augment: bool, rng: &mut dyn rand::RngCore) -> Result<Vec<u8>, String> {
        let record = self.records[index];
        let (w, h) = (record.width as usize, record.height as usize);
        if w.min(h) != self.resize {
            let image = self.resized(index)?;
            let crop = self.draw(image.width, image.height, augment, rng);
            return Ok(self.clock.time(Stage::Crop, || crop.planes(&image, self.crop, self.channels)));
        }
        let shard = &self.shards[record.shard as usize];
        let bytes = self.clock.time(Stage::Read, || shard.verified_bytes())?;
        let pixels = &bytes[record.offset as usize..(record.offset + record.len()) as usize];
        let crop = self.draw(w, h, augment, rng);
        self.clock.count(1);
        Ok(self.clock.time(Stage::Crop, || crop.planes_of(pixels, w, self.crop, self.channels)))
    }

    fn draw(&self, w: usize, h: usize, augment: bool, rng: &mut dyn rand::RngCore) -> Crop {
        if augment {
            Crop::random(rng, w, h, self.crop)
        } else {
            Crop::centre(w, h, self.crop)
        }
    }
}

/// The CRC-32 of a class list: each name's length (8 bytes, little-endian) and bytes, in
/// class-id order, so that no two lists (a name holding a newline included) give one input.
pub fn classes_crc32(classes: &[String]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for name in classes {
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
    }
    hasher.finalize()
}

/// Reads and checks `records.bin`.
fn read_records(dir: &Path, index: &PackedIndex) -> Result<Vec<Record>, OwtError> {
    let path = dir.join(RECORDS_FILE);
    let limit = (index.images as u64).saturating_mul(RECORD_BYTES as u64);
    let bytes = crate::host::bounded_read::read(&path, limit, "a packed split's record table")
        .map_err(|e| OwtError::data(format!("{}: {e}", path.display())))?;
    if bytes.len() as u64 != limit {
        return Err(OwtError::data(format!(
            "{} is truncated: {} bytes, expected {limit} ({} images of {RECORD_BYTES} bytes); prepare the split again (owt prepare)",
            path.display(),
            bytes.len(),
            index.images
        )));
    }
    let crc = crc32fast::hash(&bytes);
    if crc != index.records_crc32 {
        return Err(OwtError::data(format!(
            "{} is damaged: its CRC-32 is {crc:08x}, the index says {:08x}; prepare the split again (owt prepare)",
            path.display(),
            index.records_crc32
        )));
    }
    Ok(bytes.chunks_exact(RECORD_BYTES).map(Record::from_bytes).collect())
}

/// Maps a shard, refused when it is missing or its length is not the index's.
fn map_shard(dir: &Path, info: &ShardInfo) -> Result<Shard, OwtError> {
    let path = dir.join(&info.file);
    let file = crate::host::bounded_read::open_regular(&path)
        .map_err(|e| OwtError::data(format!("cannot open shard {}: {e}", path.display())))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len != info.bytes {
        let how = if len < info.bytes { "truncated" } else { "longer than its index says" };
        return Err(OwtError::data(format!(
            "shard {} is {how}: {len} bytes, the index says {}; prepare the split again (owt prepare)",
            path.display(),
            info.bytes
        )));
    }
    // SAFETY: the map is read-only and the file is not changed while owt reads it (a shard is
    // written once, under another name, and renamed into place).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| OwtError::data(format!("cannot map {}: {e}", path.display())))?;
    Ok(Shard { path, map, crc32: info.crc32, verified: OnceLock::new() })
}

/// Refuses records that point outside their shard or name a class the index has not.
fn check_records(dir: &Path, index: &PackedIndex, records: &[Record]) -> Result<(), OwtError> {
    for (i, r) in records.iter().enumerate() {
        let shard = index.shards.get(r.shard as usize);
        let fits = shard.is_some_and(|s| r.offset.checked_add(r.len()).is_some_and(|end| end <= s.bytes));
        let sized = (r.width.min(r.height) as usize) == index.side;
        if !fits || !sized || r.class as usize >= index.classes.len() {
            return Err(OwtError::data(format!(
                "{}: record {i} ({r:?}) does not fit its index ({} shards, side {}, {} classes); prepare the split again (owt prepare)",
                dir.display(),
                index.shards.len(),
                index.side,
                index.classes.len()
            )));
        }
    }
    Ok(())
}

impl ImageSource for PackedImages {
    fn len(&self) -> usize {
        self.records.len()
    }

    fn image_dims(&self) -> [usize; 3] {
        [self.channels, self.crop, self.crop]
    }

    fn classes(&self) -> usize {
        self.index.classes.len()
    }

    fn class_names(&self) -> Vec<String> {
        self.index.classes.clone()
    }

    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> Batch {
        let size = self.channels * self.crop * self.crop;
        let mut images = Vec::with_capacity(indices.len() * size);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            match self.patch(i, augment, rng) {
                Ok(pixels) => images.extend(pixels),
                Err(why) => {
                    // `problem` refuses the split before this batch is used.
                    let _ = self.damaged.set(why);
                    images.extend(std::iter::repeat_n(0, size));
                }
            }
            labels.push(self.records[i].class as i64);
        }
        Batch::new(images, labels, [indices.len(), self.channels, self.crop, self.crop])
    }

    fn stages(&self) -> Option<&StageClock> {
        Some(&self.clock)
    }

    fn problem(&self) -> Option<OwtError> {
        self.damaged.get().map(|why| OwtError::data(format!("packed split {}: {why}", self.dir.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_checksum_covers_the_order_of_the_shards_and_every_entry() {
        let shard = |i: u32| ShardInfo { file: format!("shard-{i:05}.bin"), bytes: 1000 + i as u64, crc32: i };
        let index = PackedIndex {
            format: FORMAT.into(),
            version: VERSION,
            side: 256,
            classes: vec!["cat".into(), "dog".into()],
            images: 7,
            records_crc32: 1,
            classes_crc32: Some(classes_crc32(&["cat".into(), "dog".into()])),
            shards: vec![shard(0), shard(1)],
            left_out: 0,
            resize_filter: ResizeFilter::Area,
            index_crc32: None,
        }
        .sealed();
        let sealed = index.index_crc32.unwrap();
        assert_eq!(index.checksum(), sealed, "read back, it checks");
        let json: PackedIndex = serde_json::from_slice(&serde_json::to_vec_pretty(&index).unwrap()).unwrap();
        assert_eq!(json.checksum(), sealed, "through its JSON");
        let mut swapped = index.clone();
        swapped.shards.swap(0, 1);
        let mut side = index.clone();
        side.side = 224;
        let mut left = index.clone();
        left.left_out = 3;
        let mut filter = index.clone();
        filter.resize_filter = ResizeFilter::Bilinear;
        for (what, edited) in [("shards swapped", swapped), ("side", side), ("left out", left), ("filter", filter)] {
            assert_ne!(edited.checksum(), sealed, "{what}");
        }
    }
}
