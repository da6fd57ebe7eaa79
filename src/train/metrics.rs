//! Per-epoch results, as printed and as written to `metrics.json`.

use std::collections::BTreeMap;

use owt_hybrid::{LedgerSnapshot, Phase};
use serde::{Deserialize, Serialize};

/// File name of a run's metrics inside its run directory: a copy of the checkpoint's, for
/// tools that read JSON.
pub const METRICS_FILE: &str = "metrics.json";

/// The most bytes one epoch's entry of metrics.json may take: 2 KB measured for a 2-rank
/// AlexNetSmall run (its traffic by layer and phase is most of it), 8x that for room.
pub const MAX_EPOCH_METRICS_BYTES: u64 = 16 << 10;

/// The most bytes a run's metrics (metrics.json, or a checkpoint's state) may take: an entry
/// for each of the most epochs a run may have.
pub const MAX_METRICS_BYTES: u64 = crate::train::config::MAX_EPOCHS as u64 * MAX_EPOCH_METRICS_BYTES;

/// One epoch's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochMetrics {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Mean training loss over the epoch's images.
    pub train_loss: f64,
    /// Fraction of training images classified correctly (during the epoch, dropout on).
    pub train_accuracy: f64,
    /// Mean loss on the test split.
    pub test_loss: f64,
    /// Fraction of test images classified correctly.
    pub test_accuracy: f64,
    /// Fraction of test images whose label is among the 5 highest outputs (top-5; where the
    /// network has more than 5 classes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_top5_accuracy: Option<f64>,
    /// Learning rate of the epoch (after batch scaling and the schedule's divisions); absent
    /// in runs from before schedules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// Training images per second (forward, backward, update).
    pub images_per_second: f64,
    /// Seconds of the epoch's training steps spent waiting for their input batches (absent
    /// in runs from before it was measured): near 0 when the loader keeps up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_wait_s: Option<f64>,
    /// Wall seconds of the epoch, evaluation included.
    pub seconds: f64,
    /// Where the epoch ran (devices, plan, scheme).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// Bytes and messages moved between ranks per step, by collective (mesh runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub communication: Option<Communication>,
    /// The loss scale at the epoch's end and the steps it skipped (f16 runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<crate::train::precision::LossScale>,
}

/// A mesh run's traffic in an epoch: one full training step's (a batch of `--batch` images),
/// the one figure `owt plan`'s dry run predicts, by collective and by layer; all the epoch's
/// steps together (a short last step at its own size); and, apart, what crossed besides the
/// steps (the figures read back, the evaluation, the checkpoint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Communication {
    /// Steps the epoch took.
    pub steps: usize,
    /// Bytes of one full step over all collectives.
    pub bytes_per_step: f64,
    /// Messages of one full step over all collectives.
    pub messages_per_step: f64,
    /// Per collective (`all_gather`, `all_reduce`, ...): one full step's bytes and messages.
    pub by_collective: BTreeMap<String, TrafficPerStep>,
    /// Per layer and phase (`fc6:forward`, `conv1:sync`, ...): one full step's bytes and
    /// messages. Absent in runs from before it was recorded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_phase: BTreeMap<String, TrafficPerStep>,
    /// Of `bytes_per_step`, those that crossed between processes (a mesh spanning processes;
    /// absent inside one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_process_bytes_per_step: Option<f64>,
    /// The epoch's steps together, a short last step at its own size (absent in runs from
    /// before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_total: Option<TrafficTotal>,
    /// What crossed in the epoch besides its steps (absent in runs from before it was counted
    /// apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub besides_steps: Option<BesidesSteps>,
    /// Ops that had no placement rule and ran gathered, with their counts over the epoch.
    pub fallbacks: BTreeMap<String, u64>,
    /// Tensors made with a zero-element piece on some rank, by kind, placement and shape,
    /// over the epoch (each would launch empty work; none are expected).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub empty_ops: BTreeMap<String, u64>,
}

/// Bytes and messages in all, over some stretch of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficTotal {
    /// Bytes.
    pub bytes: u64,
    /// Messages.
    pub messages: u64,
}

impl TrafficTotal {
    /// Every entry of `ledger` that `keep` keeps, summed.
    fn of(ledger: &LedgerSnapshot, keep: impl Fn(&Phase) -> bool) -> Self {
        let mut total = TrafficTotal::default();
        for ((phase, _), t) in &ledger.traffic {
            if keep(phase) {
                total.bytes += t.bytes;
                total.messages += t.messages;
            }
        }
        total
    }

    /// All of `ledger`.
    pub fn all(ledger: &LedgerSnapshot) -> Self {
        Self::of(ledger, |_| true)
    }
}

/// What crossed between ranks in an epoch besides its training steps, each counted apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BesidesSteps {
    /// The training loss and correct count read back during the epoch (progress, the
    /// divergence check, the epoch's figures), and their tally.
    pub reads: TrafficTotal,
    /// The evaluation on the test split, the model gathered for it included.
    pub evaluation: TrafficTotal,
    /// The checkpoint: the model and the momentum read whole.
    pub checkpoint: TrafficTotal,
}

/// One collective's bytes and messages per step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrafficPerStep {
    /// Bytes per step.
    pub bytes: f64,
    /// Messages per step.
    pub messages: f64,
}

impl Communication {
    /// The per-step averages of a ledger that recorded `steps` training steps of one size
    /// (evaluation excluded, reads of the figures left out).
    pub fn per_step(ledger: &LedgerSnapshot, steps: usize) -> Self {
        let per = |x: u64| x as f64 / steps.max(1) as f64;
        let mut by_collective: BTreeMap<String, TrafficPerStep> = BTreeMap::new();
        let mut by_phase: BTreeMap<String, TrafficPerStep> = BTreeMap::new();
        let (mut bytes, mut messages, mut cross) = (0, 0, 0);
        for ((phase, collective), t) in ledger.traffic.iter().filter(|((phase, _), _)| !phase.is_reads()) {
            for e in [by_collective.entry(collective.to_string()), by_phase.entry(phase.to_string())] {
                let e = e.or_insert(TrafficPerStep { bytes: 0.0, messages: 0.0 });
                e.bytes += per(t.bytes);
                e.messages += per(t.messages);
            }
            (bytes, messages, cross) = (bytes + t.bytes, messages + t.messages, cross + t.cross_process_bytes);
        }
        Communication {
            steps,
            bytes_per_step: per(bytes),
            messages_per_step: per(messages),
            cross_process_bytes_per_step: (cross > 0).then(|| per(cross)),
            by_collective,
            by_phase,
            steps_total: None,
            besides_steps: None,
            fallbacks: ledger.fallbacks.clone(),
            empty_ops: ledger.empty_ops.clone(),
        }
    }

    /// The traffic as the epoch's line says it: a full step's, then what crossed besides the
    /// steps.
    pub fn line(&self) -> String {
        // On a 2-D mesh what crosses is what the node dimension moves (`...[node]`).
        let tier = if self.by_collective.keys().any(|k| k.ends_with("[node]")) { "nodes" } else { "processes" };
        let across =
            self.cross_process_bytes_per_step.map(|b| format!(" ({b:.0} bytes across {tier})")).unwrap_or_default();
        let besides = self
            .besides_steps
            .map(|b| {
                format!(
                    "; besides the steps: reads {} bytes / {} messages, evaluation {} / {}, checkpoint {} / {}",
                    b.reads.bytes,
                    b.reads.messages,
                    b.evaluation.bytes,
                    b.evaluation.messages,
                    b.checkpoint.bytes,
                    b.checkpoint.messages
                )
            })
            .unwrap_or_default();
        format!(
            "{:.0} bytes / {:.0} messages per step between ranks{across}{besides}",
            self.bytes_per_step, self.messages_per_step
        )
    }

    /// An epoch of `steps` steps: `full_step` the ledger of one full step (the epoch's first),
    /// `epoch` the whole epoch's (its reads of the figures under [`Phase::reads`]).
    /// Evaluation and checkpoint are set by the caller, once they ran.
    pub fn of_epoch(full_step: &LedgerSnapshot, epoch: &LedgerSnapshot, steps: usize) -> Self {
        let step = Communication::per_step(full_step, 1);
        Communication {
            steps,
            steps_total: Some(TrafficTotal::of(epoch, |p| !p.is_reads())),
            besides_steps: Some(BesidesSteps { reads: TrafficTotal::of(epoch, Phase::is_reads), ..Default::default() }),
            fallbacks: epoch.fallbacks.clone(),
            empty_ops: epoch.empty_ops.clone(),
            ..step
        }
    }
}

impl EpochMetrics {
    /// The line printed after each epoch.
    pub fn summary(&self, epochs: usize) -> String {
        format!(
            "epoch {}/{epochs}: {}train loss {:.4}, train acc {:.2}%, test loss {:.4}, test acc {:.2}%{}, {:.0} images/s, {:.1} s{}",
            self.epoch,
            self.lr.map(|lr| format!("lr {}, ", crate::train::schedule::Rate(lr))).unwrap_or_default(),
            self.train_loss,
            100.0 * self.train_accuracy,
            self.test_loss,
            100.0 * self.test_accuracy,
            self.test_top5_accuracy.map(|t| format!(" (top-5 {:.2}%)", 100.0 * t)).unwrap_or_default(),
            self.images_per_second,
            self.seconds,
            self.input_wait_s.map(|w| format!(" (waiting for input {w:.1} s)")).unwrap_or_default()
        ) + &self
            .communication
            .as_ref()
            .map(|c| format!(", {}", c.line()))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resumed run rewrites metrics.json from the figures its checkpoint kept (JSON): every
    /// one must come back as the bits written. These values are ones serde_json's default
    /// float parsing reads a last digit off (1 in 13 random f64s is).
    #[test]
    fn every_figure_reads_back_bit_for_bit() {
        let awkward = [1.7546217903306627, 7.2316896362404055, 9.720916325967499, 0.1 + 0.2, 1e-300 / 3.0];
        for (i, &v) in awkward.iter().enumerate() {
            let m = EpochMetrics {
                epoch: i + 1,
                train_loss: v,
                train_accuracy: v / 10.0,
                test_loss: v * 3.0,
                test_accuracy: v / 7.0,
                test_top5_accuracy: Some(v / 9.0),
                lr: Some(v * 1e-3),
                images_per_second: v * 1234.5,
                input_wait_s: Some(v / 11.0),
                seconds: v * 17.0,
                layout: None,
                communication: None,
                loss_scale: None,
            };
            let back: EpochMetrics = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
            assert_eq!(back, m, "{v:?}");
        }
    }
}
