//! Per-epoch results, as printed and as written to `metrics.json`.

use serde::{Deserialize, Serialize};

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
    /// Training images per second (forward, backward, update).
    pub images_per_second: f64,
    /// Wall seconds of the epoch, evaluation included.
    pub seconds: f64,
}

impl EpochMetrics {
    /// The line printed after each epoch.
    pub fn summary(&self, epochs: usize) -> String {
        format!(
            "epoch {}/{epochs}: train loss {:.4}, train acc {:.2}%, test loss {:.4}, test acc {:.2}%, {:.0} images/s, {:.1} s",
            self.epoch,
            self.train_loss,
            100.0 * self.train_accuracy,
            self.test_loss,
            100.0 * self.test_accuracy,
            self.images_per_second,
            self.seconds
        )
    }
}
