//! Ten-crop testing: the network's probabilities averaged over each image's ten patches
//! ([`crate::data::TenCrops`]), then top-1, top-5 and the loss of the averages.

use std::sync::Arc;

use burn::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

use owt_models::{ConvNet, Head, PixelNorm};

use crate::data::images::ImageSource;
use crate::data::ten_crop::PATCHES;
use crate::data::TenCrops;
use crate::error::OwtError;
use crate::train::evaluate::Evaluation;
use crate::train::input::{batch_tensors, Count, Prefetch, Preparation, Tally};
use crate::train::step::{correct_count, top_k_correct, TOP_K};

/// Images per evaluation batch (ten patches each).
const IMAGES_PER_BATCH: usize = 16;

/// Each image's probabilities averaged over its patches: `logits` holds m images' ten
/// patches in a row (`[10 m, classes]`), the result `[m, classes]`.
pub fn patch_average<B: Backend>(head: Head, logits: Tensor<B, 2>) -> Tensor<B, 2> {
    let [rows, classes] = logits.dims();
    let images = rows / PATCHES;
    head.probabilities(logits).reshape([images, PATCHES, classes]).mean_dim(1).reshape([images, classes])
}

/// `model` on `source`'s images, each seen as its ten patches with the probabilities
/// averaged: accuracy (top-1 of the averages), top-5 (more than 5 classes) and the loss of
/// the averages ([`Head::loss_of_probabilities`]); pixels normalised as `norm` says, batches
/// prepared as `how` says.
pub fn evaluate_ten_crop<B: Backend>(
    model: &ConvNet<B>,
    head: Head,
    norm: &PixelNorm,
    source: Arc<TenCrops>,
    device: &B::Device,
    how: Preparation,
) -> Result<Evaluation, OwtError> {
    let images = source.images();
    let classes = source.classes();
    let indices: Vec<usize> = (0..source.len()).collect();
    let source: Arc<dyn ImageSource> = source;
    let mut batches =
        Prefetch::start(source, indices, IMAGES_PER_BATCH * PATCHES, false, StdRng::seed_from_u64(0), how);
    let mut tally = Tally::<B>::default();
    let mut in_top_k = Count::<B>::default();
    while let Some(batch) = batches.next_batch()? {
        let (x, y) = batch_tensors::<B>(&batch, device, norm);
        let m = batch.len() / PATCHES;
        let average = patch_average(head, model.forward(x));
        // Every patch of an image carries its label: the first of each ten is the image's.
        let labels = y.reshape([m, PATCHES]).slice([0..m, 0..1]).reshape([m]);
        if classes > TOP_K {
            in_top_k.add(top_k_correct(average.clone(), labels.clone(), TOP_K));
        }
        let correct = correct_count(head, average.clone(), labels.clone());
        tally.add(head.loss_of_probabilities(average, labels), correct, m);
    }
    let values = tally.read();
    let top5_accuracy = in_top_k.read().map(|hits| hits as f64 / values.images.max(1) as f64);
    Ok(Evaluation { loss: values.mean_loss(), accuracy: values.accuracy(), top5_accuracy, images })
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;

    use super::*;

    /// Two images of three classes, ten patches each, by hand: softmax of [ln 1, ln 1, ln 2]
    /// is [0.25, 0.25, 0.5] and of [ln 2, ln 1, ln 1] is [0.5, 0.25, 0.25]; an image with five
    /// patches of each averages to [0.375, 0.25, 0.375]; the other's ten patches all [ln 1,
    /// ln 3, ln 1] give [0.2, 0.6, 0.2].
    #[test]
    fn the_average_is_over_each_images_ten_patches() {
        let device = Default::default();
        let (a, b, c) = ([0.0, 0.0, 2f32.ln()], [2f32.ln(), 0.0, 0.0], [0.0, 3f32.ln(), 0.0]);
        let rows: Vec<f32> =
            (0..10).flat_map(|j| if j % 2 == 0 { a } else { b }).chain((0..10).flat_map(|_| c)).collect();
        let logits = Tensor::<Flex, 2>::from_data(TensorData::new(rows, [20, 3]), &device);
        let got: Vec<f32> = patch_average(Head::Softmax, logits).into_data().to_vec().unwrap();
        let want = [0.375, 0.25, 0.375, 0.2, 0.6, 0.2];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
        }
        // The loss of the averages: -ln 0.375 for label 0 of the first, -ln 0.6 for label 1.
        let average = Tensor::<Flex, 2>::from_data(TensorData::new(want.to_vec(), [2, 3]), &device);
        let labels = Tensor::<Flex, 1, Int>::from_data(TensorData::new(vec![0i64, 1], [2]), &device);
        let loss: f32 = Head::Softmax.loss_of_probabilities(average, labels).into_scalar();
        let expected = -(0.375f32.ln() + 0.6f32.ln()) / 2.0;
        assert!((loss - expected).abs() < 1e-6, "{loss} vs {expected}");
    }
}
