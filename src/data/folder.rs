//! ImageNet-style image folders: one sub-directory per class, decoded on demand with
//! resize, random crop and horizontal flip.

use std::path::{Path, PathBuf};

use image::imageops::FilterType;
use rand::Rng;

use crate::data::images::{Batch, ImageSource};
use crate::error::OwtError;

/// The grey (0 after normalisation, nearly) fed in place of an image that cannot be decoded.
const BLANK: u8 = 128;

/// Image file extensions the folder loader reads, in any case (`.PNG`, `.Jpg`).
const EXTENSIONS: [&str; 3] = ["png", "jpg", "jpeg"];

/// Whether `path` is a regular file (links followed) with an image extension: FIFOs, devices
/// and directories named like images are never opened.
fn is_image_file(path: &Path) -> bool {
    let image_name =
        path.extension().is_some_and(|x| EXTENSIONS.contains(&x.to_string_lossy().to_ascii_lowercase().as_str()));
    image_name && path.metadata().is_ok_and(|m| m.is_file())
}

/// The error for a class folder without images: a class the network would be asked to learn
/// (or be scored on) with no example of it.
fn empty_class(root: &Path, dir: &Path) -> OwtError {
    OwtError::data(format!(
        "{}: class folder {} has no .png/.jpg/.jpeg images; every class needs images (add some or remove the folder)",
        root.display(),
        dir.file_name().unwrap_or_default().to_string_lossy()
    ))
}

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
        // The first class folder without images (refused unless no class has any: then the
        // whole dataset is empty, said as such).
        let mut empty: Option<PathBuf> = None;
        for (class, dir) in class_dirs.iter().enumerate() {
            class_names.push(dir.file_name().unwrap_or_default().to_string_lossy().into_owned());
            let mut images: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| OwtError::data(format!("cannot read {}: {e}", dir.display())))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| is_image_file(p))
                .collect();
            images.sort();
            if images.is_empty() {
                empty.get_or_insert_with(|| dir.clone());
            }
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
                "{}: the dataset is empty: {} class directories but no .png/.jpg/.jpeg images",
                root.display(),
                class_names.len()
            )));
        }
        if let Some(dir) = empty {
            return Err(empty_class(root, &dir));
        }
        let files = drop_undecodable(root, files)?;
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

/// Largest share of a split's files that may fail to decode; above it the split is refused.
pub const MAX_UNDECODABLE: f64 = 0.01;

/// Why `path` cannot be decoded, if it cannot (its header is read, not its pixels).
fn undecodable(path: &Path) -> Option<String> {
    let reader = image::ImageReader::open(path).ok()?.with_guessed_format();
    match reader {
        Err(e) => Some(e.to_string()),
        Ok(r) => r.into_dimensions().err().map(|e| e.to_string()),
    }
}

/// `files` without those that cannot be decoded: refused when more than [`MAX_UNDECODABLE`]
/// of them fail (naming the count and the first few), else one warning line.
fn drop_undecodable(root: &Path, files: Vec<(PathBuf, usize)>) -> Result<Vec<(PathBuf, usize)>, OwtError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len().max(1));
    let chunk = files.len().div_ceil(threads);
    let verdicts: Vec<Option<String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(|(p, _)| undecodable(p)).collect::<Vec<_>>()))
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("decoding a header does not panic")).collect()
    });
    let bad: Vec<(&Path, &str)> =
        files.iter().zip(&verdicts).filter_map(|((p, _), v)| v.as_deref().map(|why| (p.as_path(), why))).collect();
    if bad.is_empty() {
        return Ok(files);
    }
    let first: Vec<String> = bad
        .iter()
        .take(3)
        .map(|(p, why)| format!("{} ({why})", p.file_name().unwrap_or_default().to_string_lossy()))
        .collect();
    let summary = format!(
        "{} of {} images in {} cannot be decoded, e.g. {}",
        bad.len(),
        files.len(),
        root.display(),
        first.join(", ")
    );
    if bad.len() as f64 > MAX_UNDECODABLE * files.len() as f64 {
        return Err(OwtError::data(format!(
            "{summary}: more than {}% of the split; fix or remove them",
            MAX_UNDECODABLE * 100.0
        )));
    }
    eprintln!("warning: {summary}; they are left out");
    Ok(files.into_iter().zip(verdicts).filter(|(_, v)| v.is_none()).map(|(f, _)| f).collect())
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
