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
/// `dir`. `name` and `install_hint` go into the message when the files are missing.
pub fn load_mnist_split(dir: &Path, train: bool, name: &str, install_hint: &str) -> Result<InMemoryImages, OwtError> {
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
    let dims = [1, images.dims[1], images.dims[2]];
    Ok(InMemoryImages::new(dims, 10, images.data, labels.data, false))
}
