//! Data sources: IDX (MNIST, Fashion-MNIST), image folders, synthetic images.

pub mod checksum;
pub mod filter;
pub mod folder;
pub mod idx;
pub mod images;
pub mod lighting;
pub mod mnist;
pub mod pack;
pub mod packed;
pub mod photo_folder;
pub mod stages;
pub mod synthetic;
pub mod ten_crop;
pub mod val_labels;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use filter::filter_of;
pub use folder::{class_names_in, ImageFolder};
pub use idx::{encode_idx, parse_idx, read_idx, IdxArray};
pub use images::{Batch, ImageSource, InMemoryImages};
pub use lighting::{Lighting, LitImages};
pub use mnist::{load_mnist_split, FASHION_MNIST_DIR, MAX_PAD};
pub use packed::PackedImages;
pub use synthetic::synthetic_images;
pub use ten_crop::TenCrops;
pub use val_labels::ValLabels;

use owt_models::ResizeFilter;

use crate::error::OwtError;

/// Which dataset (`--dataset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetKind {
    /// Fashion-MNIST: Debian's `dataset-fashion-mnist`, or `--data DIR`.
    FashionMnist,
    /// MNIST in the same IDX layout, from `--data DIR`.
    Mnist,
    /// `--data DIR` with `DIR/train/<class>/*` and `DIR/val/<class>/*` (or `test`; or a flat
    /// `DIR/val/` with `--val-labels`).
    Folder,
    /// `--data DIR` written by `owt prepare`: each split decoded and resized once, in
    /// memory-mapped shards.
    Packed,
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
    /// The shorter side folder images are resized to before the model's square is cut
    /// (`None`: 8/7 of the side, [`owt_models::default_resize`]); the model spec's.
    pub resize: Option<usize>,
    /// The labels of a flat held-out folder (ImageNet's validation layout): a CSV of file,
    /// class, or the devkit's ground truth list and its synsets (`--val-labels`).
    pub val_labels: Option<ValLabels>,
    /// The filter folder images are resized with (the model spec's).
    pub filter: ResizeFilter,
    /// The class names of the network the held-out split is evaluated on, in id order (a
    /// checkpoint's, for `owt eval`): a held-out folder's classes are looked up among them
    /// rather than compared with a `train/` folder's, so a folder with fewer classes scores
    /// those classes as the network means them.
    pub trained_classes: Option<Vec<String>>,
}

impl DataRequest {
    /// `kind` for a network whose input is `model_input`, every other setting at its default:
    /// no directory, every image, seed 0, images resized (to 8/7 of the side) with owt's area
    /// filter, held-out images in class folders.
    pub fn new(kind: DatasetKind, model_input: [usize; 3]) -> Self {
        DataRequest {
            kind,
            dir: None,
            limit: None,
            model_input,
            seed: 0,
            resize: None,
            val_labels: None,
            filter: ResizeFilter::Area,
            trained_classes: None,
        }
    }

    /// This request with images resized as `spec` says (its resize side and filter).
    pub fn resized_as(self, spec: &owt_models::ModelSpec) -> Self {
        DataRequest { resize: spec.resize, filter: spec.resize_filter, ..self }
    }

    /// Refuses flags the dataset cannot use: `--val-labels` labels a flat folder of images.
    fn check(&self) -> Result<(), OwtError> {
        match &self.val_labels {
            Some(l) if self.kind != DatasetKind::Folder => Err(OwtError::input(format!(
                "--val-labels {} labels a flat folder of images: it needs --dataset folder (got {:?}; `owt prepare --val-labels` packs such a folder)",
                l.labels.display(),
                self.kind
            ))),
            _ => Ok(()),
        }
    }

    /// The directory the data is read from: `--data`, or the dataset's default one
    /// (Fashion-MNIST's Debian package); `None` for synthetic images, which owt makes.
    pub fn data_dir(&self) -> Option<PathBuf> {
        match self.kind {
            DatasetKind::Synthetic => None,
            DatasetKind::FashionMnist => Some(self.dir.clone().unwrap_or_else(|| PathBuf::from(FASHION_MNIST_DIR))),
            _ => self.dir.clone(),
        }
    }

    /// The shorter side folder images are resized to.
    pub fn resize_side(&self) -> usize {
        self.resize.unwrap_or_else(|| owt_models::default_resize(self.model_input[1]))
    }
}

/// Default number of synthetic training images (test split: a quarter of it).
pub const SYNTHETIC_TRAIN: usize = 2048;

/// Opens only the dataset's held-out split (what `owt eval` needs): a folder dataset needs no
/// `train/` directory for it.
pub fn open_test_split(req: &DataRequest) -> Result<Arc<dyn ImageSource>, OwtError> {
    req.check()?;
    let test: Arc<dyn ImageSource> = match req.kind {
        DatasetKind::FashionMnist => {
            let dir = req.dir.clone().unwrap_or_else(|| PathBuf::from(FASHION_MNIST_DIR));
            let hint = "Install it with `apt-get install dataset-fashion-mnist` (Debian) or pass --data DIR with the four IDX files.";
            Arc::new(load_mnist_split(&dir, false, "Fashion-MNIST", hint, req.model_input[1])?)
        }
        DatasetKind::Mnist => {
            let dir = req.dir.clone().ok_or_else(|| {
                OwtError::data(
                    "MNIST needs --data DIR with t10k-images-idx3-ubyte(.gz) and t10k-labels-idx1-ubyte(.gz)",
                )
            })?;
            Arc::new(load_mnist_split(&dir, false, "MNIST", "Pass --data DIR with the IDX files.", req.model_input[1])?)
        }
        DatasetKind::Folder => Arc::new(held_out_split(req)?),
        DatasetKind::Packed => Arc::new(packed_held_out(req)?),
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
    req.check()?;
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
    req.check()?;
    let splits = match req.kind {
        DatasetKind::FashionMnist => {
            let dir = req.dir.clone().unwrap_or_else(|| PathBuf::from(FASHION_MNIST_DIR));
            let hint = "Install it with `apt-get install dataset-fashion-mnist` (Debian) or pass --data DIR with the four IDX files.";
            mnist_splits(&dir, "Fashion-MNIST", hint, req.limit, req.model_input[1])?
        }
        DatasetKind::Mnist => {
            let dir = req.dir.clone().ok_or_else(|| {
                OwtError::data("MNIST needs --data DIR: a directory with train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz), t10k-images-idx3-ubyte(.gz), t10k-labels-idx1-ubyte(.gz)")
            })?;
            mnist_splits(&dir, "MNIST", "Pass --data DIR with the four IDX files.", req.limit, req.model_input[1])?
        }
        DatasetKind::Folder => {
            let dir = req.dir.clone().ok_or_else(|| {
                OwtError::data(
                    "--dataset folder needs --data DIR with DIR/train/<class>/*.jpg and DIR/val/<class>/*.jpg",
                )
            })?;
            folder_splits(&dir, req)?
        }
        DatasetKind::Packed => {
            let dir = req.dir.clone().ok_or_else(|| {
                OwtError::data("--dataset packed needs --data DIR, a directory written by `owt prepare`")
            })?;
            packed_splits(&dir, req)?
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

fn mnist_splits(dir: &Path, name: &str, hint: &str, limit: Option<usize>, side: usize) -> Result<Splits, OwtError> {
    let mut train = load_mnist_split(dir, true, name, hint, side)?;
    if let Some(n) = limit {
        train = train.truncated(n);
    }
    let test = load_mnist_split(dir, false, name, hint, side)?;
    Ok(Splits { train: Arc::new(train), test: Arc::new(test) })
}

/// A folder dataset's held-out split (`--data DIR`): where the training split is there too,
/// its classes must be the training split's, as training requires (the same folder names mean
/// the same class ids).
fn held_out_split(req: &DataRequest) -> Result<ImageFolder, OwtError> {
    let dir = req
        .dir
        .clone()
        .ok_or_else(|| OwtError::data("--dataset folder needs --data DIR with DIR/val/<class>/*.jpg (or DIR/test/)"))?;
    if let Some(trained) = &req.trained_classes {
        if req.val_labels.is_some() {
            return held_out_folder(&dir, req, Some(trained));
        }
        return held_out_folder(&dir, req, None)?.labelled_as(trained);
    }
    let train = dir.join("train");
    let classes = if train.is_dir() { Some(class_names_in(&train)?) } else { None };
    held_out_folder(&dir, req, classes.as_deref())
}

/// The held-out split of a folder dataset: class folders (the same as `train`'s classes
/// where given), or a flat folder labelled by `--val-labels`.
pub fn held_out_folder(dir: &Path, req: &DataRequest, train: Option<&[String]>) -> Result<ImageFolder, OwtError> {
    let [channels, side, _] = req.model_input;
    let held_out = held_out_dir(dir)?;
    if let Some(labels) = &req.val_labels {
        return Ok(
            ImageFolder::flat(&held_out, labels, train, channels, req.resize_side(), side)?.with_filter(req.filter)
        );
    }
    let test = ImageFolder::open(&held_out, channels, req.resize_side(), side)?.with_filter(req.filter);
    if let Some(train) = train {
        same_classes(train, &held_out, test.class_names())?;
    }
    Ok(test)
}

/// The training split of a folder dataset.
pub fn train_folder(dir: &Path, req: &DataRequest) -> Result<ImageFolder, OwtError> {
    let [channels, side, _] = req.model_input;
    Ok(ImageFolder::open(&dir.join("train"), channels, req.resize_side(), side)?.with_filter(req.filter))
}

fn folder_splits(dir: &Path, req: &DataRequest) -> Result<Splits, OwtError> {
    let train = train_folder(dir, req)?;
    let test = held_out_folder(dir, req, Some(train.class_names()))?;
    let train = match req.limit {
        Some(n) => train.evenly_spaced(n),
        None => train,
    };
    Ok(Splits { train: Arc::new(train), test: Arc::new(test) })
}

fn packed_splits(dir: &Path, req: &DataRequest) -> Result<Splits, OwtError> {
    let [channels, side, _] = req.model_input;
    if !dir.join("train").is_dir() && held_out_dir(dir).is_ok() {
        return Err(OwtError::data(format!(
            "{} has no train/ split to train on (it was packed from a folder without train/); evaluate it with owt eval --dataset packed, or prepare a folder that has train/",
            dir.display()
        )));
    }
    let train = PackedImages::open(&dir.join("train"), channels, req.resize_side(), side, req.filter)?;
    let held_out = held_out_dir(dir)?;
    let test = PackedImages::open(&held_out, channels, req.resize_side(), side, req.filter)?;
    same_classes(train.class_names(), &held_out, test.class_names())?;
    let train = match req.limit {
        Some(n) => train.evenly_spaced(n),
        None => train,
    };
    Ok(Splits { train: Arc::new(train), test: Arc::new(test) })
}

/// The held-out split of a packed copy, for evaluation: a copy packed from a folder with only
/// `val/` (or `test/`) has no training split, and needs none; where it has one, the two must
/// have the same classes.
fn packed_held_out(req: &DataRequest) -> Result<PackedImages, OwtError> {
    let dir = req
        .dir
        .clone()
        .ok_or_else(|| OwtError::data("--dataset packed needs --data DIR, a directory written by `owt prepare`"))?;
    let [channels, side, _] = req.model_input;
    let held_out = held_out_dir(&dir)?;
    let test = PackedImages::open(&held_out, channels, req.resize_side(), side, req.filter)?;
    if dir.join("train").is_dir() {
        let train = PackedImages::open(&dir.join("train"), channels, req.resize_side(), side, req.filter)?;
        same_classes(train.class_names(), &held_out, test.class_names())?;
    }
    Ok(test)
}

/// The held-out directory of a dataset directory: `DIR/val/`, else `DIR/test/`.
pub fn held_out_dir(dir: &Path) -> Result<PathBuf, OwtError> {
    ["val", "test"].iter().map(|s| dir.join(s)).find(|p| p.is_dir()).ok_or_else(|| {
        OwtError::data(format!("{} has no val/ or test/ directory for the held-out split", dir.display()))
    })
}

/// Refuses a held-out split (in `test_dir`) whose class folders are not the training split's.
fn same_classes(train: &[String], test_dir: &Path, test: &[String]) -> Result<(), OwtError> {
    if test == train {
        return Ok(());
    }
    Err(OwtError::data(format!("class folders differ: train has {train:?}, {} has {test:?}", test_dir.display())))
}
