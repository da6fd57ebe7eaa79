//! `owt bench --loader`: the input pipeline alone, as training drives it (the training split,
//! random crops and flips, `--workers` threads, two batches ahead) with no network behind it:
//! images/s after warmup batches, and where the workers' time went, stage by stage (read,
//! decode, resize, crop, assemble). A training epoch reports the other side of the same
//! question: how long its steps waited for input (`input_wait_s`).

use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use crate::cli::bench_args::BenchArgs;
use crate::data::stages::StageTimes;
use crate::data::{open_splits, DataRequest};
use crate::error::OwtError;
use crate::train::prefetch::{Prefetch, Preparation};
use crate::train::trainer::PREFETCH;

/// What `owt bench --loader` measured (its `--json`).
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    /// The dataset, as `--dataset` names it.
    pub dataset: String,
    /// Images per batch.
    pub batch: usize,
    /// Worker threads.
    pub workers: usize,
    /// Untimed batches.
    pub warmup: usize,
    /// Timed batches.
    pub batches: usize,
    /// Images per second over the timed batches (wall clock).
    pub images_per_s: f64,
    /// Images per second per worker.
    pub images_per_s_per_worker: f64,
    /// `[channels, side, side]` of each prepared image.
    pub image: [usize; 3],
    /// Thread-seconds per stage over every batch (warmup included), with their images.
    pub stages: StageTimes,
}

impl InputReport {
    /// The report as text: the rate, then milliseconds per image by stage.
    pub fn table(&self) -> String {
        let [c, h, w] = self.image;
        let mut out = format!(
            "input pipeline on {} ({c} x {h} x {w} images, batch {}, {} workers): {:.1} images/s ({:.1} per worker) over {} batches after {} warmup\n",
            self.dataset,
            self.batch,
            self.workers,
            self.images_per_s,
            self.images_per_s_per_worker,
            self.batches,
            self.warmup
        );
        let n = self.stages.images.max(1) as f64;
        if self.stages.total_s() > 0.0 {
            out += "stage     ms per image  share\n";
            for (name, s) in self.stages.stages() {
                out += &format!("{name:<9} {:>12.3} {:>5.1}%\n", 1e3 * s / n, 100.0 * s / self.stages.total_s());
            }
            out += &format!("{:<9} {:>12.3}\n", "total", 1e3 * self.stages.total_s() / n);
        }
        out
    }
}

/// Refuses, before anything is read or allocated, a loader benchmark whose image order
/// (`batches` x `--batch` indices, made up front), batches in flight and synthetic images
/// (held in memory) need more than `available` bytes, naming the flags to lower.
fn check_memory(args: &BenchArgs, image: [usize; 3], batches: usize, available: Option<u64>) -> Result<(), OwtError> {
    let image_bytes = image.iter().map(|&d| d as u128).product::<u128>();
    let images = batches as u128 * args.batch as u128;
    let order = images * std::mem::size_of::<usize>() as u128;
    // Each batch in flight as bytes and as the f32 values handed to the step.
    let in_flight = (PREFETCH as u128 + 1) * args.batch as u128 * image_bytes * 5;
    let synthetic = match args.dataset {
        crate::data::DatasetKind::Synthetic => {
            let n = args.limit.unwrap_or(crate::data::SYNTHETIC_TRAIN) as u128;
            (n + (n / 4).max(1)) * image_bytes
        }
        _ => 0,
    };
    let needed = order + in_flight + synthetic;
    let fits = match available {
        Some(available) => needed <= available as u128,
        None => needed <= u64::MAX as u128,
    };
    if fits {
        return Ok(());
    }
    let human = |b: u128| crate::train::budget::human(b.min(u64::MAX as u128) as u64);
    Err(OwtError::input(format!(
        "bench --loader at --batch {} over {batches} batches needs about {} ({} of image order, {} of batches in flight, {} of synthetic images), this machine has {} available: lower --batch, --steps, --warmup or --limit",
        args.batch,
        human(needed),
        human(order),
        human(in_flight),
        human(synthetic),
        available.map_or("less".to_string(), |a| human(a as u128))
    )))
}

/// Runs the loader benchmark `args` describe.
pub fn run(args: &BenchArgs) -> Result<InputReport, OwtError> {
    let spec = args.model.spec();
    let arch = spec.architecture()?;
    let request = DataRequest {
        dir: args.data.clone(),
        limit: args.limit,
        seed: args.seed,
        ..DataRequest::new(args.dataset, arch.input)
    }
    .resized_as(&spec);
    // At most MAX_BENCH_STEPS batches (checked by the caller).
    let batches = args.warmup + args.steps;
    check_memory(args, arch.input, batches, crate::train::budget::available_memory())?;
    let train = open_splits(&request)?.train;
    let images = batches * args.batch;
    // As many passes over the split as the batches need, each in its own order.
    let mut order = Vec::with_capacity(images);
    let mut rng = StdRng::seed_from_u64(args.seed);
    while order.len() < images {
        let mut pass: Vec<usize> = (0..train.len()).collect();
        rand::seq::SliceRandom::shuffle(pass.as_mut_slice(), &mut rng);
        order.extend(pass.into_iter().take(images - order.len()));
    }
    let workers = args.workers.count();
    let mut prefetch =
        Prefetch::start(train.clone(), order, args.batch, true, rng, Preparation::new(workers, PREFETCH));
    let mut timed_from = Instant::now();
    for k in 0..batches {
        if k == args.warmup {
            timed_from = Instant::now();
        }
        prefetch.next_batch()?.ok_or_else(|| OwtError::input("the loader benchmark ran out of batches"))?;
    }
    let seconds = timed_from.elapsed().as_secs_f64();
    drop(prefetch);
    let images_per_s = (args.steps * args.batch) as f64 / seconds;
    Ok(InputReport {
        dataset: format!("{:?}", args.dataset),
        batch: args.batch,
        workers,
        warmup: args.warmup,
        batches: args.steps,
        images_per_s,
        images_per_s_per_worker: images_per_s / workers as f64,
        image: train.image_dims(),
        stages: train.stages().map(|c| c.read()).unwrap_or_default(),
    })
}
