//! ImageNet-style image folders: one sub-directory per class, decoded on demand with
//! resize, random crop and horizontal flip.

use std::path::{Path, PathBuf};

use image::imageops::FilterType;
use rand::Rng;

use crate::data::images::{Batch, ImageSource};
use crate::error::OwtError;

/// The grey (0 after normalisation, nearly) fed in place of an image that cannot be decoded.
const BLANK: u8 = 128;

/// Image file extensions the folder loader reads.
const EXTENSIONS: [&str; 4] = ["png", "jpg", "jpeg", "JPEG"];

/// Images under `root/<class>/*.{png,jpg,jpeg}`. Classes are the sub-directory names in
/// sorted order, so two splits with the same class folders agree on class ids.
#[derive(Debug, Clone)]
pub struct ImageFolder {
    files: Vec<(PathBuf, usize)>,
    class_names: Vec<String>,
    channels: usize,
    /// Side images are resized to (shorter side) before cropping.
    resize: usize,
    /// Side of the square crop the model sees.
    crop: usize,
}

impl ImageFolder {
    /// Indexes `root`. Images are resized so the shorter side is `resize`, then cropped to
    /// `crop` x `crop` (random when augmenting, centred otherwise); `channels` is 1 (gray) or 3.
    pub fn open(root: &Path, channels: usize, resize: usize, crop: usize) -> Result<Self, OwtError> {
        if channels != 1 && channels != 3 {
            return Err(OwtError::data(format!("image folders give 1 or 3 channels, got {channels}")));
        }
        if crop == 0 || resize < crop {
            return Err(OwtError::data(format!(
                "resize side ({resize}) must be at least the crop side ({crop}) and positive"
            )));
        }
        let entries = std::fs::read_dir(root)
            .map_err(|e| OwtError::data(format!("cannot read image folder {}: {e}", root.display())))?;
        let mut class_dirs: Vec<PathBuf> =
            entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
        class_dirs.sort();
        let mut files = Vec::new();
        let mut class_names = Vec::new();
        for (class, dir) in class_dirs.iter().enumerate() {
            class_names.push(dir.file_name().unwrap_or_default().to_string_lossy().into_owned());
            let mut images: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| OwtError::data(format!("cannot read {}: {e}", dir.display())))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| EXTENSIONS.contains(&x.to_string_lossy().as_ref())))
                .collect();
            images.sort();
            files.extend(images.into_iter().map(|p| (p, class)));
        }
        if class_names.is_empty() {
            return Err(OwtError::data(format!(
                "{} has no class sub-directories: expected <dir>/<class>/<image>.png|jpg",
                root.display()
            )));
        }
        if files.is_empty() {
            return Err(OwtError::data(format!(
                "{}: the dataset is empty: {} class directories but no .png/.jpg images",
                root.display(),
                class_names.len()
            )));
        }
        Ok(Self { files, class_names, channels, resize, crop })
    }

    /// Class names, in class-id order.
    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    fn load(&self, index: usize, augment: bool, rng: &mut dyn rand::RngCore) -> Vec<u8> {
        let (path, _) = &self.files[index];
        let side = self.crop;
        let decoded = match image::open(path) {
            Ok(img) => img,
            Err(e) => {
                // A corrupt file must not end a long run: warn and feed a blank image.
                eprintln!("warning: cannot decode {}: {e}; using a blank image", path.display());
                return vec![BLANK; self.channels * side * side];
            }
        };
        let (w, h) = (decoded.width().max(1) as usize, decoded.height().max(1) as usize);
        let scale = self.resize as f64 / w.min(h) as f64;
        let (nw, nh) = (
            ((w as f64 * scale).round() as u32).max(side as u32),
            ((h as f64 * scale).round() as u32).max(side as u32),
        );
        let resized = decoded.resize_exact(nw, nh, FilterType::Triangle);
        let (x0, y0) = if augment {
            (rng.random_range(0..=(nw as usize - side)), rng.random_range(0..=(nh as usize - side)))
        } else {
            ((nw as usize - side) / 2, (nh as usize - side) / 2)
        };
        let flip = augment && rng.random_bool(0.5);
        let cropped = resized.crop_imm(x0 as u32, y0 as u32, side as u32, side as u32);
        let cropped = if flip { cropped.fliph() } else { cropped };
        if self.channels == 1 {
            return cropped.to_luma8().into_raw();
        }
        let mut out = vec![0; self.channels * side * side];
        for (i, px) in cropped.to_rgb8().pixels().enumerate() {
            for ch in 0..3 {
                out[ch * side * side + i] = px.0[ch];
            }
        }
        out
    }
}

impl ImageSource for ImageFolder {
    fn len(&self) -> usize {
        self.files.len()
    }

    fn image_dims(&self) -> [usize; 3] {
        [self.channels, self.crop, self.crop]
    }

    fn classes(&self) -> usize {
        self.class_names.len()
    }

    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> Batch {
        let mut images = Vec::with_capacity(indices.len() * self.channels * self.crop * self.crop);
        for &i in indices {
            images.extend(self.load(i, augment, rng));
        }
        let labels = indices.iter().map(|&i| self.files[i].1 as i64).collect();
        Batch { images, labels, dims: [indices.len(), self.channels, self.crop, self.crop] }
    }
}
