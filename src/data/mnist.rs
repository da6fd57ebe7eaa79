//! MNIST-format datasets (Fashion-MNIST, MNIST): four IDX files in one directory.

use std::path::{Path, PathBuf};

use crate::data::idx::read_idx;
use crate::data::images::InMemoryImages;
use crate::error::OwtError;

/// Where Debian's `dataset-fashion-mnist` package puts the files.
pub const FASHION_MNIST_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// The four files of an MNIST-format dataset, for a split.
fn split_files(dir: &Path, train: bool) -> (PathBuf, PathBuf) {
    let prefix = if train { "train" } else { "t10k" };
    let find = |stem: String| -> PathBuf {
        let gz = dir.join(format!("{stem}.gz"));
        if gz.exists() {
            gz
        } else {
            dir.join(stem)
        }
    };
    (find(format!("{prefix}-images-idx3-ubyte")), find(format!("{prefix}-labels-idx1-ubyte")))
}

/// Loads one split (`train`: 60k, else the 10k test split) of an MNIST-format dataset from
/// `dir`, each image padded with background (0) to `side` x `side` where `side` is larger
/// than its own by at most [`MAX_PAD`] (28 to 32, as LeNet-5 and CIFAR-sized networks such as
/// VGG at 32 take MNIST); another `side` leaves the images as they are (the network then
/// refuses them, naming both shapes: 227 is another network's input, not a margin). `name` and `install_hint` go into the message when the files are missing.
pub fn load_mnist_split(
    dir: &Path,
    train: bool,
    name: &str,
    install_hint: &str,
    side: usize,
) -> Result<InMemoryImages, OwtError> {
    let (images_path, labels_path) = split_files(dir, train);
    for path in [&images_path, &labels_path] {
        if !path.exists() {
            return Err(OwtError::data(format!(
                "{name} not found: {} (or .gz) is missing. {install_hint}",
                path.display()
            )));
        }
    }
    let images = read_idx(&images_path)?;
    let labels = read_idx(&labels_path)?;
    if images.dims.len() != 3 {
        return Err(OwtError::data(format!(
            "{}: expected 3 dimensions [count, rows, cols], got {:?}",
            images_path.display(),
            images.dims
        )));
    }
    if labels.dims.len() != 1 {
        return Err(OwtError::data(format!(
            "{}: expected 1 dimension [count], got {:?}",
            labels_path.display(),
            labels.dims
        )));
    }
    if images.dims[0] != labels.dims[0] {
        return Err(OwtError::data(format!(
            "label/image count mismatch: {} has {} images but {} has {} labels",
            images_path.display(),
            images.dims[0],
            labels_path.display(),
            labels.dims[0]
        )));
    }
    if images.dims[0] == 0 {
        return Err(OwtError::data(format!("{}: the dataset is empty (0 images)", images_path.display())));
    }
    if let Some(bad) = labels.data.iter().find(|&&l| l >= 10) {
        return Err(OwtError::data(format!("{}: labels must be 0..=9, found {bad}", labels_path.display())));
    }
    let [rows, cols] = [images.dims[1], images.dims[2]];
    if side >= rows.max(cols) && side > rows.min(cols) && side <= rows.min(cols) + MAX_PAD {
        let pixels = padded(&images.data, [rows, cols], side);
        return Ok(InMemoryImages::new([1, side, side], 10, pixels, labels.data, false));
    }
    Ok(InMemoryImages::new([1, rows, cols], 10, images.data, labels.data, false))
}

/// The most an MNIST-format image's side grows by padding (28 to 36 at most): a margin, not
/// another network's input.
pub const MAX_PAD: usize = 8;

/// Images of `rows` x `cols` (one after another in `pixels`) centred on `side` x `side` zeros
/// (an odd margin puts the extra row and column after the image).
fn padded(pixels: &[u8], [rows, cols]: [usize; 2], side: usize) -> Vec<u8> {
    let (top, left) = ((side - rows) / 2, (side - cols) / 2);
    let count = pixels.len() / (rows * cols).max(1);
    let mut out = vec![0u8; count * side * side];
    for (image, padded) in pixels.chunks_exact(rows * cols).zip(out.chunks_exact_mut(side * side)) {
        for (r, row) in image.chunks_exact(cols).enumerate() {
            let at = (top + r) * side + left;
            padded[at..at + cols].copy_from_slice(row);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn padding_centres_the_image_on_background() {
        let image: Vec<u8> = (1..=6).collect(); // 2 x 3
        let two = [image.clone(), image.iter().map(|p| p * 10).collect()].concat();
        let out = super::padded(&two, [2, 3], 5);
        assert_eq!(out.len(), 2 * 25);
        #[rustfmt::skip]
        let first = [
            0, 0, 0, 0, 0,
            0, 1, 2, 3, 0,
            0, 4, 5, 6, 0,
            0, 0, 0, 0, 0,
            0, 0, 0, 0, 0,
        ];
        assert_eq!(out[..25], first);
        assert_eq!(out[25 + 6..25 + 9], [10, 20, 30]);
        assert_eq!(out.iter().map(|&p| p as u32).sum::<u32>(), 21 * 11);
    }
}
