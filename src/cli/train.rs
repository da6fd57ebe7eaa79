//! `owt train`: train a model on a dataset with SGD.

use std::path::PathBuf;

use clap::Args;

use crate::backends::{run_on, BackendJob, BackendKind};
use crate::cli::ModelArgs;
use crate::data::{open_splits, DataRequest, DatasetKind};
use crate::error::OwtError;
use crate::train::config::defaults;
use crate::train::{train, EpochMetrics, RunOptions, TrainConfig};
use owt_models::Head;

/// Arguments of `owt train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The dataset.
    #[arg(long, value_enum)]
    pub dataset: DatasetKind,
    /// Dataset directory (Fashion-MNIST defaults to /usr/share/datasets/fashion-mnist).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Use only the first N training images.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Epochs to train (in total, when resuming).
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Batch size.
    #[arg(long, default_value_t = defaults::BATCH)]
    pub batch: usize,
    /// Learning rate.
    #[arg(long, default_value_t = defaults::LR)]
    pub lr: f64,
    /// SGD momentum (dampening 0).
    #[arg(long, default_value_t = defaults::MOMENTUM)]
    pub momentum: f64,
    /// L2 weight decay.
    #[arg(long, default_value_t = defaults::WEIGHT_DECAY)]
    pub weight_decay: f64,
    /// Output head: softmax cross-entropy or independent logistic units.
    #[arg(long, default_value = "softmax", value_parser = parse_head)]
    pub head: Head,
    /// Compute backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Flex)]
    pub backend: BackendKind,
    /// Seed of initialisation, shuffling and dropout.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run directory for metrics.json and checkpoint.owt.
    #[arg(long, default_value = "runs/latest")]
    pub out: PathBuf,
    /// Continue the run in --out from its checkpoint.
    #[arg(long)]
    pub resume: bool,
}

fn parse_head(s: &str) -> Result<Head, String> {
    s.parse()
}

impl TrainArgs {
    /// The run these flags describe.
    pub fn config(&self) -> TrainConfig {
        TrainConfig {
            model: self.model.spec(),
            head: self.head,
            dataset: self.dataset,
            limit: self.limit,
            epochs: self.epochs,
            batch: self.batch,
            lr: self.lr,
            momentum: self.momentum,
            weight_decay: self.weight_decay,
            seed: self.seed,
        }
    }
}

struct TrainJob<'a> {
    args: &'a TrainArgs,
    config: TrainConfig,
}

impl BackendJob for TrainJob<'_> {
    type Output = Vec<EpochMetrics>;
    fn run<B: burn::tensor::backend::AutodiffBackend>(self, device: B::Device) -> Result<Self::Output, OwtError> {
        let arch = self.config.model.architecture()?;
        let splits = open_splits(&DataRequest {
            kind: self.args.dataset,
            dir: self.args.data.clone(),
            limit: self.args.limit,
            model_input: arch.input,
            seed: self.args.seed,
        })?;
        let [c, h, w] = splits.train.image_dims();
        arch.check_input([0, c, h, w])?;
        eprintln!(
            "training {} on {:?} ({} train / {} test images) with {} on {}, batch {}, lr {}",
            arch.name,
            self.args.dataset,
            splits.train.len(),
            splits.test.len(),
            self.config.head.name(),
            self.args.backend.name(),
            self.config.batch,
            self.config.lr
        );
        let opts = RunOptions { out: &self.args.out, resume: self.args.resume, verbose: true };
        train::<B>(&self.config, &splits, &device, &opts)
    }
}

/// Trains and reports where results went.
pub fn run(args: &TrainArgs) -> Result<(), OwtError> {
    let config = args.config();
    config.validate()?;
    config.model.architecture()?;
    let metrics = run_on(args.backend, TrainJob { args, config })?;
    if let Some(last) = metrics.last() {
        println!(
            "final test accuracy {:.2}% after {} epochs; metrics and checkpoint in {}",
            100.0 * last.test_accuracy,
            last.epoch,
            args.out.display()
        );
    }
    Ok(())
}
