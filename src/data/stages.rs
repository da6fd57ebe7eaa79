//! Where preparing images spends its time: each stage's seconds summed over every image and
//! every worker thread (read, decode, resize, crop, assemble), kept by the sources that do
//! the work and read by `owt bench --loader`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;

/// A stage of preparing an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The file's bytes read (or a packed shard's pages touched).
    Read,
    /// The bytes decoded to pixels.
    Decode,
    /// Resized to the split's shorter side.
    Resize,
    /// The patch cut, mirrored and laid out as channel planes (lighting noise included).
    Crop,
    /// The images put together into a batch.
    Assemble,
}

const STAGES: usize = 5;

/// Nanoseconds per stage, summed over threads; shared by every clone of a source.
#[derive(Debug, Default)]
pub struct StageClock {
    nanos: [AtomicU64; STAGES],
    images: AtomicU64,
}

impl StageClock {
    /// Runs `work`, adding its time to `stage`.
    pub fn time<T>(&self, stage: Stage, work: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = work();
        self.nanos[stage as usize].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }

    /// Counts `n` images prepared.
    pub fn count(&self, n: usize) {
        self.images.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// What was added so far.
    pub fn read(&self) -> StageTimes {
        let s = |stage: Stage| self.nanos[stage as usize].load(Ordering::Relaxed) as f64 * 1e-9;
        StageTimes {
            images: self.images.load(Ordering::Relaxed),
            read_s: s(Stage::Read),
            decode_s: s(Stage::Decode),
            resize_s: s(Stage::Resize),
            crop_s: s(Stage::Crop),
            assemble_s: s(Stage::Assemble),
        }
    }
}

/// Seconds per stage over all threads, and the images they were spent on.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct StageTimes {
    /// Images prepared.
    pub images: u64,
    /// Reading files.
    pub read_s: f64,
    /// Decoding.
    pub decode_s: f64,
    /// Resizing.
    pub resize_s: f64,
    /// Cropping, mirroring, channel planes, lighting noise.
    pub crop_s: f64,
    /// Putting batches together.
    pub assemble_s: f64,
}

impl StageTimes {
    /// The stages' names and seconds, in pipeline order.
    pub fn stages(&self) -> [(&'static str, f64); STAGES] {
        [
            ("read", self.read_s),
            ("decode", self.decode_s),
            ("resize", self.resize_s),
            ("crop", self.crop_s),
            ("assemble", self.assemble_s),
        ]
    }

    /// Thread-seconds over all stages.
    pub fn total_s(&self) -> f64 {
        self.stages().iter().map(|(_, s)| s).sum()
    }
}
