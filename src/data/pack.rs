//! Writing the packed format ([`crate::data::packed`]): a split's images decoded and resized
//! on worker threads, written in index order into shards of raw RGB, with the record table
//! and the index last. Files that cannot be decoded are left out and counted as a folder
//! counts them (refused above the same 1%).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::data::folder::{ImageFolder, MAX_UNDECODABLE};
use crate::data::packed::{PackedIndex, Record, ShardInfo, FORMAT, INDEX_FILE, RECORDS_FILE, VERSION};
use crate::data::ImageSource;
use crate::error::OwtError;

/// How a split is packed.
#[derive(Debug, Clone, Copy)]
pub struct PackOptions {
    /// Threads decoding and resizing.
    pub workers: usize,
    /// A shard is closed once it holds at least this many bytes.
    pub shard_bytes: u64,
    /// Progress on stderr.
    pub verbose: bool,
}

/// What packing a split did.
#[derive(Debug, Clone, PartialEq)]
pub struct PackSummary {
    /// Images written.
    pub images: usize,
    /// Shards written.
    pub shards: usize,
    /// Bytes of pixels written.
    pub bytes: u64,
    /// Files left out (undecodable).
    pub left_out: usize,
}

/// Packs every image of `folder` (opened with the resize side the pack stores) into `dir`
/// (which must exist and be empty): shards `shard-NNNNN.bin`, `records.bin`, `index.json`.
/// `name` names the split in progress lines.
pub fn pack_split(folder: &ImageFolder, dir: &Path, name: &str, opts: PackOptions) -> Result<PackSummary, OwtError> {
    let n = folder.len();
    let next = AtomicUsize::new(0);
    let workers = opts.workers.max(1).min(n.max(1));
    let io = |e: std::io::Error, what: &Path| OwtError::io(format!("cannot write {}: {e}", what.display()));
    std::thread::scope(|scope| -> Result<PackSummary, OwtError> {
        // At most a few images per worker wait to be written.
        let (tx, rx) = std::sync::mpsc::sync_channel(4 * workers);
        for _ in 0..workers {
            let (tx, next) = (tx.clone(), &next);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n || tx.send((i, folder.resized(i))).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut writer = ShardWriter::new(dir, opts.shard_bytes);
        let mut pending = BTreeMap::new();
        let (mut records, mut bad) = (Vec::with_capacity(n), Vec::new());
        let (started, mut said) = (Instant::now(), Instant::now());
        let mut done = 0;
        for (i, image) in rx {
            pending.insert(i, image);
            while let Some(image) = pending.remove(&done) {
                match image {
                    Ok(rgb) => {
                        let (shard, offset) = writer.write(&rgb.pixels).map_err(|e| io(e, &writer.path()))?;
                        let (width, height) = (rgb.width as u32, rgb.height as u32);
                        records.push(Record { shard, offset, width, height, class: folder.files()[done].1 as u32 });
                    }
                    Err(why) => bad.push(format!("{} ({why})", folder.files()[done].0.display())),
                }
                done += 1;
            }
            if opts.verbose && said.elapsed() > Duration::from_secs(5) {
                let rate = done as f64 / started.elapsed().as_secs_f64();
                crate::err_line!("{name}: {done}/{n} images ({rate:.0} images/s)");
                said = Instant::now();
            }
        }
        let left_out = folder.left_out_at_open() + bad.len();
        let total = n + folder.left_out_at_open();
        if left_out as f64 > MAX_UNDECODABLE * total as f64 {
            return Err(OwtError::data(format!(
                "{left_out} of {total} images of {name} cannot be decoded, e.g. {}: more than {}% of the split; fix or remove them",
                bad.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
                MAX_UNDECODABLE * 100.0
            )));
        }
        if let Some(first) = bad.first() {
            crate::err_line!(
                "warning: {} images of {name} cannot be decoded and are left out, e.g. {first}",
                bad.len()
            );
        }
        let shards = writer.finish().map_err(|e| io(e, dir))?;
        let table: Vec<u8> = records.iter().flat_map(Record::to_bytes).collect();
        write_synced(&dir.join(RECORDS_FILE), &table).map_err(|e| io(e, &dir.join(RECORDS_FILE)))?;
        let bytes = shards.iter().map(|s| s.bytes).sum();
        let index = PackedIndex {
            format: FORMAT.into(),
            version: VERSION,
            side: folder.resize_side(),
            classes: folder.class_names().to_vec(),
            images: records.len(),
            records_crc32: crc32fast::hash(&table),
            classes_crc32: Some(crate::data::packed::classes_crc32(folder.class_names())),
            shards,
            left_out,
            resize_filter: folder.filter(),
            index_crc32: None,
        }
        .sealed();
        let json = serde_json::to_vec_pretty(&index).map_err(|e| OwtError::io(e.to_string()))?;
        write_synced(&dir.join(INDEX_FILE), &json).map_err(|e| io(e, &dir.join(INDEX_FILE)))?;
        Ok(PackSummary { images: records.len(), shards: index.shards.len(), bytes, left_out })
    })
}

/// Writes `bytes` to a new file at `path` and syncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Shards written one after another, each closed once it holds `limit` bytes.
struct ShardWriter<'a> {
    dir: &'a Path,
    limit: u64,
    done: Vec<ShardInfo>,
    open: Option<(std::io::BufWriter<std::fs::File>, crc32fast::Hasher, u64)>,
}

impl<'a> ShardWriter<'a> {
    fn new(dir: &'a Path, limit: u64) -> Self {
        Self { dir, limit: limit.max(1), done: Vec::new(), open: None }
    }

    fn name(index: usize) -> String {
        format!("shard-{index:05}.bin")
    }

    /// The file being written (or to be written next).
    fn path(&self) -> std::path::PathBuf {
        self.dir.join(Self::name(self.done.len()))
    }

    /// Appends one image's pixels; returns its shard and offset.
    fn write(&mut self, pixels: &[u8]) -> std::io::Result<(u32, u64)> {
        if self.open.is_none() {
            let file = std::fs::File::create(self.path())?;
            self.open = Some((std::io::BufWriter::with_capacity(1 << 20, file), crc32fast::Hasher::new(), 0));
        }
        let shard = self.done.len() as u32;
        let (out, crc, len) = self.open.as_mut().expect("opened above");
        let offset = *len;
        out.write_all(pixels)?;
        crc.update(pixels);
        *len += pixels.len() as u64;
        if *len >= self.limit {
            self.close()?;
        }
        Ok((shard, offset))
    }

    fn close(&mut self) -> std::io::Result<()> {
        if let Some((out, crc, bytes)) = self.open.take() {
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            self.done.push(ShardInfo { file: Self::name(self.done.len()), bytes, crc32: crc.finalize() });
        }
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<Vec<ShardInfo>> {
        self.close()?;
        Ok(self.done)
    }
}
