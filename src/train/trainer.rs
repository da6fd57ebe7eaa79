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

use owt_models::{AlexNet, Head};

use crate::data::{Batch, ImageSource, Splits};
use crate::error::OwtError;
use crate::train::atomic::write_atomic;
use crate::train::checkpoint::{record_from_bytes, record_to_bytes, Checkpoint, CheckpointState};
use crate::train::config::TrainConfig;
use crate::train::layout::Layout;
use crate::train::metrics::{Communication, EpochMetrics};
use crate::train::progress::Progress;
use crate::train::step::train_step;

/// Batch size used for evaluation (no gradients, so larger is fine).
pub const EVAL_BATCH: usize = 500;

/// Where a run writes and whether it reports progress.
#[derive(Debug, Clone)]
pub struct RunOptions<'a> {
    /// Run directory: `metrics.json` and `checkpoint.owt`.
    pub out: &'a Path,
    /// Continue from the checkpoint in `out`.
    pub resume: bool,
    /// Progress lines on stderr and a summary line per epoch on stdout.
    pub verbose: bool,
}

/// Loss and accuracy over a split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    /// Mean loss per image.
    pub loss: f64,
    /// Fraction correct.
    pub accuracy: f64,
    /// Images evaluated.
    pub images: usize,
}

/// Turns a host batch into tensors on `device`.
pub fn batch_tensors<B: Backend>(batch: Batch, device: &B::Device) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    let n = batch.labels.len();
    let images = Tensor::from_data(TensorData::new(batch.images, batch.dims), device);
    let labels = Tensor::from_data(TensorData::new(batch.labels, [n]), device);
    (images, labels)
}

/// Loss and accuracy of `model` on `source` (deterministic view, no augmentation).
pub fn evaluate<B: Backend>(
    model: &AlexNet<B>,
    head: Head,
    source: &dyn ImageSource,
    device: &B::Device,
) -> Evaluation {
    evaluate_placed(model, head, source, device, &|images| images)
}

/// [`evaluate`] with each batch of images laid out by `place` first (a parallel run's input
/// placement, so evaluation is split over the ranks like training).
pub fn evaluate_placed<B: Backend>(
    model: &AlexNet<B>,
    head: Head,
    source: &dyn ImageSource,
    device: &B::Device,
    place: &dyn Fn(Tensor<B, 4>) -> Tensor<B, 4>,
) -> Evaluation {
    let mut rng = StdRng::seed_from_u64(0);
    let (mut loss_sum, mut correct) = (0.0, 0usize);
    let indices: Vec<usize> = (0..source.len()).collect();
    for chunk in indices.chunks(EVAL_BATCH) {
        let (images, labels) = batch_tensors::<B>(source.batch(chunk, false, &mut rng), device);
        let logits = model.forward(place(images));
        loss_sum += head.loss(logits.clone(), labels.clone()).into_scalar().elem::<f64>() * chunk.len() as f64;
        correct += count_correct(head, logits, labels);
    }
    let n = source.len().max(1);
    Evaluation { loss: loss_sum / n as f64, accuracy: correct as f64 / n as f64, images: source.len() }
}

pub(crate) fn count_correct<B: Backend>(head: Head, logits: Tensor<B, 2>, labels: Tensor<B, 1, Int>) -> usize {
    head.predict(logits).equal(labels).int().sum().into_scalar().elem::<i64>() as usize
}

/// Seed of the randomness of epoch `epoch` (shuffle, augmentation, dropout): a function of
/// the run seed and the epoch only, so a resumed run draws exactly what an uninterrupted one would.
fn epoch_seed(seed: u64, epoch: usize) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(epoch as u64 + 1)
}

/// Trains `config` on `splits` with backend `B` laid out by `layout` (one device, or a mesh
/// under a plan), writing metrics and a checkpoint to `opts.out` after each epoch. Returns all
/// epochs' metrics (resumed ones included). Checkpoints hold whole tensors, so a run may resume
/// on a different layout (another device count or plan).
pub fn train<B: AutodiffBackend, L: Layout<B>>(
    config: &TrainConfig,
    splits: &Splits,
    layout: &L,
    opts: &RunOptions,
) -> Result<Vec<EpochMetrics>, OwtError> {
    config.validate()?;
    let arch = config.model.architecture()?;
    let [c, h, w] = splits.train.image_dims();
    arch.check_input([0, c, h, w])?;
    if splits.train.classes() > arch.classes {
        return Err(OwtError::input(format!(
            "the dataset has {} classes but {} has {} outputs: pass --classes {}",
            splits.train.classes(),
            arch.name,
            arch.classes,
            splits.train.classes()
        )));
    }
    layout.check(&arch, config.batch)?;
    let device = layout.device();
    let mut optim = sgd::<B>(config);
    B::seed(device, config.seed);
    let mut model: AlexNet<B> = arch.try_init(device)?;
    let mut metrics = Vec::new();
    let mut start_epoch = 0;
    if opts.resume {
        let ckpt = Checkpoint::load(opts.out)?;
        config.check_resume_of(&ckpt.state.config)?;
        model = model.load_record(record_from_bytes::<B, _>(ckpt.model_bytes(), device)?);
        optim = optim.load_record(record_from_bytes::<B, _>(ckpt.optimizer_bytes(), device)?);
        start_epoch = ckpt.state.epochs_done;
        metrics = ckpt.state.metrics;
        if opts.verbose {
            eprintln!("resuming after epoch {start_epoch} of {}", config.epochs);
        }
    }
    let mut model = layout.place_model(model)?;
    let train_set = splits.train.as_ref();
    for epoch in start_epoch..config.epochs {
        let started = Instant::now();
        let seed = epoch_seed(config.seed, epoch);
        B::seed(device, seed);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut order: Vec<usize> = (0..train_set.len()).collect();
        order.shuffle(&mut rng);
        let mut progress = Progress::new(format!("epoch {}/{}", epoch + 1, config.epochs), order.len(), opts.verbose);
        let (mut loss_sum, mut correct, mut seen, mut steps) = (0.0, 0usize, 0usize, 0usize);
        layout.reset_traffic();
        for chunk in order.chunks(config.batch) {
            let (images, labels) = batch_tensors::<B>(train_set.batch(chunk, true, &mut rng), device);
            let (images, labels) = layout.place_batch(images, labels);
            let (next, outcome) =
                train_step(layout, model, &mut optim, config.lr, config.head, config.fc_update, images, labels);
            model = next;
            if !outcome.loss.is_finite() {
                return Err(OwtError::input(format!(
                    "training diverged in epoch {} (loss {}): lower --lr (got {})",
                    epoch + 1,
                    outcome.loss,
                    config.lr
                )));
            }
            correct += outcome.correct;
            loss_sum += outcome.loss * chunk.len() as f64;
            seen += chunk.len();
            steps += 1;
            progress.update(seen, loss_sum / seen as f64, correct as f64 / seen as f64);
        }
        let train_seconds = started.elapsed().as_secs_f64();
        let communication = layout.traffic().map(|ledger| Communication::per_step(&ledger, steps));
        let place = |images: Tensor<B::InnerBackend, 4>| layout.place_eval_input(images);
        let test = evaluate_placed(&model.valid(), config.head, splits.test.as_ref(), device, &place);
        let m = EpochMetrics {
            epoch: epoch + 1,
            train_loss: loss_sum / seen as f64,
            train_accuracy: correct as f64 / seen as f64,
            test_loss: test.loss,
            test_accuracy: test.accuracy,
            images_per_second: seen as f64 / train_seconds,
            seconds: started.elapsed().as_secs_f64(),
            layout: Some(layout.describe()),
            communication,
        };
        if opts.verbose {
            println!("{}", m.summary(config.epochs));
        }
        metrics.push(m);
        let state = CheckpointState { config: config.clone(), epochs_done: epoch + 1, metrics: metrics.clone() };
        let model_bytes = record_to_bytes::<B, _>(model.clone().into_record())?;
        let optim_bytes = record_to_bytes::<B, _>(optim.to_record())?;
        Checkpoint::save(opts.out, &state, &model_bytes, &optim_bytes)?;
        let json = serde_json::to_vec_pretty(&metrics).map_err(|e| OwtError::io(e.to_string()))?;
        write_atomic(&opts.out.join("metrics.json"), &json)?;
    }
    Ok(metrics)
}

/// The run's optimizer: SGD with the config's momentum (dampening 0) and weight decay.
pub fn sgd<B: AutodiffBackend>(config: &TrainConfig) -> impl Optimizer<AlexNet<B>, B> {
    SgdConfig::new()
        .with_momentum(Some(MomentumConfig { momentum: config.momentum, dampening: 0.0, nesterov: false }))
        .with_weight_decay((config.weight_decay > 0.0).then(|| WeightDecayConfig::new(config.weight_decay as f32)))
        .init::<B, AlexNet<B>>()
}

/// Rebuilds the network stored in the checkpoint in `dir` on `device`.
pub fn load_model<B: Backend>(dir: &Path, device: &B::Device) -> Result<(AlexNet<B>, CheckpointState), OwtError> {
    let ckpt = Checkpoint::load(dir)?;
    let arch = ckpt.state.config.model.architecture()?;
    let model: AlexNet<B> = arch.try_init(device)?;
    let model = model.load_record(record_from_bytes::<B, _>(ckpt.model_bytes(), device)?);
    Ok((model, ckpt.state))
}
