//! What a training run is: everything that decides its numbers, stored in its checkpoint.

use serde::{Deserialize, Serialize};

use owt_models::{Head, ModelSpec};

use crate::data::DatasetKind;
use crate::train::schedule::{LrScaling, LrSchedule};

/// The most epochs a run may have: its checkpoint and metrics.json hold an entry for each,
/// and what reads them is bounded by it (100 times the 2012 paper's 90 epochs).
pub const MAX_EPOCHS: usize = 10_000;

/// The largest `--lighting`: 100 times the 2012 paper's 0.1. Beyond it the shift of a
/// typical image (ImageNet's largest eigenvalue is about 0.22 on pixels in [0, 1]) is many
/// times the pixels' whole range, and training sees saturated images.
pub const MAX_LIGHTING: f64 = 10.0;

/// The rates (`--lr`, and `--weight-decay` where not 0) an f32 weight update holds: below
/// the smallest normal f32 a rate is lost to rounding, above the largest it is infinite.
pub const F32_RATES: std::ops::RangeInclusive<f64> = (f32::MIN_POSITIVE as f64)..=(f32::MAX as f64);

/// Hyper-parameters and choices of one training run. A checkpoint stores it so that
/// `--resume` continues the same run and `owt eval` rebuilds the same network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// The network.
    pub model: ModelSpec,
    /// Loss head.
    pub head: Head,
    /// Dataset trained on.
    pub dataset: DatasetKind,
    /// Training images used (all if `None`).
    pub limit: Option<usize>,
    /// Total epochs.
    pub epochs: usize,
    /// Global batch size.
    pub batch: usize,
    /// Learning rate.
    pub lr: f64,
    /// SGD momentum (dampening 0, as in the paper and PyTorch).
    pub momentum: f64,
    /// L2 weight decay (the paper's 5e-4).
    pub weight_decay: f64,
    /// Seed of initialisation, shuffling and dropout.
    pub seed: u64,
    /// When the FC layers are updated (per step: synchronous SGD; per chunk: the 2014
    /// paper's variant). Part of the run: it changes the numbers, unlike the device count.
    #[serde(default)]
    pub fc_update: crate::train::step::FcUpdate,
    /// When the rate is divided by 10 (constant in runs from before schedules).
    #[serde(default)]
    pub lr_schedule: LrSchedule,
    /// How `lr` grows with the batch size.
    #[serde(default)]
    pub lr_scaling: LrScaling,
    /// The batch size `lr` is given for, when scaling it.
    #[serde(default = "base_batch")]
    pub base_batch: usize,
    /// Standard deviation of the lighting noise along the training split's RGB principal
    /// components (0: none; the 2012 paper's 0.1 is the default for colour folders).
    #[serde(default)]
    pub lighting: f64,
    /// The precision a mesh's ranks send activities and gradients in (f32 in runs from before
    /// it). Part of the run: rounding what crosses changes the numbers. The layout sends in it
    /// (`MeshLayout::with_wire`); one device sends nothing.
    #[serde(default)]
    pub wire: owt_hybrid::WirePrecision,
    /// The precision the forward and backward passes compute in, on f32 master weights (f32
    /// in runs from before it). Part of the run: it changes the numbers.
    #[serde(default)]
    pub precision: crate::train::precision::Precision,
    /// Whose statistics batch normalisation takes on a mesh that splits the batch (the
    /// whole batch's in runs from before it). Part of the run: each rank's own change the
    /// numbers, where the whole batch's keep one device's.
    #[serde(default)]
    pub batch_stats: owt_hybrid::BatchStats,
}

/// The settings of [`TrainConfig::effective_settings`] that describe the network itself.
const MODEL_SETTINGS: [&str; 12] = [
    "--model",
    "model",
    "--input",
    "--channels",
    "--classes",
    "--towers",
    "--hidden",
    "--adaptive-pool",
    "dropout",
    "--input-norm",
    "--resize",
    "--resize-filter",
];

fn base_batch() -> usize {
    crate::train::schedule::BASE_BATCH
}

/// The paper's SGD defaults.
pub mod defaults {
    /// Learning rate.
    pub const LR: f64 = 0.01;
    /// Momentum.
    pub const MOMENTUM: f64 = 0.9;
    /// Weight decay.
    pub const WEIGHT_DECAY: f64 = 5e-4;
    /// Batch size.
    pub const BATCH: usize = 128;
}

impl TrainConfig {
    /// A run of `model` on `dataset` with the paper's SGD defaults ([`defaults`]): softmax
    /// head, one epoch, seed 0, all training images, FC layers updated per step.
    pub fn new(model: ModelSpec, dataset: DatasetKind) -> Self {
        TrainConfig {
            model,
            head: Head::Softmax,
            dataset,
            limit: None,
            epochs: 1,
            batch: defaults::BATCH,
            lr: defaults::LR,
            momentum: defaults::MOMENTUM,
            weight_decay: defaults::WEIGHT_DECAY,
            seed: 0,
            fc_update: crate::train::step::FcUpdate::PerStep,
            lr_schedule: LrSchedule::Constant,
            lr_scaling: LrScaling::None,
            base_batch: base_batch(),
            lighting: 0.0,
            wire: owt_hybrid::WirePrecision::Native,
            precision: crate::train::precision::Precision::F32,
            batch_stats: owt_hybrid::BatchStats::Sync,
        }
    }

    /// The rate before any division of the schedule: `lr` scaled to the batch size.
    pub fn scaled_lr(&self) -> f64 {
        self.lr_scaling.scale(self.lr, self.batch, self.base_batch)
    }

    /// The rate in words, for the start line and reports: "0.005 (0.01 x 16/32, linear
    /// scaling) (step:3 schedule)".
    pub fn describe_lr(&self) -> String {
        format!("{} ({} schedule)", self.lr_scaling.describe(self.lr, self.batch, self.base_batch), self.lr_schedule)
    }

    /// The rate of 0-based epoch `epoch`, given the test losses of the epochs before it.
    pub fn epoch_lr(&self, epoch: usize, test_losses: &[f64]) -> f64 {
        self.lr_schedule.rate(self.scaled_lr(), epoch, test_losses)
    }

    /// Rejects values no run can use, naming the expected and the given.
    pub fn validate(&self) -> Result<(), crate::error::OwtError> {
        use crate::error::OwtError;
        if self.batch == 0 {
            return Err(OwtError::input("--batch must be at least 1, got 0"));
        }
        if self.epochs == 0 {
            return Err(OwtError::input("--epochs must be at least 1, got 0"));
        }
        if self.precision != crate::train::precision::Precision::F32
            && self.fc_update == crate::train::step::FcUpdate::PerChunk
        {
            return Err(OwtError::input(format!(
                "--precision {} runs synchronous steps; --fc-update per-chunk computes in f32: use one of them",
                self.precision
            )));
        }
        if self.epochs > MAX_EPOCHS {
            return Err(OwtError::input(format!(
                "--epochs must be at most {MAX_EPOCHS} (a run's checkpoint and metrics.json hold every epoch), got {}",
                self.epochs
            )));
        }
        if !F32_RATES.contains(&self.lr) {
            return Err(OwtError::input(format!(
                "--lr must be in [{:?}, {:?}] (what an f32 weight update holds), got {:?}",
                F32_RATES.start(),
                F32_RATES.end(),
                self.lr
            )));
        }
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(OwtError::input(format!("--momentum must be in [0, 1), got {:?}", self.momentum)));
        }
        if !(self.weight_decay == 0.0 || F32_RATES.contains(&self.weight_decay)) {
            return Err(OwtError::input(format!(
                "--weight-decay must be 0 or in [{:?}, {:?}] (what an f32 weight update holds), got {:?}",
                F32_RATES.start(),
                F32_RATES.end(),
                self.weight_decay
            )));
        }
        if self.base_batch == 0 {
            return Err(OwtError::input("--base-batch must be at least 1, got 0"));
        }
        if !(0.0..=MAX_LIGHTING).contains(&self.lighting) {
            return Err(OwtError::input(format!(
                "--lighting must be in [0, {MAX_LIGHTING}] (0.1 in the 2012 paper), got {:?}",
                self.lighting
            )));
        }
        if self.lighting > 0.0 {
            let channels = self.model.architecture().map(|a| a.input[0]).unwrap_or(3);
            if channels != 3 {
                return Err(OwtError::input(format!(
                    "--lighting {}: lighting noise moves RGB values along their principal components, the model takes {channels} channel(s) (use --channels 3 with colour images, or leave --lighting out)",
                    self.lighting
                )));
            }
        }
        if !(self.scaled_lr().is_finite() && self.scaled_lr() > 0.0) {
            return Err(OwtError::input(format!(
                "--lr {} scaled to --batch {} is {}: expected a positive finite rate",
                crate::train::schedule::Rate(self.lr),
                self.batch,
                crate::train::schedule::Rate(self.scaled_lr())
            )));
        }
        if self.limit == Some(0) {
            return Err(OwtError::data("--limit 0 leaves the dataset empty: expected at least 1 image"));
        }
        Ok(())
    }

    /// The settings that decide this run's numbers, as (flag, value) in words, with defaults
    /// resolved (`--towers 2` written out equals the default): what a resume compares. A
    /// setting that cannot change this run's numbers is left out, so a resume neither needs
    /// it repeated nor is refused for it: `--batch-stats` of a network without batch
    /// normalisation, `--base-batch` without a learning-rate scaling.
    pub fn effective_settings(&self) -> Vec<(&'static str, String)> {
        let architecture = self.model.architecture();
        let batch_norm = architecture.as_ref().map_or(true, |a| a.batch_norm);
        let mut out = vec![("--model", self.model.kind.name().to_string())];
        match architecture {
            Ok(arch) => {
                out.push(("--input", arch.input[1].to_string()));
                out.push(("--channels", arch.input[0].to_string()));
                out.push(("--classes", arch.classes.to_string()));
                out.push(("--towers", arch.towers.to_string()));
                out.push(("--hidden", arch.hidden[0].to_string()));
                out.push(("--adaptive-pool", owt_models::AdaptivePool::name_of(arch.adaptive_pool)));
                out.push(("dropout", arch.dropout.to_string()));
                // Both resolved, so checkpoints from before they were stored compare equal.
                out.push(("--input-norm", self.model.pixel_norm.name()));
                out.push(("--resize", self.model.resize_side(arch.input[1]).to_string()));
                out.push(("--resize-filter", self.model.resize_filter.name().to_string()));
            }
            Err(e) => out.push(("model", e.0)),
        }
        let limit = match (self.dataset, self.limit) {
            (DatasetKind::Synthetic, None) => crate::data::SYNTHETIC_TRAIN.to_string(),
            (_, None) => "all images".to_string(),
            (_, Some(n)) => n.to_string(),
        };
        out.extend([
            ("--head", self.head.name().to_string()),
            ("--dataset", format!("{:?}", self.dataset)),
            ("--limit", limit),
            ("--batch", self.batch.to_string()),
            ("--lr", self.lr.to_string()),
            ("--momentum", self.momentum.to_string()),
            ("--weight-decay", self.weight_decay.to_string()),
            ("--seed", self.seed.to_string()),
            ("--fc-update", self.fc_update.name().to_string()),
            ("--wire", self.wire.name().to_string()),
            ("--precision", self.precision.name().to_string()),
            ("--lr-schedule", self.lr_schedule.to_string()),
            ("--lr-scaling", self.lr_scaling.name().to_string()),
        ]);
        if batch_norm {
            out.push(("--batch-stats", self.batch_stats.name().to_string()));
        }
        // 0 (off) in runs from before lighting noise, which read back as 0.
        out.push(("--lighting", self.lighting.to_string()));
        if self.lr_scaling != LrScaling::None {
            out.push(("--base-batch", self.base_batch.to_string()));
        }
        out
    }

    /// The first setting (other than the epoch count) in which this command differs from the
    /// checkpoint's run `saved`, in words: "this command has --lr 0.1, the checkpoint was
    /// trained with --lr 0.01".
    pub fn difference(&self, saved: &TrainConfig) -> Option<String> {
        self.first_difference(saved, |_| true)
    }

    /// [`TrainConfig::difference`] in the network's settings only (model, geometry, classes,
    /// towers, dropout): what must agree with imported weights.
    pub fn model_difference(&self, saved: &TrainConfig) -> Option<String> {
        self.first_difference(saved, |flag| MODEL_SETTINGS.contains(&flag))
    }

    /// Compared flag by flag, every flag either side has (one side's list may hold a setting
    /// the other lacks: `--base-batch` with a learning-rate scaling), never position by position.
    fn first_difference(&self, saved: &TrainConfig, compared: impl Fn(&str) -> bool) -> Option<String> {
        let (ours, theirs) = (self.effective_settings(), saved.effective_settings());
        let value = |list: &[(&'static str, String)], flag: &str| {
            list.iter().find(|(f, _)| *f == flag).map(|(_, v)| v.clone()).unwrap_or_else(|| "unset".into())
        };
        // This command's network does not build (say --input 99 above the --resize 76 a resume
        // keeps from an import at 67): its settings cannot be resolved, so the flags it was
        // given are compared with the checkpoint's, and the first that differs is named.
        if let (Err(e), Ok(_)) = (self.model.architecture(), saved.model.architecture()) {
            let given = [
                ("--input", self.model.input),
                ("--channels", self.model.channels),
                ("--classes", self.model.classes),
                ("--towers", self.model.towers),
                ("--hidden", self.model.hidden),
                ("--resize", self.model.resize),
            ];
            for (flag, v) in given.into_iter().filter(|(f, _)| compared(f)) {
                if let Some(v) = v.map(|v| v.to_string()).filter(|v| *v != value(&theirs, flag)) {
                    let was = value(&theirs, flag);
                    return Some(format!("this command has {flag} {v}, the checkpoint was trained with {flag} {was}"));
                }
            }
            return Some(format!("this command's network does not build: {}", e.0));
        }
        let flags = ours.iter().chain(&theirs).map(|(f, _)| *f);
        let mut seen = Vec::new();
        for flag in flags.filter(|f| compared(f)) {
            if seen.contains(&flag) {
                continue;
            }
            seen.push(flag);
            let (a, b) = (value(&ours, flag), value(&theirs, flag));
            if a != b {
                return Some(format!("this command has {flag} {a}, the checkpoint was trained with {flag} {b}"));
            }
        }
        None
    }
}
