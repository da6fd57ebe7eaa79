//! Output heads: how logits become a loss and a prediction.

use burn::prelude::*;
use burn::tensor::activation::log_softmax;

/// The output layer's loss. The models emit one logit per class; the head decides how they
/// are read.
///
/// ```
/// use burn::backend::Flex;
/// use burn::prelude::*;
/// use owt_models::Head;
///
/// let device = Default::default();
/// let logits = Tensor::<Flex, 2>::zeros([4, 10], &device); // a uniform guess
/// let labels = Tensor::<Flex, 1, Int>::from_ints([0, 1, 2, 3], &device);
/// for head in Head::ALL {
///     let loss = head.loss(logits.clone(), labels.clone()).into_scalar() as f64;
///     assert!((loss - head.uniform_loss(10)).abs() < 1e-5, "{}: {loss}", head.name());
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Head {
    /// Softmax over the classes with cross-entropy (the 2012 paper).
    #[default]
    Softmax,
    /// One independent logistic unit per class with binary cross-entropy (the 2014 paper's
    /// choice: no normaliser across classes, so a column-split output layer needs no exchange).
    Logistic,
}

impl Head {
    /// All heads, for listings and tests.
    pub const ALL: [Head; 2] = [Head::Softmax, Head::Logistic];

    /// The CLI spelling of this head.
    pub fn name(self) -> &'static str {
        match self {
            Head::Softmax => "softmax",
            Head::Logistic => "logistic",
        }
    }

    /// Mean loss over the batch. `logits`: `[batch, classes]`; `targets`: `[batch]` class ids.
    ///
    /// For the logistic head the per-image loss is the sum over classes of the binary
    /// cross-entropy, computed stably as `max(z,0) - z*y + ln(1 + e^-|z|)`.
    pub fn loss<B: Backend>(self, logits: Tensor<B, 2>, targets: Tensor<B, 1, Int>) -> Tensor<B, 1> {
        let [batch, classes] = logits.dims();
        match self {
            Head::Softmax => {
                let picked = log_softmax(logits, 1).gather(1, targets.reshape([batch, 1]));
                picked.neg().mean()
            }
            Head::Logistic => {
                let y = targets.one_hot::<2>(classes).float();
                let per_unit = logits.clone().clamp_min(0.0) - logits.clone() * y + logits.abs().neg().exp().log1p();
                per_unit.sum_dim(1).mean()
            }
        }
    }

    /// The loss per image of a uniform guess (all logits 0) over `classes` classes: ln(C) for
    /// softmax, C ln 2 for independent logistic units. Training starts near it; a loss far
    /// above it means the run diverged.
    pub fn uniform_loss(self, classes: usize) -> f64 {
        match self {
            Head::Softmax => (classes as f64).ln(),
            Head::Logistic => classes as f64 * std::f64::consts::LN_2,
        }
    }

    /// The head's probabilities: softmax over the classes, or each unit's sigmoid. What
    /// ten-crop testing averages over an image's patches.
    pub fn probabilities<B: Backend>(self, logits: Tensor<B, 2>) -> Tensor<B, 2> {
        match self {
            Head::Softmax => burn::tensor::activation::softmax(logits, 1),
            Head::Logistic => burn::tensor::activation::sigmoid(logits),
        }
    }

    /// [`Head::loss`] of `probabilities` (as [`Head::probabilities`] gives them, or averages
    /// of them): `-ln p(label)` for softmax, the binary cross-entropies summed over the units
    /// for the logistic head; probabilities are kept within 1e-12 of 0 and 1.
    pub fn loss_of_probabilities<B: Backend>(
        self,
        probabilities: Tensor<B, 2>,
        targets: Tensor<B, 1, Int>,
    ) -> Tensor<B, 1> {
        let [batch, classes] = probabilities.dims();
        let p = probabilities.clamp(1e-12, 1.0 - 1e-12);
        match self {
            Head::Softmax => p.gather(1, targets.reshape([batch, 1])).log().neg().mean(),
            Head::Logistic => {
                let y = targets.one_hot::<2>(classes).float();
                let not = p.clone().neg().add_scalar(1.0).log() * (y.clone().neg().add_scalar(1.0));
                (p.log() * y + not).sum_dim(1).neg().mean()
            }
        }
    }

    /// Predicted class per image (the largest logit, for either head).
    pub fn predict<B: Backend>(self, logits: Tensor<B, 2>) -> Tensor<B, 1, Int> {
        let [batch, _] = logits.dims();
        logits.argmax(1).reshape([batch])
    }
}

impl std::str::FromStr for Head {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Head::ALL
            .into_iter()
            .find(|h| h.name() == s)
            .ok_or_else(|| format!("unknown head '{s}': expected one of softmax, logistic"))
    }
}
