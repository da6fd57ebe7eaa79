//! Batches prepared ahead on a pool of worker threads ([`Prefetch`]): each batch is cut into
//! spans of consecutive images, workers take the spans in order (never more than `ahead`
//! batches beyond the one being used), and batches are handed out in order. Every image's
//! random crop and flip come from its own generator ([`image_rng`]: the epoch's base draw and
//! the image's position), so the batches are byte for byte those of one thread, for any
//! number of workers and whichever worker takes which span.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;

use crate::data::stages::Stage;
use crate::data::{Batch, ImageSource};
use crate::error::OwtError;

/// How batches are prepared: on how many threads, and how far ahead of the step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preparation {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// Batches prepared (or being prepared) ahead of the one in use (at least 1).
    pub ahead: usize,
}

impl Preparation {
    /// `workers` threads preparing up to `ahead` batches ahead.
    pub fn new(workers: usize, ahead: usize) -> Self {
        Self { workers: workers.max(1), ahead: ahead.max(1) }
    }

    /// One thread, `ahead` batches ahead.
    pub fn one_thread(ahead: usize) -> Self {
        Self::new(1, ahead)
    }

    /// As many threads as the cores this process may use (`--workers`' default).
    pub fn all_cores(ahead: usize) -> Self {
        Self::new(available_cores(), ahead)
    }
}

/// The cores this process may use (1 when the system does not say).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The generator of the random crop and flip of the image at position `at` of an epoch's
/// order: a function of the epoch's `base` draw and the position alone, so a process that
/// prepares only its rows of a batch, or a worker that prepares only a span of them, draws
/// for them what one thread preparing the whole batch would.
pub fn image_rng(base: u64, at: usize) -> StdRng {
    use rand::SeedableRng;
    // SplitMix64's finaliser over the position, mixed into the base.
    let mut z = base ^ (at as u64).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    StdRng::seed_from_u64(z ^ (z >> 31))
}

/// One worker's piece of work: positions `positions` (within the epoch's order) of batch
/// `batch`, span `index` of that batch's spans.
#[derive(Debug, Clone)]
struct Task {
    batch: usize,
    index: usize,
    positions: std::ops::Range<usize>,
}

/// What every worker reads: the source, the order, and how it is cut.
struct Work {
    source: Arc<dyn ImageSource>,
    order: Vec<usize>,
    augment: bool,
    base: u64,
    tasks: Vec<Task>,
    /// Per batch: its rows (prepared here) of its `total` images, and its number of spans.
    batches: Vec<(std::ops::Range<usize>, usize, usize)>,
    ahead: usize,
}

/// A batch being prepared: its spans as they arrive, then the batch (or why not).
#[derive(Default)]
struct Slot {
    parts: BTreeMap<usize, Batch>,
    ready: Option<Result<Batch, String>>,
}

/// What the workers and the consumer share under the lock.
#[derive(Default)]
struct State {
    next_task: usize,
    /// Batches handed out.
    taken: usize,
    slots: BTreeMap<usize, Slot>,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// A batch became ready.
    ready: Condvar,
    /// A batch was taken (room for more work), or the pool stops.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Batches of an image source in a given order, prepared on [`Preparation::workers`] threads
/// up to [`Preparation::ahead`] batches before they are asked for, handed out in order.
pub struct Prefetch {
    work: Arc<Work>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    next: usize,
    waited: Duration,
    failed: bool,
}

impl Prefetch {
    /// Starts preparing `order` in chunks of `batch` images of `source` (`augment`: random
    /// crops and flips, each image's drawn from [`image_rng`] of a base drawn from `rng`).
    pub fn start(
        source: Arc<dyn ImageSource>,
        order: Vec<usize>,
        batch: usize,
        augment: bool,
        rng: StdRng,
        how: Preparation,
    ) -> Self {
        Self::start_rows(source, order, batch, augment, rng, how, owt_hybrid::RowSplit::whole())
    }

    /// [`Prefetch::start`] preparing only the rows of each batch that `split` names (a
    /// process's share in a job of several processes): the same images, crops and flips as
    /// those rows of the whole batch.
    pub fn start_rows(
        source: Arc<dyn ImageSource>,
        order: Vec<usize>,
        batch: usize,
        augment: bool,
        mut rng: StdRng,
        how: Preparation,
        split: owt_hybrid::RowSplit,
    ) -> Self {
        let base = rand::RngCore::next_u64(&mut rng);
        let size = batch.max(1);
        let grain = source.grain().max(1);
        // Spans of about a quarter of a worker's share of a batch, whole grains: enough
        // pieces that the workers finish a batch together, few enough to cost nothing.
        let span = size.div_ceil(4 * how.workers).div_ceil(grain) * grain;
        let mut tasks = Vec::new();
        let mut batches = Vec::new();
        for (k, chunk) in order.chunks(size).enumerate() {
            let rows = split.rows(chunk.len());
            let start = tasks.len();
            let mut at = rows.start;
            while at < rows.end {
                let end = (at + span).min(rows.end);
                tasks.push(Task { batch: k, index: tasks.len() - start, positions: k * size + at..k * size + end });
                at = end;
            }
            batches.push((rows, chunk.len(), tasks.len() - start));
        }
        let shared = Arc::new(Shared::default());
        // A batch with no rows here (none of its images are this process's) is ready now.
        for (k, (rows, total, spans)) in batches.iter().enumerate() {
            if *spans == 0 {
                let empty = Batch::rows_of(Vec::new(), rows.clone(), *total, source.image_dims());
                shared.lock().slots.insert(k, Slot { ready: Some(Ok(empty)), ..Slot::default() });
            }
        }
        let work = Arc::new(Work { source, order, augment, base, tasks, batches, ahead: how.ahead });
        let threads = (0..how.workers.min(work.tasks.len()))
            .map(|i| {
                let (work, shared) = (work.clone(), shared.clone());
                std::thread::Builder::new()
                    .name(format!("owt-batches-{i}"))
                    .spawn(move || run_worker(&work, &shared))
                    .expect("spawning a batch preparation thread")
            })
            .collect();
        Self { work, shared, threads, next: 0, waited: Duration::ZERO, failed: false }
    }

    /// The next batch; `Ok(None)` at the end, an error if the source can no longer be used
    /// (see [`ImageSource::problem`]) or preparing it failed (the worker's panic message).
    pub fn next_batch(&mut self) -> Result<Option<Batch>, OwtError> {
        if self.failed || self.next == self.work.batches.len() {
            return Ok(None);
        }
        let started = Instant::now();
        let mut state = self.shared.lock();
        let ready = loop {
            if let Some(ready) = state.slots.get_mut(&self.next).and_then(|s| s.ready.take()) {
                break ready;
            }
            state = self.shared.ready.wait(state).unwrap_or_else(|e| e.into_inner());
        };
        state.slots.remove(&self.next);
        state.taken += 1;
        drop(state);
        self.shared.room.notify_all();
        self.waited += started.elapsed();
        self.next += 1;
        let problem = ready
            .map_err(|why| OwtError::data(format!("preparing a batch failed: {why}")))
            .and_then(|batch| self.work.source.problem().map_or(Ok(batch), Err));
        if problem.is_err() {
            self.failed = true;
            self.stop();
        }
        problem.map(Some)
    }

    /// How long [`Prefetch::next_batch`] has waited for batches so far: the time the step
    /// spent waiting for its input.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    fn stop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.room.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A worker: takes the next span while its batch is within `ahead` of the one in use,
/// prepares it, and the worker that finishes a batch's last span puts the batch together.
fn run_worker(work: &Work, shared: &Shared) {
    loop {
        let task = {
            let mut state = shared.lock();
            loop {
                if state.stop || state.next_task == work.tasks.len() {
                    return;
                }
                if work.tasks[state.next_task].batch < state.taken + work.ahead {
                    break;
                }
                state = shared.room.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            state.next_task += 1;
            work.tasks[state.next_task - 1].clone()
        };
        let part = catch_unwind(AssertUnwindSafe(|| prepare(work, &task))).map_err(panic_message);
        let mut state = shared.lock();
        let (rows, total, spans) = work.batches[task.batch].clone();
        let slot = state.slots.entry(task.batch).or_default();
        match part {
            Err(why) => slot.ready = Some(Err(why)),
            Ok(part) if slot.ready.is_none() => {
                slot.parts.insert(task.index, part);
                if slot.parts.len() == spans {
                    let parts: Vec<Batch> = std::mem::take(&mut slot.parts).into_values().collect();
                    drop(state);
                    let dims = work.source.image_dims();
                    let assemble = || Batch::rows_of(parts, rows, total, dims);
                    let batch = match work.source.stages() {
                        Some(clock) => clock.time(Stage::Assemble, assemble),
                        None => assemble(),
                    };
                    state = shared.lock();
                    state.slots.entry(task.batch).or_default().ready = Some(Ok(batch));
                }
            }
            Ok(_) => {} // The batch already failed.
        }
        drop(state);
        shared.ready.notify_all();
    }
}

/// The images of one span, each with its own generator.
fn prepare(work: &Work, task: &Task) -> Batch {
    let indices = &work.order[task.positions.clone()];
    let first = task.positions.start;
    work.source.batch_each(indices, work.augment, &|j| image_rng(work.base, first + j))
}

/// A worker's panic as text.
fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown error".into())
}
