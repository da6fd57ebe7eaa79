//! The training input, built to keep a GPU fed: host batches are prepared on a background
//! thread one step ahead ([`Prefetch`]), pixels travel to the device as bytes and are
//! normalised there ([`upload_images`]), and running loss and accuracy stay on the device until
//! they are read ([`Tally`]), so a step does not wait for the host.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, Transaction};
use owt_hybrid::StepLayout;
use rand::rngs::StdRng;

use crate::data::images::PIXEL_SCALE;
use crate::data::{Batch, ImageSource};
use crate::error::OwtError;

/// Batches of an image source in a given order, prepared on a background thread up to
/// `ahead` batches before they are asked for. The order of random draws (crops, flips) is the
/// order of the batches, so the batches are exactly those a loop on one thread would make.
pub struct Prefetch {
    rx: Option<Receiver<Result<Batch, OwtError>>>,
    worker: Option<JoinHandle<()>>,
}

/// The generator of the random crop and flip of the image at position `at` of an epoch's
/// order: a function of the epoch's `base` draw and the position alone, so a process that
/// prepares only its rows of a batch draws for them what one process preparing the whole
/// batch would.
pub fn image_rng(base: u64, at: usize) -> StdRng {
    use rand::SeedableRng;
    // SplitMix64's finaliser over the position, mixed into the base.
    let mut z = base ^ (at as u64).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    StdRng::seed_from_u64(z ^ (z >> 31))
}

impl Prefetch {
    /// Starts preparing `order` in chunks of `batch` images of `source` (`augment`: random
    /// crops and flips, each image's drawn from [`image_rng`] of a base drawn from `rng`).
    pub fn start(
        source: Arc<dyn ImageSource>,
        order: Vec<usize>,
        batch: usize,
        augment: bool,
        rng: StdRng,
        ahead: usize,
    ) -> Self {
        Self::start_rows(source, order, batch, augment, rng, ahead, owt_hybrid::RowSplit::whole())
    }

    /// [`Prefetch::start`] preparing only the rows of each batch that `split` names (a
    /// process's share in a job of several processes): the same images, crops and flips as
    /// those rows of the whole batch.
    pub fn start_rows(
        source: Arc<dyn ImageSource>,
        order: Vec<usize>,
        batch: usize,
        augment: bool,
        mut rng: StdRng,
        ahead: usize,
        split: owt_hybrid::RowSplit,
    ) -> Self {
        use rand::RngCore;
        let base = rng.next_u64();
        let (tx, rx) = sync_channel(ahead.max(1));
        let worker = std::thread::Builder::new()
            .name("owt-batches".into())
            .spawn(move || {
                let size = batch.max(1);
                for (k, chunk) in order.chunks(size).enumerate() {
                    let rows = split.rows(chunk.len());
                    let parts = rows
                        .clone()
                        .map(|j| source.batch(&chunk[j..j + 1], augment, &mut image_rng(base, k * size + j)))
                        .collect();
                    let batch = Batch::rows_of(parts, rows, chunk.len(), source.image_dims());
                    let item = match source.problem() {
                        Some(e) => Err(e),
                        None => Ok(batch),
                    };
                    let last = item.is_err();
                    if tx.send(item).is_err() || last {
                        return; // The consumer stopped early, or the source can go no further.
                    }
                }
            })
            .expect("spawning the batch preparation thread");
        Self { rx: Some(rx), worker: Some(worker) }
    }

    /// The next batch; `Ok(None)` at the end, an error if the source can no longer be used
    /// (see [`ImageSource::problem`]) or preparing it failed (the worker's panic message).
    pub fn next_batch(&mut self) -> Result<Option<Batch>, OwtError> {
        let Some(rx) = &self.rx else { return Ok(None) };
        match rx.recv() {
            Ok(batch) => batch.map(Some),
            Err(_) => {
                self.rx = None;
                match self.worker.take().map(JoinHandle::join) {
                    Some(Err(panic)) => {
                        let why = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "unknown error".into());
                        Err(OwtError::data(format!("preparing a batch failed: {why}")))
                    }
                    _ => Ok(None),
                }
            }
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        // Closing the channel stops the worker at its next send.
        self.rx = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// Whether `B` holds byte tensors on `device`, so pixels can travel as bytes (CUDA and Flex
/// do; WGSL has no 8-bit type, so wgpu gets floats normalised on the host).
pub fn bytes_on_device<B: Backend>(device: &B::Device) -> bool {
    B::supports_dtype(device, DType::U8)
}

/// Byte pixels, `[n, c, h, w]`, to the [-1, 1] floats the models take (the map of
/// [`crate::data::images::normalise`], done on the device).
pub fn normalise_on_device<B: Backend>(bytes: Tensor<B, 4, Int>) -> Tensor<B, 4> {
    bytes.float().div_scalar(PIXEL_SCALE).sub_scalar(1.0)
}

/// A host batch on the device, laid out as `layout`'s input: on a mesh each rank receives only
/// its own piece; pixels go as bytes where the backend has them and are normalised on the
/// device.
pub fn upload_batch<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    batch: &Batch,
) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    let (rows, total) = (batch.rows.clone(), batch.total_len());
    let images = if bytes_on_device::<B>(layout.device()) {
        normalise_on_device(layout.upload_labels_rows::<4>(batch.pixel_data(), Some(DType::U8), rows.clone(), total))
    } else {
        layout.upload_input_rows(batch.normalised_data(), rows.clone(), total)
    };
    (images, layout.upload_labels_rows(batch.label_data(), None, rows, total))
}

/// [`upload_batch`] for evaluation: the same tensors without gradient tracking.
pub fn upload_eval<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    batch: &Batch,
) -> (Tensor<B::InnerBackend, 4>, Tensor<B::InnerBackend, 1, Int>) {
    let (images, labels) = upload_batch(layout, batch);
    (images.inner(), labels.inner())
}

/// Turns a host batch into tensors on one device (pixels normalised on the device).
pub fn batch_tensors<B: Backend>(batch: &Batch, device: &B::Device) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    (upload_images::<B>(batch, device), upload_labels::<B>(batch, device))
}

/// A batch's images on one device, normalised.
pub fn upload_images<B: Backend>(batch: &Batch, device: &B::Device) -> Tensor<B, 4> {
    if bytes_on_device::<B>(device) {
        normalise_on_device(Tensor::<B, 4, Int>::from_data(batch.pixel_data(), (device, DType::U8)))
    } else {
        Tensor::from_data(batch.normalised_data(), device)
    }
}

/// A batch's labels on one device.
pub fn upload_labels<B: Backend>(batch: &Batch, device: &B::Device) -> Tensor<B, 1, Int> {
    Tensor::from_data(batch.label_data(), device)
}

/// Running sums over a split (loss weighted by images, correct predictions) kept on the
/// device: adding a step's results queues work but waits for nothing; [`Tally::read`] brings
/// both back in one transfer.
pub struct Tally<B: Backend> {
    loss: Option<Tensor<B, 1>>,
    correct: Option<Tensor<B, 1, Int>>,
    images: usize,
}

impl<B: Backend> Default for Tally<B> {
    fn default() -> Self {
        Self { loss: None, correct: None, images: 0 }
    }
}

/// A count summed on the device over batches (images in the top 5, say), read once at the end.
pub struct Count<B: Backend> {
    sum: Option<Tensor<B, 1, Int>>,
}

impl<B: Backend> Default for Count<B> {
    fn default() -> Self {
        Self { sum: None }
    }
}

impl<B: Backend> Count<B> {
    /// Adds a batch's count (shape `[1]`).
    pub fn add(&mut self, count: Tensor<B, 1, Int>) {
        self.sum = Some(match self.sum.take() {
            Some(sum) => sum + count,
            None => count,
        });
    }

    /// The sum (waits for the queued work), `None` if nothing was added.
    pub fn read(self) -> Option<usize> {
        self.sum.map(|t| t.into_data().iter::<i64>().next().unwrap_or(0).max(0) as usize)
    }
}

/// What a [`Tally`] held when read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TallyValues {
    /// Sum of per-image losses.
    pub loss_sum: f64,
    /// Images predicted correctly.
    pub correct: usize,
    /// Images counted.
    pub images: usize,
}

impl TallyValues {
    /// Mean loss per image (0 when empty).
    pub fn mean_loss(&self) -> f64 {
        self.loss_sum / self.images.max(1) as f64
    }

    /// Fraction correct (0 when empty).
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.images.max(1) as f64
    }
}

impl<B: Backend> Tally<B> {
    /// Adds `images` images whose mean loss is `mean_loss` (shape `[1]`) and of which `correct`
    /// (shape `[1]`) were right.
    pub fn add(&mut self, mean_loss: Tensor<B, 1>, correct: Tensor<B, 1, Int>, images: usize) {
        let loss = mean_loss.mul_scalar(images as f64);
        self.loss = Some(match self.loss.take() {
            Some(sum) => sum + loss,
            None => loss,
        });
        self.correct = Some(match self.correct.take() {
            Some(sum) => sum + correct,
            None => correct,
        });
        self.images += images;
    }

    /// Images added so far (known on the host without reading the device).
    pub fn images(&self) -> usize {
        self.images
    }

    /// Reads the sums back (one transfer for both; waits for the queued work).
    pub fn read(&self) -> TallyValues {
        let (Some(loss), Some(correct)) = (&self.loss, &self.correct) else {
            return TallyValues { loss_sum: 0.0, correct: 0, images: 0 };
        };
        let data = Transaction::default().register(loss.clone()).register(correct.clone()).execute();
        let loss_sum = data[0].iter::<f64>().next().unwrap_or(f64::NAN);
        let correct = data[1].iter::<i64>().next().unwrap_or(0).max(0) as usize;
        TallyValues { loss_sum, correct, images: self.images }
    }
}
