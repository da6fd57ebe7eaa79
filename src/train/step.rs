//! One SGD step of a `ConvNet` (the AlexNet family, VGG) on a batch, for any [`StepLayout`]: synchronous (every weight updated once from
//! the whole batch) or with the FC layers updated per chunk (Krizhevsky 2014, section 4: the
//! FC weights are updated after each worker's chunk, the conv weights once per step).

use std::ops::Range;

use burn::optim::{GradientsAccumulator, GradientsParams, Optimizer};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use owt_hybrid::{shard_ranges, StepLabels, StepLayout};
use owt_models::{ConvNet, DropoutKey, Head};

use crate::parallel::LayerPhases;
use crate::train::precision::{LossScale, Precision};

/// When the FC layers' weights are updated (`--fc-update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FcUpdate {
    /// Once per step from the whole batch: plain synchronous SGD.
    #[default]
    PerStep,
    /// After each rank's chunk of the batch (smaller effective FC batch, no longer exactly
    /// synchronous SGD); conv weights still once per step.
    PerChunk,
}

impl FcUpdate {
    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            FcUpdate::PerStep => "per-step",
            FcUpdate::PerChunk => "per-chunk",
        }
    }

    /// Every schedule.
    pub const ALL: [FcUpdate; 2] = [FcUpdate::PerStep, FcUpdate::PerChunk];
}

impl std::str::FromStr for FcUpdate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FcUpdate::ALL.into_iter().find(|u| u.name() == s).ok_or_else(|| {
            format!("unknown FC update {s:?}: expected one of {}", FcUpdate::ALL.map(FcUpdate::name).join(", "))
        })
    }
}

/// How many of `logits`' predictions equal `labels`, as a device tensor of shape `[1]`.
pub fn correct_count<B: Backend>(head: Head, logits: Tensor<B, 2>, labels: Tensor<B, 1, Int>) -> Tensor<B, 1, Int> {
    head.predict(logits).equal(labels).int().sum()
}

/// How many of `labels` are among the `k` highest outputs of their row of `logits` (fewer
/// than `k` others strictly above the label's): the papers' top-k (top-5 for ImageNet).
/// Softmax and logistic heads rank the classes alike, by the logits.
pub fn top_k_correct<B: Backend>(logits: Tensor<B, 2>, labels: Tensor<B, 1, Int>, k: usize) -> Tensor<B, 1, Int> {
    let [n, c] = logits.dims();
    let target = logits.clone().gather(1, labels.reshape([n, 1]));
    let above = logits.greater(target.expand([n, c])).int().sum_dim(1);
    above.lower_elem(k as i64).int().sum()
}

/// The classes a top-k figure is reported for beside top-1: more than this many outputs.
pub const TOP_K: usize = 5;

/// The conv trunk's features, each layer's traffic labelled by the layout (a new step's
/// labels start here).
pub fn features<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    model: &ConvNet<B>,
    images: Tensor<B, 4>,
) -> Tensor<B, 2> {
    features_labelled(layout.labels(), model, images)
}

/// [`features`] labelled by `labels`.
fn features_labelled<B: AutodiffBackend, S: StepLabels<B>>(
    labels: S,
    model: &ConvNet<B>,
    images: Tensor<B, 4>,
) -> Tensor<B, 2> {
    let mut phases = LayerPhases::new(labels, None);
    let features = model.forward_features_hooked(images, &mut phases);
    phases.close(features)
}

/// Logits from `features` through fc6..fc8, ready for the loss (labelled per layer), with the
/// dropout masks `key` names.
pub fn classifier<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    model: &ConvNet<B>,
    features: Tensor<B, 2>,
    key: DropoutKey,
) -> Tensor<B, 2> {
    classifier_labelled(layout.labels(), model, features, key)
}

/// [`classifier`] labelled by `labels`.
fn classifier_labelled<B: AutodiffBackend, S: StepLabels<B>>(
    labels: S,
    model: &ConvNet<B>,
    features: Tensor<B, 2>,
    key: DropoutKey,
) -> Tensor<B, 2> {
    let mut phases = LayerPhases::new(labels, Some(key));
    let logits = model.forward_classifier_hooked(features, &mut phases);
    phases.enter_loss(logits)
}

/// What one step measured, still on the device: reading it waits for the step to finish, so
/// the training loop adds it to a [`crate::train::input::Tally`] instead and reads that now
/// and then.
#[derive(Debug, Clone)]
pub struct StepOutcome<B: Backend> {
    /// Mean loss over the batch (before the update), shape `[1]`.
    pub loss: Tensor<B, 1>,
    /// Images classified correctly (before the update), shape `[1]`.
    pub correct: Tensor<B, 1, Int>,
    /// Images in the batch.
    pub images: usize,
}

impl<B: Backend> StepOutcome<B> {
    /// The mean loss and the correct count, read back from the device.
    pub fn read(&self) -> (f64, usize) {
        let mut tally = crate::train::input::Tally::<B>::default();
        tally.add(self.loss.clone(), self.correct.clone(), self.images);
        let values = tally.read();
        (values.mean_loss(), values.correct)
    }
}

/// One step of SGD on `images`/`labels` (already placed by the layout): forward (dropout masks
/// named by `key`), loss, backward, gradient sync and `optim` at rate `lr`. Nothing is read
/// back from the device.
#[allow(clippy::too_many_arguments)]
pub fn train_step<B: AutodiffBackend, L: StepLayout<B>, O: Optimizer<ConvNet<B>, B>>(
    layout: &L,
    model: ConvNet<B>,
    optim: &mut O,
    lr: f64,
    head: Head,
    fc_update: FcUpdate,
    key: DropoutKey,
    images: Tensor<B, 4>,
    labels: Tensor<B, 1, Int>,
) -> (ConvNet<B>, StepOutcome<B::InnerBackend>) {
    match fc_update {
        FcUpdate::PerStep => {
            let mut step = AccumulatedStep::new(labels.dims()[0], head, key);
            step.micro_batch(layout, &model, images, labels);
            step.finish(layout, model, optim, lr)
        }
        FcUpdate::PerChunk => per_chunk_step(layout, model, optim, lr, head, key, images, labels),
    }
}

/// One synchronous SGD step over micro-batches (gradient accumulation, `--accum-steps`): each
/// micro-batch's forward and backward pass in turn, their gradients summed where they are (a
/// replicated parameter's pending sums stay pending), then one gradient sync and one update.
/// The micro-batches are consecutive rows of the step's batch, each loss weighted by its share
/// of the step's images and each dropout mask keyed by its rows, so the step equals one batch
/// of them all (up to the order of float sums) with one micro-batch's activations in memory.
pub struct AccumulatedStep<B: AutodiffBackend> {
    grads: GradientsAccumulator<ConvNet<B>>,
    head: Head,
    key: DropoutKey,
    /// What the passes compute in, and the factor the loss is scaled by (1 unless f16).
    precision: Precision,
    scale: f64,
    /// Images of the whole step.
    images: usize,
    /// Images of the micro-batches taken so far.
    seen: usize,
    loss: Option<Tensor<B::InnerBackend, 1>>,
    correct: Option<Tensor<B::InnerBackend, 1, Int>>,
}

impl<B: AutodiffBackend> AccumulatedStep<B> {
    /// A step of `images` images in all, with the loss of `head` and the dropout masks `key`
    /// names for the step's batch.
    pub fn new(images: usize, head: Head, key: DropoutKey) -> Self {
        let precision = Precision::F32;
        Self {
            grads: GradientsAccumulator::new(),
            head,
            key,
            precision,
            scale: 1.0,
            images,
            seen: 0,
            loss: None,
            correct: None,
        }
    }

    /// The step's passes in `precision` on the f32 masters (see [`Precision`]), the loss
    /// multiplied by `scale` before each backward pass (finish with
    /// [`AccumulatedStep::finish_scaled`] when it is not 1).
    pub fn in_precision(self, precision: Precision, scale: f64) -> Self {
        Self { precision, scale, ..self }
    }

    /// The forward and backward pass of the step's next rows (`images`/`labels`, placed by the
    /// layout), their gradients added to the step's.
    pub fn micro_batch<L: StepLayout<B>>(
        &mut self,
        layout: &L,
        model: &ConvNet<B>,
        images: Tensor<B, 4>,
        labels: Tensor<B, 1, Int>,
    ) {
        let n = labels.dims()[0];
        assert!(
            self.seen + n <= self.images,
            "a step of {} images got micro-batches of {} and more",
            self.images,
            self.seen + n
        );
        // The module as the step computes with it (parameters a 2-D mesh shards over its nodes
        // gathered, differentiably); the gradients are the stored module's.
        let compute = self.precision.compute_module(layout.compute_module(model));
        // A step of one micro-batch may sync each layer's gradients as the backward pass leaves
        // it (a layout that overlaps its sync); with several, the sums wait for the last.
        let step_labels = || if n == self.images { layout.labels_syncing(model) } else { layout.labels() };
        let features = features_labelled(step_labels(), &compute, self.precision.input(images));
        let logits = classifier_labelled(step_labels(), &compute, features, self.key.from_row(self.seen));
        let (loss, outcome) = loss_and_outcome(self.head, self.precision.output(logits), labels);
        drop(compute);
        let loss = if self.scale == 1.0 { loss } else { loss.mul_scalar(self.scale) };
        // The step's loss is the mean over all its images: each micro-batch's mean weighted by
        // its share (a whole batch's weight, 1, is left out: the same numbers as no weighting).
        let (loss, mean) = if n == self.images {
            (loss, outcome.loss)
        } else {
            let share = n as f64 / self.images as f64;
            (loss.mul_scalar(share), outcome.loss.mul_scalar(share))
        };
        self.loss = Some(match self.loss.take() {
            Some(sum) => sum + mean,
            None => mean,
        });
        self.correct = Some(match self.correct.take() {
            Some(sum) => sum + outcome.correct,
            None => outcome.correct,
        });
        self.grads.accumulate(model, layout.gradients(model, loss));
        self.seen += n;
    }

    /// The one gradient sync and update of the step; what it measured (before the update).
    /// Panics when the micro-batches did not cover the step's images.
    pub fn finish<L: StepLayout<B>, O: Optimizer<ConvNet<B>, B>>(
        mut self,
        layout: &L,
        model: ConvNet<B>,
        optim: &mut O,
        lr: f64,
    ) -> (ConvNet<B>, StepOutcome<B::InnerBackend>) {
        assert_eq!(self.scale, 1.0, "a step with a loss scale finishes with finish_scaled");
        let grads = layout.sync(&model, self.grads.grads());
        let outcome = self.outcome();
        (optim.step(lr, model, grads), outcome)
    }

    /// [`AccumulatedStep::finish`] for a step whose loss was scaled by `scaler`'s scale: the
    /// synced gradients divided by it, then the update only if all of them are finite (a
    /// skipped step leaves the weights and the momentum as they were); `scaler` learns which.
    pub fn finish_scaled<L: StepLayout<B>, O: Optimizer<ConvNet<B>, B>>(
        mut self,
        layout: &L,
        model: ConvNet<B>,
        optim: &mut O,
        lr: f64,
        scaler: &mut LossScale,
    ) -> (ConvNet<B>, StepOutcome<B::InnerBackend>) {
        let grads = layout.sync(&model, self.grads.grads());
        let (grads, finite) = crate::train::precision::unscale(&model, grads, self.scale);
        scaler.update(finite);
        let outcome = self.outcome();
        (if finite { optim.step(lr, model, grads) } else { model }, outcome)
    }

    /// [`AccumulatedStep::finish_scaled`] with `scaler` where the step's loss was scaled,
    /// [`AccumulatedStep::finish`] otherwise.
    pub fn finish_with<L: StepLayout<B>, O: Optimizer<ConvNet<B>, B>>(
        self,
        layout: &L,
        model: ConvNet<B>,
        optim: &mut O,
        lr: f64,
        scaler: Option<&mut LossScale>,
    ) -> (ConvNet<B>, StepOutcome<B::InnerBackend>) {
        match scaler {
            Some(scaler) => self.finish_scaled(layout, model, optim, lr, scaler),
            None => self.finish(layout, model, optim, lr),
        }
    }

    /// What the step measured, once its micro-batches covered its images.
    fn outcome(&mut self) -> StepOutcome<B::InnerBackend> {
        assert_eq!(self.seen, self.images, "the micro-batches cover the step's images");
        StepOutcome {
            loss: self.loss.take().expect("a step has a micro-batch"),
            correct: self.correct.take().expect("a step has a micro-batch"),
            images: self.images,
        }
    }
}

/// Each parameter's gradient norm (L2 over the whole tensor, however the layout places it) for
/// one batch before any update: the synced gradients [`train_step`] would apply, by parameter
/// path (`conv1.weight`, ..., `fc8.bias`). A diagnostic: two layouts that compute the same step
/// give the same norms up to rounding, so where a mesh's losses part from one device's, the
/// parameter whose norms part is where to look (`owt bench --gradient-norms`).
pub fn gradient_norms<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    model: &ConvNet<B>,
    head: Head,
    key: DropoutKey,
    images: Tensor<B, 4>,
    labels: Tensor<B, 1, Int>,
) -> std::collections::BTreeMap<String, f64> {
    let mut step = AccumulatedStep::new(labels.dims()[0], head, key);
    step.micro_batch(layout, model, images, labels);
    let grads = layout.sync(model, step.grads.grads());
    owt_hybrid::gradient_values(model, &grads)
        .into_iter()
        .filter_map(|(path, g)| Some((path, g?.iter().map(|v| v * v).sum::<f64>().sqrt())))
        .collect()
}

/// The loss to differentiate and what it and the logits say about the batch (on the device).
fn loss_and_outcome<B: AutodiffBackend>(
    head: Head,
    logits: Tensor<B, 2>,
    labels: Tensor<B, 1, Int>,
) -> (Tensor<B, 1>, StepOutcome<B::InnerBackend>) {
    let images = labels.dims()[0];
    let correct = correct_count(head, logits.clone().inner(), labels.clone().inner());
    let loss = head.loss(logits, labels);
    (loss.clone(), StepOutcome { loss: loss.inner(), correct, images })
}

/// The chunks of a batch of `n` images on `ranks` ranks: each rank's batch shard.
pub fn chunks(n: usize, ranks: usize) -> Vec<Range<usize>> {
    shard_ranges(n, ranks).into_iter().filter(|r| !r.is_empty()).collect()
}

#[allow(clippy::too_many_arguments)]
fn per_chunk_step<B: AutodiffBackend, L: StepLayout<B>, O: Optimizer<ConvNet<B>, B>>(
    layout: &L,
    mut model: ConvNet<B>,
    optim: &mut O,
    lr: f64,
    head: Head,
    key: DropoutKey,
    images: Tensor<B, 4>,
    labels: Tensor<B, 1, Int>,
) -> (ConvNet<B>, StepOutcome<B::InnerBackend>) {
    let n = labels.dims()[0];
    let features = features(layout, &model, images);
    let detached = features.clone().detach();
    let (mut loss_sum, mut correct) = (None::<Tensor<B::InnerBackend, 1>>, None::<Tensor<B::InnerBackend, 1, Int>>);
    let mut feature_grads = Vec::new();
    for range in chunks(n, layout.ranks()) {
        let share = range.len() as f64 / n as f64;
        let x = detached.clone().slice([range.clone()]).require_grad();
        let logits = classifier(layout, &model, x.clone(), key.from_row(range.start));
        let y = labels.clone().slice([range]);
        let (loss, o) = loss_and_outcome(head, logits, y);
        let weighted = o.loss.mul_scalar(share);
        loss_sum = Some(match loss_sum {
            Some(sum) => sum + weighted,
            None => weighted,
        });
        correct = Some(match correct {
            Some(sum) => sum + o.correct,
            None => o.correct,
        });
        // Backward through the FC layers only (the chunk's features are a leaf): FC gradients
        // from this chunk's mean loss, and the gradient reaching the features.
        let mut grads = layout.backward(loss);
        let feature_grad = x.grad_remove(&mut grads).expect("the chunk's features take part in its loss");
        feature_grads.push(feature_grad.mul_scalar(share));
        let fc_grads = layout.sync(&model, GradientsParams::from_grads(grads, &model));
        model = optim.step(lr, model, fc_grads);
    }
    // The conv layers: the whole batch's mean loss reaches the features as the chunks'
    // gradients weighted by their share of the batch.
    let g = Tensor::<B, 2>::from_inner(Tensor::cat(feature_grads, 0));
    let surrogate = (features * g).sum();
    let conv_grads = layout.sync(&model, layout.gradients(&model, surrogate));
    let outcome = StepOutcome {
        loss: loss_sum.expect("a batch has at least one chunk"),
        correct: correct.expect("a batch has at least one chunk"),
        images: n,
    };
    (optim.step(lr, model, conv_grads), outcome)
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;
    use burn::prelude::*;
    use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

    use super::{top_k_correct, FcUpdate, StepOutcome};

    #[test]
    fn fc_update_names_are_the_cli_spellings_and_parse_back() {
        let names = FcUpdate::ALL.map(FcUpdate::name);
        assert_eq!(names, ["per-step", "per-chunk"]);
        for update in FcUpdate::ALL {
            assert_eq!(update.name().parse::<FcUpdate>(), Ok(update));
        }
        let e = "per-batch".parse::<FcUpdate>().unwrap_err();
        assert!(e.contains("\"per-batch\"") && e.contains("per-step, per-chunk"), "{e}");
    }

    /// A step's outcome reads back as the loss and the count it holds (the mean over its
    /// images is the loss itself: it is already a mean).
    #[test]
    fn a_step_outcome_reads_back_its_loss_and_correct_count() {
        let device = Default::default();
        for (loss, correct, images) in [(0.3125, 3, 8), (2.5, 0, 1), (0.0, 17, 17)] {
            let outcome = StepOutcome::<Flex> {
                loss: Tensor::from_data(TensorData::new(vec![loss as f32], [1]), &device),
                correct: Tensor::from_data(TensorData::new(vec![correct as i64], [1]), &device),
                images,
            };
            assert_eq!(outcome.read(), (loss, correct), "{images} images");
        }
    }

    /// Three rows of 7 classes, worked by hand: row 0's label (class 2, 0.5) has 2 outputs above
    /// it, row 1's (class 6, 0.1) has 6, row 2's (class 0, 0.3) has 5 (a tie at 0.3 is not
    /// above it). Top-1 counts row 2 only if nothing is above: no row; top-3: row 0; top-6:
    /// rows 0 and 2; top-7: all three.
    fn case<B: Backend>(device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        let logits = [
            [0.9, 0.7, 0.5, 0.1, 0.2, 0.3, 0.0],
            [0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1],
            [0.3, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3],
        ];
        let flat: Vec<f32> = logits.iter().flatten().copied().collect();
        let logits = Tensor::<B, 2>::from_data(TensorData::new(flat, [3, 7]), device);
        (logits, Tensor::from_data(TensorData::new(vec![2i64, 6, 0], [3]), device))
    }

    fn count<B: Backend>(logits: Tensor<B, 2>, labels: Tensor<B, 1, Int>, k: usize) -> i64 {
        top_k_correct(logits, labels, k).into_data().iter::<i64>().next().unwrap()
    }

    #[test]
    fn top_k_counts_the_labels_with_fewer_than_k_outputs_above() {
        let (logits, labels) = case::<Flex>(&Default::default());
        let got: Vec<i64> = [1, 3, 5, 6, 7].iter().map(|&k| count(logits.clone(), labels.clone(), k)).collect();
        assert_eq!(got, [0, 1, 1, 2, 3]);
        // On a mesh whose logits are split by class (the weird trick's fc8 output), the same.
        let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
        let (logits, labels) = case::<Hybrid<Flex>>(&mesh);
        let (logits, labels) = (logits.distribute(Placement::Shard(1)), labels.distribute(Placement::Shard(0)));
        let got: Vec<i64> = [1, 3, 5, 6, 7].iter().map(|&k| count(logits.clone(), labels.clone(), k)).collect();
        assert_eq!(got, [0, 1, 1, 2, 3]);
    }
}
