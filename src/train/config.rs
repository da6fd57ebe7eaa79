//! What a training run is: everything that decides its numbers, stored in its checkpoint.

use serde::{Deserialize, Serialize};

use owt_models::{Head, ModelSpec};

use crate::data::DatasetKind;

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
        }
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
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(OwtError::input(format!("--lr must be a positive number, got {}", self.lr)));
        }
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(OwtError::input(format!("--momentum must be in [0, 1), got {}", self.momentum)));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(OwtError::input(format!("--weight-decay must be >= 0, got {}", self.weight_decay)));
        }
        if self.limit == Some(0) {
            return Err(OwtError::data("--limit 0 leaves the dataset empty: expected at least 1 image"));
        }
        Ok(())
    }

    /// Refuses to resume the run `saved` (a checkpoint's config) with this config when a
    /// setting other than the epoch count differs, naming it.
    pub fn check_resume_of(&self, saved: &TrainConfig) -> Result<(), crate::error::OwtError> {
        match saved.difference(self) {
            Some(diff) => Err(crate::error::OwtError::checkpoint(format!(
                "cannot resume: the checkpoint's run differs in {diff} (checkpoint vs this command)"
            ))),
            None => Ok(()),
        }
    }

    /// The first setting that differs from `other` except the epoch count, as
    /// "name: this vs other", for refusing a resume that would not continue the same run.
    pub fn difference(&self, other: &TrainConfig) -> Option<String> {
        let a = serde_json::to_value(self).ok()?;
        let b = serde_json::to_value(other).ok()?;
        let (a, b) = (a.as_object()?, b.as_object()?);
        a.iter()
            .filter(|(k, _)| k.as_str() != "epochs")
            .find(|(k, v)| b.get(*k) != Some(v))
            .map(|(k, v)| format!("{k}: {} vs {}", v, b.get(k).cloned().unwrap_or_default()))
    }
}
