//! AlexNetSmall on Fashion-MNIST trained by Burn's own `Learner` (burn-train 0.21, with its
//! loss and accuracy metrics and per-iteration progress), on a mesh of two virtual ranks of the
//! CPU under the one weird trick: conv layers data-parallel, FC layers split by columns.
//!
//! Everything below `main` is written as for any Burn backend: a dataset and a batcher, a
//! model with a `TrainStep` and an `InferenceStep`, the Learner. The batcher builds ordinary
//! (whole) tensors; the first convolution shards the batch over the ranks on arrival, the
//! optimizer's update resolves the replicated weights' pending gradient sums, and dropout masks
//! are keyed by the model's own pass count, so nothing is broadcast. What makes the program
//! parallel is the layout in `main`; for one device, change that one line (marked ONE DEVICE).
//!
//! Run: `cargo run --locked --example learner -- [EPOCHS] [TRAIN_IMAGES] [SEED]` (needs
//! Debian's `dataset-fashion-mnist`). The seed (1 unless given) draws the initial weights, so
//! the same command prints the same figures every run; the last lines are the final accuracy
//! and loss on the validation images and the traffic between the ranks.

use std::collections::HashMap;
use std::sync::Arc;

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::SgdConfig;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ElementConversion;
use burn_train::logger::InMemoryMetricLogger;
use burn_train::metric::{AccuracyMetric, LossMetric, MetricDefinition, MetricId};
use burn_train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn_train::{ClassificationOutput, InferenceStep, Learner, SupervisedTraining, TrainOutput, TrainStep};
use rand::rngs::StdRng;
use rand::SeedableRng;

use owt::data::{open_splits, DataRequest, DatasetKind, ImageSource, Splits};
use owt_hybrid::prelude::*;
use owt_hybrid::{Exchange, MeshDevice, MeshLayout, PlanKind, StepLayout};
use owt_models::{AlexNet, AlexNetSmallConfig};

/// A batch of images and their classes.
#[derive(Clone, Debug)]
pub struct ImageBatch<B: Backend> {
    /// `[n, 1, 28, 28]`, normalised to [-1, 1].
    pub images: Tensor<B, 4>,
    /// `[n]`.
    pub targets: Tensor<B, 1, Int>,
}

/// Turns dataset indices into a batch of one split's images.
#[derive(Clone)]
pub struct ImageBatcher(pub Arc<dyn ImageSource>);

impl<B: Backend> Batcher<B, usize, ImageBatch<B>> for ImageBatcher {
    fn batch(&self, items: Vec<usize>, device: &B::Device) -> ImageBatch<B> {
        let batch = self.0.batch(&items, false, &mut StdRng::seed_from_u64(0));
        ImageBatch {
            images: Tensor::from_data(batch.normalised_data(&owt_models::PixelNorm::Symmetric), device),
            targets: Tensor::from_data(batch.label_data(), device),
        }
    }
}

/// The network with a classification head for the Learner.
#[derive(Module, Debug)]
pub struct Classifier<B: Backend> {
    /// AlexNetSmall.
    pub net: AlexNet<B>,
}

impl<B: Backend> Classifier<B> {
    fn classify(&self, batch: ImageBatch<B>) -> ClassificationOutput<B> {
        let logits = self.net.forward(batch.images);
        let loss = CrossEntropyLossConfig::new().init(&logits.device()).forward(logits.clone(), batch.targets.clone());
        ClassificationOutput::new(loss, logits, batch.targets)
    }
}

impl<B: AutodiffBackend> TrainStep for Classifier<B> {
    type Input = ImageBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: ImageBatch<B>) -> TrainOutput<ClassificationOutput<B>> {
        let item = self.classify(batch);
        TrainOutput::new(self, item.loss.backward(), item)
    }
}

impl<B: Backend> InferenceStep for Classifier<B> {
    type Input = ImageBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: ImageBatch<B>) -> ClassificationOutput<B> {
        self.classify(batch)
    }
}

/// How much to train.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Epochs.
    pub epochs: usize,
    /// Training images per epoch (the first of the split).
    pub train_images: usize,
    /// Test images evaluated after each epoch.
    pub test_images: usize,
    /// Images per batch (all ranks together).
    pub batch: usize,
    /// What the initial weights are drawn from (a model given to start from is kept).
    pub seed: u64,
}

/// Trains a fresh AlexNetSmall (or `init`, a model to start from) with the Learner on
/// `layout`'s device, the model's parameters placed by the layout; returns the trained model.
pub fn train<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    splits: &Splits,
    budget: Budget,
    init: Option<Classifier<B>>,
    renderer: impl MetricsRenderer + 'static,
) -> Classifier<B::InnerBackend> {
    let device = layout.device().clone();
    let train_loader = DataLoaderBuilder::new(ImageBatcher(splits.train.clone()))
        .batch_size(budget.batch)
        .shuffle(0)
        .set_device(device.clone())
        .build(InMemDataset::new((0..budget.train_images).collect()));
    let test_loader = DataLoaderBuilder::new(ImageBatcher(splits.test.clone()))
        .batch_size(budget.batch)
        .set_device(device.clone())
        .build(InMemDataset::new((0..budget.test_images).collect()));
    let model = init.unwrap_or_else(|| {
        B::seed(&device, budget.seed);
        Classifier { net: AlexNetSmallConfig::new().init(&device) }
    });
    let model = layout.place_module(model).expect("the plan fits AlexNetSmall");
    let optim = SgdConfig::new()
        .with_momentum(Some(MomentumConfig { momentum: 0.9, dampening: 0.0, nesterov: false }))
        .init::<B, Classifier<B>>();
    let directory = std::env::temp_dir().join(format!("owt-learner-{}", std::process::id()));
    SupervisedTraining::new(directory, train_loader, test_loader)
        .metrics((AccuracyMetric::<Flex>::new(), LossMetric::<Flex>::new()))
        .with_application_logger(None)
        .with_metric_logger(InMemoryMetricLogger::new())
        .renderer(renderer)
        .num_epochs(budget.epochs)
        .launch(Learner::new(model, optim, 0.01))
        .model
}

/// Plain-text progress: every `every` iterations, the latest value of each metric.
#[derive(Default)]
pub struct TextProgress {
    every: usize,
    names: HashMap<MetricId, String>,
    latest: [Vec<(MetricId, String)>; 2],
}

impl TextProgress {
    /// Prints every `every` iterations (0: never).
    pub fn every(every: usize) -> Self {
        Self { every, ..Self::default() }
    }

    fn note(&mut self, split: usize, state: MetricState) {
        let (MetricState::Generic(entry) | MetricState::Numeric(entry, _)) = state;
        let latest = &mut self.latest[split];
        match latest.iter_mut().find(|(id, _)| *id == entry.metric_id) {
            Some(slot) => slot.1 = entry.serialized_entry.formatted,
            None => latest.push((entry.metric_id, entry.serialized_entry.formatted)),
        }
    }

    fn line(&self, split: usize, progress: &TrainingProgress) {
        let iteration = progress.iteration.unwrap_or(0);
        if self.every == 0 || iteration % self.every != 0 {
            return;
        }
        let metrics: Vec<String> = self.latest[split]
            .iter()
            .map(|(id, value)| format!("{} {value}", self.names.get(id).map(String::as_str).unwrap_or("?")))
            .collect();
        let items = progress.progress.as_ref().map(|p| format!("{}/{}", p.items_processed, p.items_total));
        println!(
            "{} epoch {}/{} iteration {iteration} items {}: {}",
            ["train", "valid"][split],
            progress.global_progress.items_processed,
            progress.global_progress.items_total,
            items.unwrap_or_default(),
            metrics.join(", ")
        );
    }
}

impl MetricsRendererTraining for TextProgress {
    fn update_train(&mut self, state: MetricState) {
        self.note(0, state)
    }

    fn update_valid(&mut self, state: MetricState) {
        self.note(1, state)
    }

    fn render_train(&mut self, progress: TrainingProgress, _: Vec<ProgressType>) {
        self.line(0, &progress)
    }

    fn render_valid(&mut self, progress: TrainingProgress, _: Vec<ProgressType>) {
        self.line(1, &progress)
    }
}

impl MetricsRendererEvaluation for TextProgress {
    fn update_test(&mut self, _: EvaluationName, _: MetricState) {}

    fn render_test(&mut self, _: EvaluationProgress, _: Vec<ProgressType>) {}
}

impl MetricsRenderer for TextProgress {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        self.names.insert(definition.metric_id, definition.name);
    }
}

/// Fashion-MNIST from Debian's `dataset-fashion-mnist`.
pub fn fashion_mnist() -> Splits {
    let request = DataRequest::new(DatasetKind::FashionMnist, [1, 28, 28]);
    open_splits(&request).unwrap_or_else(|e| panic!("{e} (apt-get install dataset-fashion-mnist)"))
}

/// The mean loss and the accuracy of `model` over the first `images` images of `split`, in
/// batches of `batch`.
pub fn evaluate<B: Backend>(
    model: &Classifier<B>,
    split: &Arc<dyn ImageSource>,
    images: usize,
    batch: usize,
    device: &B::Device,
) -> (f64, f64) {
    let (mut loss_sum, mut correct) = (0.0, 0usize);
    for start in (0..images).step_by(batch) {
        let indices: Vec<usize> = (start..(start + batch).min(images)).collect();
        let n = indices.len();
        let out =
            model.classify(Batcher::<B, usize, ImageBatch<B>>::batch(&ImageBatcher(split.clone()), indices, device));
        loss_sum += out.loss.into_scalar().elem::<f64>() * n as f64;
        let predicted = out.output.argmax(1).reshape([n]);
        correct += predicted.equal(out.targets).int().sum().into_scalar().elem::<i64>() as usize;
    }
    (loss_sum / images as f64, correct as f64 / images as f64)
}

#[allow(dead_code)]
fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().expect("EPOCHS and TRAIN_IMAGES are numbers"));
    let epochs = args.next().unwrap_or(1);
    let train_images = args.next().unwrap_or(6400);
    let seed = args.next().unwrap_or(1) as u64;
    let splits = fashion_mnist();
    let budget =
        Budget { epochs, train_images: train_images.min(splits.train.len()), test_images: 2000, batch: 64, seed };
    // Where the program runs: two virtual ranks of the CPU under the weird trick. ONE DEVICE:
    // let layout = owt_hybrid::SingleDevice::<burn::backend::Autodiff<Flex>>::new(FlexDevice);
    let layout = MeshLayout::<Flex>::new(
        MeshDevice::virtual_ranks(FlexDevice, 2),
        PlanKind::WeirdTrick.plan(),
        Exchange::AllGather,
    );
    let model = train(&layout, &splits, budget, None, TextProgress::every(10));
    let traffic = layout.traffic().unwrap_or_default();
    let (loss, accuracy) = evaluate(&model, &splits.test, budget.test_images, budget.batch, layout.mesh());
    println!(
        "final: validation accuracy {:.2}%, loss {loss:.4} on {} images after {epochs} epoch(s) of {} images, seed {seed}",
        100.0 * accuracy,
        budget.test_images,
        budget.train_images
    );
    println!(
        "{} on {}: {} parameters; between the ranks {} bytes in {} messages, {} fallbacks",
        model.net.architecture.name,
        layout.describe(),
        model.num_params(),
        traffic.total().bytes,
        traffic.total().messages,
        traffic.total_fallbacks()
    );
}
