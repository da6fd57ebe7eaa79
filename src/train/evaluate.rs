//! Evaluation of a network on a split: loss, accuracy and top-5 accuracy, on one device or
//! in a run's own layout (each rank, process or node its rows of every batch), and the
//! class each image is ranked first.

use std::sync::Arc;

use burn::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

use owt_models::{ConvNet, Head, PixelNorm};

use crate::data::{Batch, ImageSource};
use crate::error::OwtError;
use crate::train::input::{batch_tensors, Count, Tally};
use crate::train::prefetch::{Prefetch, Preparation};
use crate::train::step::{correct_count, top_k_correct, TOP_K};

/// Batch size of `owt eval` and [`evaluate`] (no gradients, so larger is fine). A training
/// run evaluates at its own batch size instead, so evaluation reuses the kernels (and on GPUs
/// the autotune results) of the training steps' forward passes.
pub const EVAL_BATCH: usize = 500;

/// Loss and accuracy over a split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    /// Mean loss per image.
    pub loss: f64,
    /// Fraction of images whose label is among the 5 highest outputs (where there are more
    /// than 5 classes).
    pub top5_accuracy: Option<f64>,
    /// Fraction correct.
    pub accuracy: f64,
    /// Images evaluated.
    pub images: usize,
}

/// Loss and accuracy of `model` on `source` (deterministic view, no augmentation) on one
/// device, its pixels normalised as `norm` says, prepared as `how` says.
pub fn evaluate<B: Backend>(
    model: &ConvNet<B>,
    head: Head,
    norm: &PixelNorm,
    source: &Arc<dyn ImageSource>,
    device: &B::Device,
    how: Preparation,
) -> Result<Evaluation, OwtError> {
    evaluate_with(model, head, source, EVAL_BATCH, how, &|batch| batch_tensors::<B>(batch, device, norm))
}

/// The class `model` ranks first for each image of `source`, in order (its deterministic
/// view: centre crops), pixels normalised as `norm` says: what a comparison with another
/// framework's predictions, image by image, needs.
pub fn predictions<B: Backend>(
    model: &ConvNet<B>,
    norm: &PixelNorm,
    source: &Arc<dyn ImageSource>,
    device: &B::Device,
    how: Preparation,
) -> Result<Vec<usize>, OwtError> {
    let order: Vec<usize> = (0..source.len()).collect();
    let mut batches = Prefetch::start(source.clone(), order, EVAL_BATCH, false, StdRng::seed_from_u64(0), how);
    let mut out = Vec::with_capacity(source.len());
    while let Some(batch) = batches.next_batch()? {
        let (images, _) = batch_tensors::<B>(&batch, device, norm);
        let top = model.forward(images).argmax(1).into_data();
        out.extend(top.iter::<i64>().map(|c| c as usize));
    }
    Ok(out)
}

/// [`evaluate`] in batches of `batch` images, each brought to the device by `upload` (a
/// parallel run's input placement, so evaluation is split over the ranks like training).
/// Batches are prepared ahead on worker threads as `how` says; the sums stay on the device
/// and are read once at the end.
pub fn evaluate_with<B: Backend>(
    model: &ConvNet<B>,
    head: Head,
    source: &Arc<dyn ImageSource>,
    batch: usize,
    how: Preparation,
    upload: &dyn Fn(&Batch) -> (Tensor<B, 4>, Tensor<B, 1, Int>),
) -> Result<Evaluation, OwtError> {
    evaluate_rows(model, head, source, batch, how, owt_hybrid::RowSplit::whole(), upload)
}

/// [`evaluate_with`] preparing only the rows of each batch `split` names (a process's or a
/// node's share; `upload` makes the whole batch's tensor of them, so the loss and counts are
/// the whole batch's).
pub fn evaluate_rows<B: Backend>(
    model: &ConvNet<B>,
    head: Head,
    source: &Arc<dyn ImageSource>,
    batch: usize,
    how: Preparation,
    split: owt_hybrid::RowSplit,
    upload: &dyn Fn(&Batch) -> (Tensor<B, 4>, Tensor<B, 1, Int>),
) -> Result<Evaluation, OwtError> {
    let indices: Vec<usize> = (0..source.len()).collect();
    let mut batches = Prefetch::start_rows(source.clone(), indices, batch, false, StdRng::seed_from_u64(0), how, split);
    let mut tally = Tally::<B>::default();
    let top_k = source.classes() > TOP_K;
    let mut in_top_k = Count::<B>::default();
    while let Some(batch) = batches.next_batch()? {
        let (images, labels) = upload(&batch);
        let logits = model.forward(images);
        let correct = correct_count(head, logits.clone(), labels.clone());
        if top_k {
            in_top_k.add(top_k_correct(logits.clone(), labels.clone(), TOP_K));
        }
        tally.add(head.loss(logits, labels), correct, batch.total_len());
    }
    let values = tally.read();
    let top5_accuracy = in_top_k.read().map(|hits| hits as f64 / values.images.max(1) as f64);
    Ok(Evaluation { loss: values.mean_loss(), accuracy: values.accuracy(), top5_accuracy, images: source.len() })
}
