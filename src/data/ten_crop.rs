//! Ten-crop testing (Krizhevsky et al. 2012, section 4.1): every held-out image seen as its
//! ten patches ([`ImageFolder::ten_crops`]: the four corners and the centre of the resized
//! image, and their mirror images), in consecutive order, so a batch of 10 m images is m
//! images' patches; the network's probabilities are averaged over each image's ten.

use rand::rngs::StdRng;

use crate::data::images::{Batch, ImageSource};
use crate::data::stages::StageClock;
use crate::data::ImageFolder;
use crate::error::OwtError;

/// Patches per image.
pub const PATCHES: usize = 10;

/// An image folder's images as their ten patches each: patch `j` of image `i` is image
/// `10 i + j` of this source.
#[derive(Debug)]
pub struct TenCrops {
    folder: ImageFolder,
}

impl TenCrops {
    /// `folder`'s images as ten patches each.
    pub fn new(folder: ImageFolder) -> Self {
        Self { folder }
    }

    /// Images (not patches).
    pub fn images(&self) -> usize {
        self.folder.len()
    }
}

impl ImageSource for TenCrops {
    fn len(&self) -> usize {
        PATCHES * self.folder.len()
    }

    fn image_dims(&self) -> [usize; 3] {
        self.folder.image_dims()
    }

    fn classes(&self) -> usize {
        self.folder.classes()
    }

    fn class_names(&self) -> Vec<String> {
        self.folder.class_names().to_vec()
    }

    fn batch(&self, indices: &[usize], _augment: bool, _rng: &mut dyn rand::RngCore) -> Batch {
        let [c, h, w] = self.image_dims();
        let mut images = Vec::with_capacity(indices.len() * c * h * w);
        let mut labels = Vec::with_capacity(indices.len());
        // A batch takes an image's ten patches in a row, so each image is decoded once.
        let mut last: Option<(usize, Vec<Vec<u8>>, usize)> = None;
        for &index in indices {
            let (image, patch) = (index / PATCHES, index % PATCHES);
            if last.as_ref().is_none_or(|(i, _, _)| *i != image) {
                // When nothing decodes, `problem` refuses the split before this batch is used.
                let (patches, class) =
                    self.folder.ten_crops_or_next(image).unwrap_or_else(|| (vec![vec![0; c * h * w]; PATCHES], 0));
                last = Some((image, patches, class));
            }
            let (_, patches, class) = last.as_ref().expect("just filled");
            images.extend_from_slice(&patches[patch]);
            labels.push(*class as i64);
        }
        Batch::new(images, labels, [indices.len(), c, h, w])
    }

    /// The patches draw nothing at random: the span is one batch, each image decoded once.
    fn batch_each(&self, indices: &[usize], _augment: bool, _rng_for: &dyn Fn(usize) -> StdRng) -> Batch {
        self.batch(indices, false, &mut <StdRng as rand::SeedableRng>::seed_from_u64(0))
    }

    /// An image's ten patches stay together.
    fn grain(&self) -> usize {
        PATCHES
    }

    fn stages(&self) -> Option<&StageClock> {
        self.folder.stages()
    }

    fn problem(&self) -> Option<OwtError> {
        self.folder.problem()
    }
}
