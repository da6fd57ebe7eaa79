//! Ten-crop testing (Krizhevsky et al. 2012, section 4.1): every held-out image seen as its
//! ten patches ([`ImageFolder::ten_crops`]: the four corners and the centre of the resized
//! image, and their mirror images), in consecutive order, so a batch of 10 m images is m
//! images' patches; the network's probabilities are averaged over each image's ten.

use std::sync::Mutex;

use crate::data::images::{Batch, ImageSource};
use crate::data::ImageFolder;
use crate::error::OwtError;

/// Patches per image.
pub const PATCHES: usize = 10;

/// An image folder's images as their ten patches each: patch `j` of image `i` is image
/// `10 i + j` of this source.
#[derive(Debug)]
pub struct TenCrops {
    folder: ImageFolder,
    /// The last image's patches and class: a batch takes an image's ten in a row, so each is
    /// decoded once.
    last: Mutex<Option<(usize, Vec<Vec<u8>>, usize)>>,
}

impl TenCrops {
    /// `folder`'s images as ten patches each.
    pub fn new(folder: ImageFolder) -> Self {
        Self { folder, last: Mutex::new(None) }
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

    fn batch(&self, indices: &[usize], _augment: bool, _rng: &mut dyn rand::RngCore) -> Batch {
        let [c, h, w] = self.image_dims();
        let mut images = Vec::with_capacity(indices.len() * c * h * w);
        let mut labels = Vec::with_capacity(indices.len());
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        for &index in indices {
            let (image, patch) = (index / PATCHES, index % PATCHES);
            if last.as_ref().is_none_or(|(i, _, _)| *i != image) {
                // When nothing decodes, `problem` refuses the split before this batch is used.
                let (patches, class) =
                    self.folder.ten_crops_or_next(image).unwrap_or_else(|| (vec![vec![0; c * h * w]; PATCHES], 0));
                *last = Some((image, patches, class));
            }
            let (_, patches, class) = last.as_ref().expect("just filled");
            images.extend_from_slice(&patches[patch]);
            labels.push(*class as i64);
        }
        Batch::new(images, labels, [indices.len(), c, h, w])
    }

    fn problem(&self) -> Option<OwtError> {
        self.folder.problem()
    }
}
