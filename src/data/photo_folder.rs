//! Image folders of JPEG photographs for tests, fixtures and loader benchmarks, made here
//! since no colour image dataset is packaged: each class is one source photograph, each image
//! a crop of it at a random place and scale, resized to a random size, with a little sensor
//! noise, encoded by the `image` crate (the same bytes for the same seed and sources).

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::OwtError;
use owt_pixels::{decode, resize, Filter, Rgb};

/// What folder to make.
#[derive(Debug, Clone)]
pub struct PhotoFolder {
    /// Images per class in `train/` and in `val/`.
    pub per_class: [usize; 2],
    /// The shorter side of each image, uniform in this range (inclusive).
    pub shorter: [usize; 2],
    /// The longer side as a multiple of the shorter (4 / 3: ImageNet's typical 500 x 375).
    pub aspect: f64,
    /// JPEG quality, 1 to 100.
    pub quality: u8,
    /// Standard deviation of the Gaussian noise added to every value (0 to 255 scale).
    pub noise: f64,
    /// Seed of the crops, sizes, orientations and noise.
    pub seed: u64,
}

/// Writes `dir/train/<class>/NNNNN.jpg` and `dir/val/<class>/NNNNN.jpg`, the class named
/// after each of `photos` (their file stems), as `spec` says. Returns the bytes written.
pub fn write_photo_folder(photos: &[&Path], dir: &Path, spec: &PhotoFolder) -> Result<u64, OwtError> {
    let sources = photos
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).map_err(|e| OwtError::data(format!("cannot read {}: {e}", p.display())))?;
            let rgb = decode(&bytes, 1).map_err(|e| OwtError::data(format!("{}: {e}", p.display())))?.image;
            let name = p.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            Ok((name, rgb))
        })
        .collect::<Result<Vec<_>, OwtError>>()?;
    let mut written = 0;
    for (split, count) in ["train", "val"].into_iter().zip(spec.per_class) {
        for (class, (name, photo)) in sources.iter().enumerate() {
            let folder = dir.join(split).join(name);
            std::fs::create_dir_all(&folder)
                .map_err(|e| OwtError::io(format!("cannot create {}: {e}", folder.display())))?;
            for i in 0..count {
                let seed = spec.seed ^ ((split == "val") as u64) << 63 ^ (class as u64) << 40 ^ i as u64;
                let jpeg = photo_crop(photo, spec, &mut StdRng::seed_from_u64(seed))?;
                let path = folder.join(format!("{i:05}.jpg"));
                std::fs::write(&path, &jpeg)
                    .map_err(|e| OwtError::io(format!("cannot write {}: {e}", path.display())))?;
                written += jpeg.len() as u64;
            }
        }
    }
    Ok(written)
}

/// One image: a crop of `photo` resized to a random size and orientation, with noise, as JPEG.
fn photo_crop(photo: &Rgb, spec: &PhotoFolder, rng: &mut StdRng) -> Result<Vec<u8>, OwtError> {
    let shorter = rng.random_range(spec.shorter[0]..=spec.shorter[1].max(spec.shorter[0]));
    let longer = (shorter as f64 * spec.aspect).round() as usize;
    let (w, h) = if rng.random_bool(0.75) { (longer, shorter) } else { (shorter, longer) };
    // A crop of the same orientation, a third to all of what fits.
    let fit = (photo.width as f64 / w as f64).min(photo.height as f64 / h as f64);
    let scale = fit * rng.random_range(1.0 / 3.0..=1.0);
    let (cw, ch) = (((w as f64 * scale) as usize).max(1), ((h as f64 * scale) as usize).max(1));
    let (x0, y0) = (rng.random_range(0..=photo.width - cw), rng.random_range(0..=photo.height - ch));
    let mut pixels = Vec::with_capacity(cw * ch * 3);
    for y in y0..y0 + ch {
        pixels.extend_from_slice(&photo.pixels[(y * photo.width + x0) * 3..(y * photo.width + x0 + cw) * 3]);
    }
    let mut image = resize(&Rgb { width: cw, height: ch, pixels }, w, h, Filter::Bilinear);
    if spec.noise > 0.0 {
        for v in image.pixels.iter_mut() {
            *v = (*v as f64 + spec.noise * crate::data::lighting::gaussian(rng)).round().clamp(0.0, 255.0) as u8;
        }
    }
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, spec.quality)
        .encode(&image.pixels, w as u32, h as u32, image::ExtendedColorType::Rgb8)
        .map_err(|e| OwtError::io(format!("encoding a JPEG: {e}")))?;
    Ok(out)
}
