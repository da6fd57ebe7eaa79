//! The training loop, on one device or a mesh: SGD with momentum over shuffled batches,
//! evaluation per epoch, metrics (with the communication per step on a mesh) and an atomic
//! checkpoint after every epoch, exact resume.

use std::path::Path;
use std::time::Instant;

use burn::module::{AutodiffModule, Module};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use owt_hybrid::{LedgerSnapshot, StepLayout};
use owt_models::{Architecture, ConvNet, DropoutKey};

use crate::data::{Batch, Splits};
use crate::error::OwtError;
use crate::parallel::check_run;
use crate::train::atomic::write_atomic;
use crate::train::checkpoint::{record_from_bytes, record_to_bytes, Checkpoint, CheckpointState, InParameterOrder};
use crate::train::config::TrainConfig;
use crate::train::evaluate::evaluate_rows;
use crate::train::input::{upload_eval, Tally, TallyValues, UploadAhead};
use crate::train::metrics::{BesidesSteps, Communication, EpochMetrics, TrafficTotal};
use crate::train::momentum;
use crate::train::precision::LossScale;
use crate::train::prefetch::{available_cores, Prefetch, Preparation};
use crate::train::progress::Progress;
use crate::train::run_dir::RunDir;
use crate::train::run_sgd::RunSgd;
use crate::train::step::{train_step, AccumulatedStep, FcUpdate};

/// `arch`'s initial weights on `device` from `seed`, drawn alone: the nodes of a 2-D mesh run
/// as threads of one process share the backend's generator where it is process-wide
/// (Flex's), so each seeds and draws by itself, exactly what a process of its own would draw.
pub fn init_model<B: Backend>(arch: &Architecture, device: &B::Device, seed: u64) -> Result<ConvNet<B>, OwtError> {
    let _alone = INIT.lock().unwrap_or_else(|e| e.into_inner());
    B::seed(device, seed);
    Ok(arch.try_init(device)?)
}

/// Held while a run seeds the backend (and draws its initial weights after the first seed),
/// so that the nodes of a 2-D mesh run as threads never reseed a generator another is drawing
/// from (see [`train`]).
static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Steps between two reads of the running loss and accuracy by default: each read waits for
/// the device, so a GPU is not stopped at every step.
pub const READ_EVERY: usize = 10;

/// A mean loss this many times a uniform guess's counts as divergence.
pub const DIVERGENCE_FACTOR: f64 = 100.0;

/// The mean loss and image count since `last` when they mean divergence: a mean that is not
/// finite, or above [`DIVERGENCE_FACTOR`] times `uniform` (a uniform guess's loss).
pub fn divergence(last: &TallyValues, now: &TallyValues, uniform: f64) -> Option<(f64, usize)> {
    let images = now.images - last.images;
    let mean = (now.loss_sum - last.loss_sum) / images.max(1) as f64;
    (!(mean.is_finite() && mean <= DIVERGENCE_FACTOR * uniform)).then_some((mean, images))
}

/// Batches prepared ahead of the step that uses them.
pub const PREFETCH: usize = 2;

/// How a run reports progress and prepares its batches (where it writes is its [`RunDir`]).
#[derive(Debug, Clone)]
pub struct RunOptions<'a> {
    /// Progress lines on stderr and a summary line per epoch on stdout.
    pub verbose: bool,
    /// Steps between reads of the running loss and accuracy (progress and the divergence
    /// check happen at reads; the epoch's figures are exact regardless).
    pub read_every: usize,
    /// Threads preparing batches (`--workers`; the batches are the same for any number).
    pub workers: usize,
    /// Where the splits were read from (`--data`, or the dataset's default directory), kept
    /// in the checkpoint so that a resume on another folder is refused.
    pub data_dir: Option<&'a Path>,
    /// Micro-batches per optimizer step (`--accum-steps`, gradient accumulation): each step's
    /// batch of `TrainConfig::batch` images goes through the model in this many equal parts,
    /// their gradients summed and synced once. Not part of the run: a step equals one batch of
    /// them all (up to the order of float sums), so a run may resume with another count, as
    /// on another device count. Checkpoints fall between optimizer steps, never inside one.
    pub accum_steps: usize,
}

impl Default for RunOptions<'_> {
    /// Quiet, reading the running figures every [`READ_EVERY`] steps, a worker per core, one
    /// micro-batch a step.
    fn default() -> Self {
        Self { verbose: false, read_every: READ_EVERY, workers: available_cores(), data_dir: None, accum_steps: 1 }
    }
}

impl RunOptions<'_> {
    /// The images of each micro-batch of a step of `config`'s batch, or why the batch does not
    /// split into `accum_steps` of them.
    pub fn micro_batch(&self, config: &TrainConfig) -> Result<usize, OwtError> {
        let (batch, n) = (config.batch, self.accum_steps);
        if n == 0 {
            return Err(OwtError::input("--accum-steps must be at least 1, got 0"));
        }
        if n > 1 && config.fc_update == FcUpdate::PerChunk {
            return Err(OwtError::input(format!(
                "--accum-steps {n} sums micro-batches into one synchronous step; --fc-update per-chunk updates the FC layers within a step: use one of them"
            )));
        }
        if batch % n != 0 {
            return Err(OwtError::input(format!(
                "--accum-steps {n} splits each batch into {n} equal micro-batches: --batch must be a multiple of {n}, got {batch}"
            )));
        }
        Ok(batch / n)
    }
}

/// Every random draw of one epoch of a run: the order of the images, the random crops and
/// flips (a generator that continues after the shuffle), and each step's dropout masks. A
/// function of the run seed and the epoch only, so a resumed run draws exactly what an
/// uninterrupted one would; every epoch, and every step within one, draws anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochDraws {
    /// The epoch's seed (also the backend's, and the dropout keys').
    pub seed: u64,
}

impl EpochDraws {
    /// The draws of epoch `epoch` (0-based) of a run seeded `run_seed`.
    pub fn new(run_seed: u64, epoch: usize) -> Self {
        Self { seed: run_seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(epoch as u64 + 1) }
    }

    /// The order of `n` images, and the generator the epoch's crops and flips draw from.
    pub fn order(&self, n: usize) -> (Vec<usize>, StdRng) {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut rng);
        (order, rng)
    }

    /// The dropout masks of the epoch's step `step`.
    pub fn dropout_key(&self, step: usize) -> DropoutKey {
        DropoutKey::new(self.seed, step as u64)
    }
}

/// Trains `config` on `splits` with backend `B` laid out by `layout` (one device, or a mesh
/// under a plan), in the run directory `dir` made ready by [`crate::train::run_dir::prepare`] (or, on a
/// process of a job other than process 0, [`RunDir::joined`]), writing metrics and a
/// checkpoint there after each epoch. Returns all epochs' metrics (resumed ones included).
/// Checkpoints hold whole tensors, so a run may resume on a different layout (another device
/// count or plan).
pub fn train<B: AutodiffBackend, L: StepLayout<B>>(
    config: &TrainConfig,
    splits: &Splits,
    layout: &L,
    dir: &RunDir,
    opts: &RunOptions,
) -> Result<Vec<EpochMetrics>, OwtError> {
    config.validate()?;
    let arch = config.model.architecture()?;
    let [c, h, w] = splits.train.image_dims();
    arch.check_input([0, c, h, w])?;
    check_classes(splits.train.classes(), &arch, &format!("pass --classes {}", splits.train.classes()))?;
    // What goes through the model at once, and is placed on the mesh, is a micro-batch.
    let micro = opts.micro_batch(config)?;
    config.precision.check::<B>(layout.device())?;
    if let Some(plan) = layout.plan() {
        let (ranks, batch) = layout.plan_mesh(micro);
        check_run(plan, &arch, ranks, batch)?;
    }
    // Process 0 of a mesh spanning processes alone prints and writes; every process computes
    // (gathering the checkpoint's tensors is a collective) and reads the checkpoint it resumes.
    let verbose = opts.verbose && layout.primary();
    let data = crate::train::DatasetIdentity::of(config.dataset, opts.data_dir, splits);
    let mut run = start(config, &arch, layout, dir, &data, verbose)?;
    let mut said_not_strict = 0;
    for epoch in run.start_epoch..config.epochs {
        let started = Instant::now();
        let test_losses: Vec<f64> = run.metrics.iter().map(|m| m.test_loss).collect();
        let lr = config.epoch_lr(epoch, &test_losses);
        let how = Preparation::new(opts.workers, PREFETCH);
        // An f16 run continues the scale its last epoch ended with (and its run of finite steps).
        let scale = config.precision.scales_loss().then(|| {
            run.metrics.last().and_then(|m| m.loss_scale).map_or_else(LossScale::default, LossScale::next_epoch)
        });
        let (model, trained) = train_epoch(
            config,
            &arch,
            splits,
            layout,
            run.model,
            &mut run.optim,
            epoch,
            lr,
            how,
            opts,
            verbose,
            scale,
        )?;
        run.model = model;
        // The model as a step computes with it (on a 2-D mesh that shards parameters over
        // its nodes, gathered once here): evaluated, then checkpointed whole. What each moves
        // between ranks is counted apart from the steps'.
        layout.reset_traffic();
        let gathered = layout.compute_module(&run.model);
        let upload = |batch: &Batch| upload_eval(layout, batch, &config.model.pixel_norm);
        let test =
            evaluate_rows(&gathered.valid(), config.head, &splits.test, micro, how, layout.row_split(), &upload)?;
        let evaluation = layout.traffic();
        layout.reset_traffic();
        let tensors = checkpoint_tensors(&run, gathered)?;
        let saving = layout.traffic();
        let mut communication = trained.communication;
        if let (Some(c), Some(evaluation), Some(saving)) = (communication.as_mut(), evaluation, saving) {
            let reads = c.besides_steps.unwrap_or_default().reads;
            c.besides_steps = Some(BesidesSteps {
                reads,
                evaluation: TrafficTotal::all(&evaluation),
                checkpoint: TrafficTotal::all(&saving),
            });
        }
        let m = EpochMetrics {
            epoch: epoch + 1,
            train_loss: trained.values.mean_loss(),
            train_accuracy: trained.values.accuracy(),
            test_loss: test.loss,
            test_accuracy: test.accuracy,
            test_top5_accuracy: test.top5_accuracy,
            lr: Some(lr),
            images_per_second: trained.values.images as f64 / trained.seconds,
            input_wait_s: Some(trained.input_wait_s),
            seconds: started.elapsed().as_secs_f64(),
            layout: Some(layout.describe()),
            communication,
            loss_scale: trained.loss_scale,
        };
        let line = verbose.then(|| m.summary(config.epochs));
        run.metrics.push(m);
        checkpoint(config, dir, layout.primary(), &data, &run, tensors, epoch)?;
        // Said once the epoch is saved: a closed or full stdout loses a line, never an epoch.
        if let Some(line) = line {
            crate::out_line!("{line}");
        }
        // Under --tf32 off, the ops that were not strict (a library declined them), said after
        // the first epoch that ran any, and again whenever more appear.
        if verbose {
            let now = crate::runtime::cuda_kernels::not_strict();
            if now.len() > said_not_strict {
                said_not_strict = now.len();
                if let Some(line) = crate::runtime::cuda_kernels::not_strict_line() {
                    crate::err_line!("{line}");
                }
            }
        }
    }
    Ok(run.metrics)
}

/// A run as it stands between epochs: the model as the layout stores it, its optimizer, and
/// what the run did so far.
struct Run<B: AutodiffBackend> {
    model: ConvNet<B>,
    optim: RunSgd<ConvNet<B>, B>,
    metrics: Vec<EpochMetrics>,
    start_epoch: usize,
    imported_from: Option<String>,
}

/// The run's start: fresh weights from the seed, or the checkpoint in `dir` resumed (its
/// settings and data checked, its weights and momentum placed as the layout stores them).
fn start<B: AutodiffBackend, L: StepLayout<B>>(
    config: &TrainConfig,
    arch: &Architecture,
    layout: &L,
    dir: &RunDir,
    data: &crate::train::DatasetIdentity,
    verbose: bool,
) -> Result<Run<B>, OwtError> {
    let device = layout.device();
    let mut run = Run {
        model: init_model(arch, device, config.seed)?,
        optim: sgd::<B>(config),
        metrics: Vec::new(),
        start_epoch: 0,
        imported_from: None,
    };
    let mut optim_record = None;
    if dir.resumes() {
        let ckpt = Checkpoint::load(dir.path())?;
        ckpt.state.check_resume(config)?;
        ckpt.state.check_data(data)?;
        run.model = run.model.load_record(record_from_bytes::<B, _>(ckpt.model_bytes(), device)?);
        check_finite(&run.model, dir.path())?;
        // Imported weights come without optimizer state: momentum starts at zero.
        if !ckpt.state.is_fresh_import() {
            optim_record = Some(record_from_bytes::<B, _>(ckpt.optimizer_bytes(), device)?);
        }
        run.start_epoch = ckpt.state.epochs_done;
        run.metrics = ckpt.state.metrics;
        run.imported_from = ckpt.state.imported_from;
        if verbose {
            match (&run.imported_from, run.start_epoch) {
                (Some(origin), 0) => crate::err_line!("starting from the weights imported from {origin}"),
                _ => crate::err_line!("resuming after epoch {} of {}", run.start_epoch, config.epochs),
            }
        }
    }
    run.model = layout.place_module(run.model)?;
    // The optimizer state as this layout stores it (each node's slices of what it shards).
    if let Some(record) = optim_record {
        run.optim = run.optim.load_record(momentum::stored(layout, record, &run.model));
    }
    Ok(run)
}

/// What one epoch's steps came to.
struct Trained {
    values: TallyValues,
    seconds: f64,
    input_wait_s: f64,
    communication: Option<Communication>,
    /// The loss scale after the epoch (f16 runs).
    loss_scale: Option<LossScale>,
}

/// One epoch of steps of `model` over the shuffled training split at rate `lr`: the running
/// figures read every `opts.read_every` steps (progress, the divergence check), the epoch's
/// read at its end. Returns the trained model.
#[allow(clippy::too_many_arguments)]
fn train_epoch<B: AutodiffBackend, L: StepLayout<B>>(
    config: &TrainConfig,
    arch: &Architecture,
    splits: &Splits,
    layout: &L,
    mut model: ConvNet<B>,
    optim: &mut RunSgd<ConvNet<B>, B>,
    epoch: usize,
    lr: f64,
    how: Preparation,
    opts: &RunOptions,
    verbose: bool,
    mut loss_scale: Option<LossScale>,
) -> Result<(ConvNet<B>, Trained), OwtError> {
    let started = Instant::now();
    let draws = EpochDraws::new(config.seed, epoch);
    {
        let _alone = INIT.lock().unwrap_or_else(|e| e.into_inner());
        B::seed(layout.device(), draws.seed);
    }
    let train_set = &splits.train;
    let (order, rng) = draws.order(train_set.len());
    let total = order.len();
    let mut progress = Progress::new(format!("epoch {}/{}", epoch + 1, config.epochs), total, verbose);
    // Each process prepares only its ranks' rows of every micro-batch (a step's batch is
    // `accum_steps` consecutive ones).
    let micro = opts.micro_batch(config)?;
    let mut batches = Prefetch::start_rows(train_set.clone(), order, micro, true, rng, how, layout.row_split());
    let mut tally = Tally::<B::InnerBackend>::default();
    let mut steps = 0usize;
    let mut full_step: Option<Option<LedgerSnapshot>> = None;
    layout.reset_traffic();
    // Divergence is checked at every read over the images since the previous read. The
    // previous epoch's checkpoint stays as it is.
    let uniform = config.head.uniform_loss(arch.classes);
    let mut last = TallyValues { loss_sum: 0.0, correct: 0, images: 0 };
    let mut check = |values: TallyValues| -> Result<(), OwtError> {
        let since = divergence(&last, &values, uniform);
        last = values;
        match since {
            None => Ok(()),
            Some((mean, images)) => Err(OwtError::input(format!(
                "training diverged in epoch {} (learning rate {}): mean loss {} over {images} images, above {:.1} ({DIVERGENCE_FACTOR}x a uniform guess's {uniform:.3}); lower --lr (got {}) or --weight-decay (got {})",
                epoch + 1,
                crate::train::schedule::Rate(lr),
                match mean {
                    m if m.is_nan() => "not a number".to_string(),
                    m if m.is_infinite() => "beyond what an f64 holds".to_string(),
                    m => format!("{m:.4e}"),
                },
                DIVERGENCE_FACTOR * uniform,
                crate::train::schedule::Rate(config.lr),
                config.weight_decay
            ))),
        }
    };
    let norm = &config.model.pixel_norm;
    // Each micro-batch is uploaded while the device runs the work queued before it.
    let mut uploads = UploadAhead::new(layout, norm);
    let ended = || OwtError::data("the epoch's batches ended early");
    while steps * config.batch < total {
        crate::host::exit::step_fault(layout.process(), epoch + 1, steps);
        let key = draws.dropout_key(steps);
        let step_images = config.batch.min(total - steps * config.batch);
        let (next, outcome) = if config.fc_update == FcUpdate::PerChunk {
            let (images, labels) = uploads.take(&mut batches)?.ok_or_else(ended)?;
            train_step(layout, model, optim, lr, config.head, config.fc_update, key, images, labels)
        } else {
            let scale = loss_scale.map_or(1.0, |s| s.scale);
            let mut step = AccumulatedStep::new(step_images, config.head, key).in_precision(config.precision, scale);
            let micros = step_images.div_ceil(micro);
            for i in 0..micros {
                let (images, labels) = uploads.take(&mut batches)?.ok_or_else(ended)?;
                step.micro_batch(layout, &model, images, labels);
                if i + 1 < micros {
                    uploads.refill(&mut batches)?;
                }
            }
            step.finish_with(layout, model, optim, lr, loss_scale.as_mut())
        };
        // The step's work is queued: the next batch uploads while it runs.
        uploads.refill(&mut batches)?;
        model = next;
        // The figures' tally is bookkeeping, not the step: what it moves (a sum of a pending
        // loss and one a read made whole) is counted with the reads.
        layout.reading(|| tally.add(outcome.loss, outcome.correct, outcome.images));
        steps += 1;
        // The traffic of one full step: the epoch's first (only its last may be short).
        if full_step.is_none() && step_images == config.batch {
            full_step = Some(layout.traffic());
        }
        if steps % opts.read_every.max(1) == 0 && tally.images() < total {
            let values = layout.reading(|| tally.read());
            check(values)?;
            progress.update(values.images, values.mean_loss(), values.accuracy());
        }
    }
    // Reading waits for the epoch's queued work, so the clock stops after it.
    let values = layout.reading(|| tally.read());
    check(values)?;
    progress.update(values.images, values.mean_loss(), values.accuracy());
    let seconds = started.elapsed().as_secs_f64();
    let input_wait_s = batches.waited().as_secs_f64();
    let communication = layout.traffic().map(|epoch_ledger| {
        let full_step = full_step.flatten();
        Communication::of_epoch(full_step.as_ref().unwrap_or(&epoch_ledger), &epoch_ledger, steps)
    });
    Ok((model, Trained { values, seconds, input_wait_s, communication, loss_scale }))
}

/// A checkpoint's tensors as bytes: the whole model (`gathered`, as a step computes with it)
/// and the whole momentum, read by every process (reading a sharded tensor is a collective).
fn checkpoint_tensors<B: AutodiffBackend>(run: &Run<B>, gathered: ConvNet<B>) -> Result<(Vec<u8>, Vec<u8>), OwtError> {
    let model_bytes = record_to_bytes::<B, _>(gathered.into_record())?;
    // In module order: every process must read the same tensor at the same time (the
    // record's own order is a hash map's).
    let whole = momentum::whole(run.optim.to_record(), &run.model);
    let optim_bytes = record_to_bytes::<B, _>(InParameterOrder::new(whole, &run.model))?;
    Ok((model_bytes, optim_bytes))
}

/// The checkpoint after `epoch` (0-based): the tensors [`checkpoint_tensors`] read, with the
/// run's state, written atomically with `metrics.json` by the `primary` process (or node) if
/// it holds `dir`'s lock.
fn checkpoint<B: AutodiffBackend>(
    config: &TrainConfig,
    dir: &RunDir,
    primary: bool,
    data: &crate::train::DatasetIdentity,
    run: &Run<B>,
    (model_bytes, optim_bytes): (Vec<u8>, Vec<u8>),
    epoch: usize,
) -> Result<(), OwtError> {
    let state = CheckpointState {
        config: config.clone(),
        epochs_done: epoch + 1,
        metrics: run.metrics.clone(),
        imported_from: run.imported_from.clone(),
        dataset: Some(data.clone()),
    };
    if primary && dir.writes() {
        Checkpoint::save(dir.path(), &state, &model_bytes, &optim_bytes)?;
        let json = serde_json::to_vec_pretty(&run.metrics).map_err(|e| OwtError::io(e.to_string()))?;
        write_atomic(&dir.path().join(crate::train::METRICS_FILE), &json)?;
    }
    Ok(())
}

/// Refuses a dataset with more classes than the network has outputs (a label past the last
/// output has no logit to score), in the same words for train and eval; `advice` says what
/// to do instead.
pub fn check_classes(dataset_classes: usize, arch: &Architecture, advice: &str) -> Result<(), OwtError> {
    if dataset_classes <= arch.classes {
        return Ok(());
    }
    Err(OwtError::input(format!(
        "the dataset has {dataset_classes} classes but {} has {} outputs: {advice}",
        arch.name, arch.classes
    )))
}

/// The run's optimizer: SGD with the config's momentum (dampening 0) and weight decay.
pub fn sgd<B: AutodiffBackend>(config: &TrainConfig) -> RunSgd<ConvNet<B>, B> {
    let weight_decay = (config.weight_decay > 0.0).then_some(config.weight_decay as f32);
    let burn = SgdConfig::new()
        .with_momentum(Some(MomentumConfig { momentum: config.momentum, dampening: 0.0, nesterov: false }))
        .with_weight_decay(weight_decay.map(WeightDecayConfig::new))
        .init::<B, ConvNet<B>>();
    RunSgd::new(burn, config.momentum, weight_decay)
}

/// Rebuilds the network stored in the checkpoint in `dir` on `device`.
pub fn load_model<B: Backend>(dir: &Path, device: &B::Device) -> Result<(ConvNet<B>, CheckpointState), OwtError> {
    let ckpt = Checkpoint::load(dir)?;
    let arch = ckpt.state.config.model.architecture()?;
    let model: ConvNet<B> = arch.try_init(device)?;
    let model = model.load_record(record_from_bytes::<B, _>(ckpt.model_bytes(), device)?);
    check_finite(&model, dir)?;
    Ok((model, ckpt.state))
}

/// Refuses a checkpoint whose weights hold NaN or infinities (written before the divergence
/// check, or edited): resuming would only spread them, and an evaluation would print NaN.
fn check_finite<B: Backend>(model: &ConvNet<B>, dir: &Path) -> Result<(), OwtError> {
    let bad = owt_models::non_finite_parameters(model);
    if bad.is_empty() {
        return Ok(());
    }
    Err(OwtError::checkpoint(format!(
        "{}: the weights hold NaN or infinite values in {}; it cannot be resumed or evaluated",
        crate::train::checkpoint::checkpoint_path(dir).display(),
        bad.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(loss_sum: f64, images: usize) -> TallyValues {
        TallyValues { loss_sum, correct: 0, images }
    }

    #[test]
    fn every_epoch_and_every_step_draws_anew_and_the_same_epoch_draws_the_same() {
        let (e0, e1) = (EpochDraws::new(7, 0), EpochDraws::new(7, 1));
        assert_eq!(e0, EpochDraws::new(7, 0), "a resumed epoch draws what it drew before");
        assert_ne!(e0, EpochDraws::new(8, 0), "the run seed matters");
        let ((o0, mut r0), (o1, mut r1)) = (e0.order(100), e1.order(100));
        assert_ne!(o0, o1, "each epoch its own order");
        let mut sorted = o0.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>(), "an order is a permutation");
        use rand::RngCore;
        assert_ne!(r0.next_u64(), r1.next_u64(), "each epoch its own crops and flips");
        assert_eq!(e0.order(100).0, o0);
        let keys = [e0.dropout_key(0), e0.dropout_key(1), e1.dropout_key(0), e1.dropout_key(1)];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a.words("fc6"), b.words("fc6"), "every step of every epoch its own masks");
            }
        }
    }

    #[test]
    fn divergence_is_a_non_finite_or_far_too_large_loss_since_the_last_read() {
        let uniform = 10f64.ln();
        let start = at(0.0, 0);
        assert_eq!(divergence(&start, &at(2.3 * 64.0, 64), uniform), None);
        // Finite but 1e22: the bug of a bound that only looks for NaN.
        assert_eq!(divergence(&start, &at(1e22 * 64.0, 64), uniform), Some((1e22, 64)));
        assert!(divergence(&start, &at(f64::NAN, 64), uniform).is_some());
        assert!(divergence(&start, &at(f64::INFINITY, 64), uniform).is_some());
        // Just above the bound over the last 32 images, however good the epoch was before.
        let before = at(64.0, 64);
        let bound = DIVERGENCE_FACTOR * uniform;
        assert_eq!(divergence(&before, &at(64.0 + 32.0 * bound, 96), uniform), None);
        assert!(divergence(&before, &at(64.0 + 32.0 * bound * 1.01, 96), uniform).is_some());
    }
}
