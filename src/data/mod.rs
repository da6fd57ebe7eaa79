//! Data sources: IDX (MNIST, Fashion-MNIST), image folders, synthetic images.

pub mod folder;
pub mod idx;
pub mod images;
pub mod lighting;
pub mod mnist;
pub mod synthetic;
pub mod ten_crop;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use folder::{class_names_in, ImageFolder};
pub use idx::{encode_idx, parse_idx, read_idx, IdxArray};
pub use images::{Batch, ImageSource, InMemoryImages};
pub use lighting::{Lighting, LitImages};
pub use mnist::{load_mnist_split, FASHION_MNIST_DIR};
pub use synthetic::synthetic_images;
pub use ten_crop::TenCrops;

use crate::error::OwtError;

/// Which dataset (`--dataset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetKind {
    /// Fashion-MNIST: Debian's `dataset-fashion-mnist`, or `--data DIR`.
    FashionMnist,
    /// MNIST in the same IDX layout, from `--data DIR`.
    Mnist,
    /// `--data DIR` with `DIR/train/<class>/*` and `DIR/val/<class>/*` (or `test`).
    Folder,
    /// Generated images of the model's geometry.
    Synthetic,
}

/// A train and a test split.
#[derive(Clone)]
pub struct Splits {
    /// Training images.
    pub train: Arc<dyn ImageSource>,
    /// Held-out images.
    pub test: Arc<dyn ImageSource>,
}

/// How to open a dataset: what the CLI's data flags say.
#[derive(Debug, Clone)]
pub struct DataRequest {
    /// Which dataset.
    pub kind: DatasetKind,
    /// `--data DIR`, if given.
    pub dir: Option<PathBuf>,
    /// Use only this many training images (all if `None`).
    pub limit: Option<usize>,
    /// Model input `[channels, height, width]`, for sources that can produce any geometry.
    pub model_input: [usize; 3],
    /// Seed for synthetic data.
    pub seed: u64,
}

/// Default number of synthetic training images (test split: a quarter of it).
pub const SYNTHETIC_TRAIN: usize = 2048;

/// Opens only the dataset's held-out split (what `owt eval` needs): a folder dataset needs no
/// `train/` directory for it.
pub fn open_test_split(req: &DataRequest) -> Result<Arc<dyn ImageSource>, OwtError> {
    let test: Arc<dyn ImageSource> = match req.kind {
        DatasetKind::FashionMnist => {
            let dir = req.dir.clone().unwrap_or_else(|| PathBuf::from(FASHION_MNIST_DIR));
            let hint = "Install it with `apt-get install dataset-fashion-mnist` (Debian) or pass --data DIR with the four IDX files.";
            Arc::new(load_mnist_split(&dir, false, "Fashion-MNIST", hint)?)
        }
        DatasetKind::Mnist => {
            let dir = req.dir.clone().ok_or_else(|| {
                OwtError::data(
                    "MNIST needs --data DIR with t10k-images-idx3-ubyte(.gz) and t10k-labels-idx1-ubyte(.gz)",
                )
            })?;
            Arc::new(load_mnist_split(&dir, false, "MNIST", "Pass --data DIR with the IDX files.")?)
        }
        DatasetKind::Folder => Arc::new(held_out_split(req)?),
        DatasetKind::Synthetic => open_splits(req)?.test,
    };
    if test.is_empty() {
        return Err(OwtError::data("the test split is empty (0 images)"));
    }
    Ok(test)
}

/// The held-out split of a folder dataset as ten patches per image (`owt eval --ten-crop`);
/// refused for datasets whose images are already the network's size.
pub fn open_ten_crop_split(req: &DataRequest) -> Result<TenCrops, OwtError> {
    if req.kind != DatasetKind::Folder {
        return Err(OwtError::input(format!(
            "--ten-crop cuts ten patches from images larger than the network's input: it needs --dataset folder (got {:?}, whose images are the input's size)",
            req.kind
        )));
    }
    let test = TenCrops::new(held_out_split(req)?);
    if test.is_empty() {
        return Err(OwtError::data("the test split is empty (0 images)"));
    }
    Ok(test)
}

/// Opens the dataset's train and test splits, with errors that say how to get the data.
pub fn open_splits(req: &DataRequest) -> Result<Splits, OwtError> {
    let splits = match req.kind {
        DatasetKind::FashionMnist => {
            let dir = req.dir.clone().unwrap_or_else(|| PathBuf::from(FASHION_MNIST_DIR));
            let hint = "Install it with `apt-get install dataset-fashion-mnist` (Debian) or pass --data DIR with the four IDX files.";
            mnist_splits(&dir, "Fashion-MNIST", hint, req.limit)?
        }
        DatasetKind::Mnist => {
            let dir = req.dir.clone().ok_or_else(|| {
                OwtError::data("MNIST needs --data DIR: a directory with train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz), t10k-images-idx3-ubyte(.gz), t10k-labels-idx1-ubyte(.gz)")
            })?;
            mnist_splits(&dir, "MNIST", "Pass --data DIR with the four IDX files.", req.limit)?
        }
        DatasetKind::Folder => {
            let dir = req.dir.clone().ok_or_else(|| {
                OwtError::data(
                    "--dataset folder needs --data DIR with DIR/train/<class>/*.jpg and DIR/val/<class>/*.jpg",
                )
            })?;
            folder_splits(&dir, req.model_input)?
        }
        DatasetKind::Synthetic => {
            let n = req.limit.unwrap_or(SYNTHETIC_TRAIN);
            Splits {
                train: Arc::new(synthetic_images(req.model_input, 10, n, req.seed)),
                test: Arc::new(synthetic_images(req.model_input, 10, (n / 4).max(1), req.seed ^ 0x7e57)),
            }
        }
    };
    if splits.train.is_empty() {
        return Err(OwtError::data("the training split is empty (0 images)"));
    }
    if splits.test.is_empty() {
        return Err(OwtError::data("the test split is empty (0 images)"));
    }
    Ok(splits)
}

fn mnist_splits(dir: &Path, name: &str, hint: &str, limit: Option<usize>) -> Result<Splits, OwtError> {
    let mut train = load_mnist_split(dir, true, name, hint)?;
    if let Some(n) = limit {
        train = train.truncated(n);
    }
    let test = load_mnist_split(dir, false, name, hint)?;
    Ok(Splits { train: Arc::new(train), test: Arc::new(test) })
}

/// The shorter side images are resized to before cropping to `side`: 8/7 of the crop (256
/// for 224), as ImageNet training does.
fn resize_side(side: usize) -> usize {
    side * 8 / 7
}

/// The held-out directory of a folder dataset: `DIR/val/`, else `DIR/test/`.
fn held_out_dir(dir: &Path) -> Result<PathBuf, OwtError> {
    ["val", "test"].iter().map(|s| dir.join(s)).find(|p| p.is_dir()).ok_or_else(|| {
        OwtError::data(format!("{} has no val/ or test/ directory for the held-out split", dir.display()))
    })
}

/// A folder dataset's held-out split (`--data DIR`): where the training split is there too,
/// its classes must be the training split's, as training requires (the same folder names mean
/// the same class ids).
fn held_out_split(req: &DataRequest) -> Result<ImageFolder, OwtError> {
    let dir = req
        .dir
        .clone()
        .ok_or_else(|| OwtError::data("--dataset folder needs --data DIR with DIR/val/<class>/*.jpg (or DIR/test/)"))?;
    let test = held_out_folder(&dir, req.model_input)?;
    let train = dir.join("train");
    if train.is_dir() {
        same_classes(&class_names_in(&train)?, &held_out_dir(&dir)?, test.class_names())?;
    }
    Ok(test)
}

/// The held-out split of a folder dataset.
fn held_out_folder(dir: &Path, input: [usize; 3]) -> Result<ImageFolder, OwtError> {
    let [channels, side, _] = input;
    ImageFolder::open(&held_out_dir(dir)?, channels, resize_side(side), side)
}

fn folder_splits(dir: &Path, input: [usize; 3]) -> Result<Splits, OwtError> {
    let [channels, side, _] = input;
    let train = ImageFolder::open(&dir.join("train"), channels, resize_side(side), side)?;
    let test = held_out_folder(dir, input)?;
    same_classes(train.class_names(), &held_out_dir(dir)?, test.class_names())?;
    Ok(Splits { train: Arc::new(train), test: Arc::new(test) })
}

/// Refuses a held-out split (in `test_dir`) whose class folders are not the training split's.
fn same_classes(train: &[String], test_dir: &Path, test: &[String]) -> Result<(), OwtError> {
    if test == train {
        return Ok(());
    }
    Err(OwtError::data(format!("class folders differ: train has {train:?}, {} has {test:?}", test_dir.display())))
}
