//! The training input, built to keep a GPU fed: host batches are prepared ahead on worker
//! threads ([`Prefetch`], in `prefetch.rs`), pixels travel to the device as bytes and are
//! normalised there ([`upload_images`]), and running loss and accuracy stay on the device until
//! they are read ([`Tally`]), so a step does not wait for the host.

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, Transaction};
use owt_hybrid::StepLayout;
use owt_models::PixelNorm;

use crate::data::images::PIXEL_SCALE;
use crate::data::Batch;
pub use crate::train::prefetch::{image_rng, Prefetch, Preparation};

/// Whether `B` holds byte tensors on `device`, so pixels can travel as bytes (CUDA and Flex
/// do; WGSL has no 8-bit type, so wgpu gets floats normalised on the host).
pub fn bytes_on_device<B: Backend>(device: &B::Device) -> bool {
    B::supports_dtype(device, DType::U8)
}

/// Byte pixels, `[n, c, h, w]`, to the floats the model takes, as `norm` says (the map of
/// [`PixelNorm::apply`], done on the device in the same f32 operations: `x / 127.5 - 1`, or
/// `(x / 255 - mean) / std` with the mean and std as `[1, c, 1, 1]` tensors, torchvision's
/// own arithmetic).
pub fn normalise_on_device<B: Backend>(bytes: Tensor<B, 4, Int>, norm: &PixelNorm) -> Tensor<B, 4> {
    let x = bytes.float();
    match norm {
        PixelNorm::Symmetric => x.div_scalar(PIXEL_SCALE).sub_scalar(1.0),
        PixelNorm::MeanStd { mean, std } => {
            let (c, device) = (x.dims()[1], x.device());
            let per_channel = |v: &[f64; 3]| {
                let values: Vec<f32> = (0..c).map(|i| v[i.min(2)] as f32).collect();
                Tensor::<B, 4>::from_data(TensorData::new(values, [1, c, 1, 1]), &device)
            };
            x.div_scalar(255.0).sub(per_channel(mean)).div(per_channel(std))
        }
    }
}

/// A host batch on the device, laid out as `layout`'s input and normalised as `norm` says:
/// on a mesh each rank receives only its own piece; pixels go as bytes where the backend has
/// them and are normalised on the device.
pub fn upload_batch<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    batch: &Batch,
    norm: &PixelNorm,
) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    let (rows, total) = (batch.rows.clone(), batch.total_len());
    let images = if bytes_on_device::<B>(layout.device()) {
        let bytes = layout.upload_labels_rows::<4>(batch.pixel_data(), Some(DType::U8), rows.clone(), total);
        normalise_on_device(bytes, norm)
    } else {
        layout.upload_input_rows(batch.normalised_data(norm), rows.clone(), total)
    };
    (images, layout.upload_labels_rows(batch.label_data(), None, rows, total))
}

/// A step's images and labels on the device.
pub type Uploaded<B> = (Tensor<B, 4>, Tensor<B, 1, Int>);

/// Batches uploaded one ahead of the step that uses them: [`UploadAhead::take`] hands over the
/// batch uploaded earlier (or uploads one now, the first time), and [`UploadAhead::refill`],
/// called once the step's work is queued, uploads the next while the device runs that work. On
/// CUDA an upload is an asynchronous copy from pinned memory (the vendored cubecl-runtime
/// stages it there), so the host's part of it (reading the batch from the loader, copying it
/// into pinned memory) overlaps the step before instead of leaving the GPU idle at the start of
/// each step; a step then waits for input only when the loader is slower than the device
/// (which [`Prefetch::waited`] measures). The batches, their order and their values are those
/// of uploading each when its step starts.
pub struct UploadAhead<'a, B: AutodiffBackend, L: StepLayout<B>> {
    layout: &'a L,
    norm: &'a PixelNorm,
    next: Option<Uploaded<B>>,
}

impl<'a, B: AutodiffBackend, L: StepLayout<B>> UploadAhead<'a, B, L> {
    /// Nothing uploaded yet; batches go to `layout`'s device normalised as `norm` says.
    pub fn new(layout: &'a L, norm: &'a PixelNorm) -> Self {
        Self { layout, norm, next: None }
    }

    /// The next batch on the device: the one [`UploadAhead::refill`] uploaded, else the next
    /// of `batches` uploaded now (`None` at the end of `batches`).
    pub fn take(&mut self, batches: &mut Prefetch) -> Result<Option<Uploaded<B>>, crate::error::OwtError> {
        self.refill(batches)?;
        Ok(self.next.take())
    }

    /// Uploads the next of `batches` (if any) for the next [`UploadAhead::take`].
    pub fn refill(&mut self, batches: &mut Prefetch) -> Result<(), crate::error::OwtError> {
        if self.next.is_none() {
            self.next = batches.next_batch()?.map(|batch| upload_batch(self.layout, &batch, self.norm));
        }
        Ok(())
    }
}

/// [`upload_batch`] for evaluation: the same tensors without gradient tracking.
pub fn upload_eval<B: AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    batch: &Batch,
    norm: &PixelNorm,
) -> (Tensor<B::InnerBackend, 4>, Tensor<B::InnerBackend, 1, Int>) {
    let (images, labels) = upload_batch(layout, batch, norm);
    (images.inner(), labels.inner())
}

/// Turns a host batch into tensors on one device (pixels normalised on the device as `norm`
/// says).
pub fn batch_tensors<B: Backend>(
    batch: &Batch,
    device: &B::Device,
    norm: &PixelNorm,
) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    (upload_images::<B>(batch, device, norm), upload_labels::<B>(batch, device))
}

/// A batch's images on one device, normalised as `norm` says.
pub fn upload_images<B: Backend>(batch: &Batch, device: &B::Device, norm: &PixelNorm) -> Tensor<B, 4> {
    if bytes_on_device::<B>(device) {
        normalise_on_device(Tensor::<B, 4, Int>::from_data(batch.pixel_data(), (device, DType::U8)), norm)
    } else {
        Tensor::from_data(batch.normalised_data(norm), device)
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
