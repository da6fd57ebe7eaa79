//! Image sets: the common interface of every data source, and the in-memory implementation.

use crate::data::stages::StageClock;
use crate::error::OwtError;
use rand::rngs::StdRng;
use rand::Rng;

use burn::tensor::TensorData;
use owt_models::PixelNorm;

/// One batch as flat host data: `images` is `[n, c, h, w]` row-major bytes, as stored (after
/// any crop or flip). They travel to the device as bytes, a quarter of the floats' size, and
/// are normalised there ([`Batch::normalised_data`] is the same map on the host). In a job of several
/// processes a process prepares only the rows its ranks take: `rows` of the `total` images
/// of the batch (all of them otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// Pixels, `n * c * h * w`.
    pub images: Vec<u8>,
    /// Class ids, `n`.
    pub labels: Vec<i64>,
    /// `[n, c, h, w]`.
    pub dims: [usize; 4],
    /// Which rows of the whole batch these are.
    pub rows: std::ops::Range<usize>,
    /// Images in the whole batch.
    pub total: usize,
}

impl Batch {
    /// A whole batch of `dims[0]` images.
    pub fn new(images: Vec<u8>, labels: Vec<i64>, dims: [usize; 4]) -> Self {
        Self { images, labels, dims, rows: 0..dims[0], total: dims[0] }
    }

    /// Rows `rows` of a batch of `total` images, made of the batches `parts` (in row
    /// order).
    pub fn rows_of(parts: Vec<Batch>, rows: std::ops::Range<usize>, total: usize, dims: [usize; 3]) -> Self {
        let mut images = Vec::with_capacity(rows.len() * dims.iter().product::<usize>());
        let mut labels = Vec::with_capacity(rows.len());
        for p in parts {
            images.extend(p.images);
            labels.extend(p.labels);
        }
        let n = labels.len();
        Self { images, labels, dims: [n, dims[0], dims[1], dims[2]], rows, total }
    }

    /// Number of images held here.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Number of images in the whole batch (every process's rows).
    pub fn total_len(&self) -> usize {
        self.total
    }

    /// Whether the batch holds no image.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The pixels as `[n, c, h, w]` bytes (`DType::U8`).
    pub fn pixel_data(&self) -> TensorData {
        TensorData::new(self.images.clone(), self.dims)
    }

    /// The pixels normalised on the host as `norm` says, as `[n, c, h, w]` f32 (for backends
    /// without byte tensors).
    pub fn normalised_data(&self, norm: &PixelNorm) -> TensorData {
        let plane = self.dims[2] * self.dims[3];
        let channels = self.dims[1].max(1);
        let values: Vec<f32> =
            self.images.iter().enumerate().map(|(i, &p)| norm.apply(p, (i / plane.max(1)) % channels)).collect();
        TensorData::new(values, self.dims)
    }

    /// The labels as `[n]` i64.
    pub fn label_data(&self) -> TensorData {
        TensorData::new(self.labels.clone(), [self.labels.len()])
    }
}

/// A labelled image source: the training loop's only view of data.
pub trait ImageSource: Send + Sync {
    /// Number of images.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `[channels, height, width]` of every image this source yields.
    fn image_dims(&self) -> [usize; 3];
    /// Number of classes.
    fn classes(&self) -> usize;
    /// The classes' names in class-id order: a folder's class folders; the ids in words
    /// ("0", "1", ...) for data whose classes have no names (IDX files, synthetic images).
    fn class_names(&self) -> Vec<String> {
        (0..self.classes()).map(|c| c.to_string()).collect()
    }
    /// The images at `indices`; `augment` turns on random crops / flips where the source has
    /// them (training), off gives the deterministic view (evaluation).
    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> Batch;
    /// The images at `indices` as one batch, image `j` drawing its crops and flips from
    /// `rng_for(j)` alone (its own generator): what the batch preparation's workers call on
    /// their spans. Sources that decode one file for several consecutive indices (ten-crop
    /// testing) override it to decode each file once.
    fn batch_each(&self, indices: &[usize], augment: bool, rng_for: &dyn Fn(usize) -> StdRng) -> Batch {
        let parts = indices.iter().enumerate().map(|(j, &i)| self.batch(&[i], augment, &mut rng_for(j))).collect();
        Batch::rows_of(parts, 0..indices.len(), indices.len(), self.image_dims())
    }
    /// How many consecutive indices belong together (one file's ten patches): the batch
    /// preparation never splits them between workers.
    fn grain(&self) -> usize {
        1
    }
    /// Where this source's preparation time goes, stage by stage, if it keeps count.
    fn stages(&self) -> Option<&StageClock> {
        None
    }
    /// Why the batches of this source can no longer be used, if they cannot: a source that
    /// finds damage while reading (an image folder whose undecodable files pass the allowed
    /// share) says so here, and the batch it just made is not used.
    fn problem(&self) -> Option<OwtError> {
        None
    }
}

/// What a byte pixel is divided by, before 1 is subtracted, under owt's own norm
/// ([`PixelNorm::Symmetric`]): maps 0..=255 to [-1, 1].
pub const PIXEL_SCALE: f64 = 127.5;

/// Images held in memory as bytes (MNIST, Fashion-MNIST, synthetic).
#[derive(Debug, Clone)]
pub struct InMemoryImages {
    dims: [usize; 3],
    classes: usize,
    pixels: Vec<u8>,
    labels: Vec<u8>,
    flip: bool,
}

impl InMemoryImages {
    /// Wraps `pixels` (`labels.len()` images of `dims`) and their labels (`< classes`).
    /// `flip` enables random horizontal flips when augmenting.
    pub fn new(dims: [usize; 3], classes: usize, pixels: Vec<u8>, labels: Vec<u8>, flip: bool) -> Self {
        assert_eq!(pixels.len(), labels.len() * dims.iter().product::<usize>(), "pixel count does not match labels");
        Self { dims, classes, pixels, labels, flip }
    }

    /// The first `n` images only (all of them if `n` is larger).
    pub fn truncated(mut self, n: usize) -> Self {
        let n = n.min(self.labels.len());
        self.labels.truncate(n);
        self.pixels.truncate(n * self.dims.iter().product::<usize>());
        self
    }

    /// Labels, for class-balance checks.
    pub fn labels(&self) -> &[u8] {
        &self.labels
    }
}

impl ImageSource for InMemoryImages {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn image_dims(&self) -> [usize; 3] {
        self.dims
    }

    fn classes(&self) -> usize {
        self.classes
    }

    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> Batch {
        let [c, h, w] = self.dims;
        let size = c * h * w;
        let mut images = Vec::with_capacity(indices.len() * size);
        for &i in indices {
            let src = &self.pixels[i * size..(i + 1) * size];
            let flip = augment && self.flip && rng.random_bool(0.5);
            for row in src.chunks_exact(w) {
                if flip {
                    images.extend(row.iter().rev());
                } else {
                    images.extend_from_slice(row);
                }
            }
        }
        let labels = indices.iter().map(|&i| self.labels[i] as i64).collect();
        Batch::new(images, labels, [indices.len(), c, h, w])
    }
}
