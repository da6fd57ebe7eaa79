//! ImageNet-style image folders: one sub-directory per class, decoded on demand with
//! resize, random crop and horizontal flip. A file that cannot be decoded is never trained
//! on: those whose header fails are left out when the folder is opened, those whose pixels
//! fail when first read (the next image of the split takes its place in that batch and from
//! then on); both count toward the [`MAX_UNDECODABLE`] share beyond which the split is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use owt_models::ResizeFilter;

use owt_pixels::{decode, Crop, Rgb};

use crate::data::filter::filter_of;
use crate::data::images::{Batch, ImageSource};
use crate::data::stages::{Stage, StageClock};
use crate::data::val_labels::{label_files, ValLabels};
use crate::error::OwtError;

/// The most bytes an image file may have, and the most its decoded pixels may take: the
/// `image` crate's own allocation limit (512 MiB). A file larger than that cannot decode
/// within it (a PNG's stored blocks are barely larger than the pixels they hold).
pub const MAX_IMAGE_BYTES: u64 = 512 << 20;

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
        class_name(dir)
    ))
}

/// The class a class folder stands for: its name.
fn class_name(dir: &Path) -> String {
    dir.file_name().unwrap_or_default().to_string_lossy().into_owned()
}

/// The image files directly in `dir`, sorted by path.
fn images_in(dir: &Path) -> Result<Vec<PathBuf>, OwtError> {
    let mut images: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| OwtError::data(format!("cannot read {}: {e}", dir.display())))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| is_image_file(p))
        .collect();
    images.sort();
    Ok(images)
}

/// Refuses channels other than 1 or 3 and a crop larger than the resize side.
fn check_geometry(channels: usize, resize: usize, crop: usize) -> Result<(), OwtError> {
    if channels != 1 && channels != 3 {
        return Err(OwtError::data(format!("image folders give 1 or 3 channels, got {channels}")));
    }
    if crop == 0 || resize < crop {
        return Err(OwtError::data(format!(
            "resize side ({resize}) must be at least the crop side ({crop}) and positive"
        )));
    }
    Ok(())
}

/// The class folders of `root`, sorted: the classes of a split, in class-id order.
pub fn class_dirs(root: &Path) -> Result<Vec<PathBuf>, OwtError> {
    let entries = std::fs::read_dir(root)
        .map_err(|e| OwtError::data(format!("cannot read image folder {}: {e}", root.display())))?;
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    Ok(dirs)
}

/// The class names of the split in `root` (its folders' names, in class-id order).
pub fn class_names_in(root: &Path) -> Result<Vec<String>, OwtError> {
    Ok(class_dirs(root)?.iter().map(|d| class_name(d)).collect())
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
    /// The filter they are resized with.
    filter: ResizeFilter,
    /// Side of the square crop the model sees.
    crop: usize,
    root: PathBuf,
    /// What could not be decoded, shared by the clones of this folder.
    undecodable: Arc<Mutex<Undecodable>>,
    /// Time spent per stage, shared by the clones of this folder.
    clock: Arc<StageClock>,
}

/// The split's files that cannot be decoded.
#[derive(Debug, Default)]
struct Undecodable {
    /// Files in the split before any was left out.
    total: usize,
    /// Left out when the folder was opened (the header failed), with the first few reasons.
    at_open: usize,
    first: Vec<String>,
    /// Found while reading pixels: index into `files`, and why.
    found: BTreeMap<usize, String>,
}

impl ImageFolder {
    /// Indexes `root`. Images are resized so the shorter side is `resize`, then cropped to
    /// `crop` x `crop` (random when augmenting, centred otherwise); `channels` is 1 (gray) or 3.
    pub fn open(root: &Path, channels: usize, resize: usize, crop: usize) -> Result<Self, OwtError> {
        check_geometry(channels, resize, crop)?;
        let class_dirs = class_dirs(root)?;
        let mut files = Vec::new();
        let mut class_names = Vec::new();
        // The first class folder without images (refused unless no class has any: then the
        // whole dataset is empty, said as such).
        let mut empty: Option<PathBuf> = None;
        for (class, dir) in class_dirs.iter().enumerate() {
            class_names.push(class_name(dir));
            let images = images_in(dir)?;
            if images.is_empty() {
                empty.get_or_insert_with(|| dir.clone());
            }
            files.extend(images.into_iter().map(|p| (p, class)));
        }
        if class_names.is_empty() {
            let flat = images_in(root).map(|i| i.len()).unwrap_or(0);
            let hint = if flat > 0 {
                format!(
                    "; it holds {flat} images in one folder, as ImageNet's validation set does: give their labels with --val-labels FILE (a CSV of file,class, or the devkit's ground truth with --val-synsets)"
                )
            } else {
                String::new()
            };
            return Err(OwtError::data(format!(
                "{} has no class sub-directories: expected <dir>/<class>/<image>.png|jpg{hint}",
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
        Self::of_files(root, files, class_names, channels, resize, crop)
    }

    /// A flat folder of images (ImageNet's validation layout) labelled by `labels` (see
    /// [`crate::data::val_labels`]); `classes` are the training split's class names when
    /// there is one (the labels must be among them), else every class the labels name.
    pub fn flat(
        root: &Path,
        labels: &ValLabels,
        classes: Option<&[String]>,
        channels: usize,
        resize: usize,
        crop: usize,
    ) -> Result<Self, OwtError> {
        check_geometry(channels, resize, crop)?;
        let images = images_in(root)?;
        if images.is_empty() {
            return Err(OwtError::data(format!(
                "{}: no .png/.jpg/.jpeg images for --val-labels {} to label",
                root.display(),
                labels.labels.display()
            )));
        }
        let names: Vec<String> =
            images.iter().map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned()).collect();
        let (ids, class_names) = label_files(labels, root, &names, classes)?;
        Self::of_files(root, images.into_iter().zip(ids).collect(), class_names, channels, resize, crop)
    }

    /// The split of `files` (with their classes) under `root`, those whose header fails left
    /// out (refused above [`MAX_UNDECODABLE`]).
    fn of_files(
        root: &Path,
        files: Files,
        class_names: Vec<String>,
        channels: usize,
        resize: usize,
        crop: usize,
    ) -> Result<Self, OwtError> {
        let total = files.len();
        let (files, first) = drop_undecodable(root, files, resize)?;
        let undecodable = Undecodable { total, at_open: total - files.len(), first, found: BTreeMap::new() };
        let undecodable = Arc::new(Mutex::new(undecodable));
        let clock = Arc::default();
        let (root, filter) = (root.to_path_buf(), ResizeFilter::Area);
        Ok(Self { files, class_names, channels, resize, filter, crop, root, undecodable, clock })
    }

    /// `n` of the split's images, evenly spaced through it (every class keeps its share):
    /// `--limit` on an image folder. All of them when `n` is not smaller.
    pub fn evenly_spaced(mut self, n: usize) -> Self {
        let len = self.files.len();
        if n < len {
            self.files = (0..n).map(|i| self.files[i * len / n].clone()).collect();
            let mut u = self.undecodable.lock().unwrap_or_else(|e| e.into_inner());
            u.total = n + u.at_open;
        }
        self
    }

    /// The folder resizing with `filter` (area unless told otherwise: owt's own).
    pub fn with_filter(mut self, filter: ResizeFilter) -> Self {
        self.filter = filter;
        self
    }

    /// The filter images are resized with.
    pub fn filter(&self) -> ResizeFilter {
        self.filter
    }

    /// Files left out when the split was opened (their header did not decode).
    pub fn left_out_at_open(&self) -> usize {
        self.undecodable.lock().unwrap_or_else(|e| e.into_inner()).at_open
    }

    /// The folder labelled by `trained`'s class ids (the class names a network learnt, in
    /// id order) instead of its own: a held-out folder with fewer classes, or classes in
    /// another order, scored as the network means them. Refused, naming them, when the
    /// folder has a class `trained` lacks.
    pub fn labelled_as(mut self, trained: &[String]) -> Result<Self, OwtError> {
        if self.class_names == trained {
            return Ok(self);
        }
        let unknown: Vec<&String> = self.class_names.iter().filter(|n| !trained.contains(n)).collect();
        if !unknown.is_empty() {
            let shown: Vec<&String> = trained.iter().take(10).collect();
            let more = if trained.len() > 10 { " ..." } else { "" };
            return Err(OwtError::data(format!(
                "{}: class folders {unknown:?} are not among the {} classes the checkpoint was trained on ({shown:?}{more})",
                self.root.display(),
                trained.len()
            )));
        }
        let ids: Vec<usize> =
            self.class_names.iter().map(|n| trained.iter().position(|t| t == n).expect("checked above")).collect();
        for (_, class) in &mut self.files {
            *class = ids[*class];
        }
        self.class_names = trained.to_vec();
        Ok(self)
    }

    /// Class names, in class-id order.
    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    /// The split's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The image at `index`, or, if it cannot be decoded, the next one of the split that can
    /// (files found undecodable are recorded, warned about once, and skipped from then on),
    /// with its class. `None` when no file of the split decodes.
    fn load_or_next(&self, index: usize, augment: bool, rng: &mut dyn rand::RngCore) -> Option<(Vec<u8>, usize)> {
        self.first_decodable(index, |j| self.load(j, augment, rng))
    }

    /// The ten patches of the image at `index` (or of the next one that decodes, as
    /// [`ImageFolder::load_or_next`]), with its class: see [`ImageFolder::ten_crops`].
    pub(crate) fn ten_crops_or_next(&self, index: usize) -> Option<(Vec<Vec<u8>>, usize)> {
        self.first_decodable(index, |j| self.ten_crops(j))
    }

    /// `read(j)` of the image at `index`, or of the next one of the split for which it
    /// succeeds (files found undecodable are recorded, warned about once, and skipped from
    /// then on), with its class.
    fn first_decodable<T>(&self, index: usize, mut read: impl FnMut(usize) -> Result<T, String>) -> Option<(T, usize)> {
        for j in (index..self.files.len()).chain(0..index) {
            if self.undecodable.lock().unwrap_or_else(|e| e.into_inner()).found.contains_key(&j) {
                continue;
            }
            match read(j) {
                Ok(pixels) => return Some((pixels, self.files[j].1)),
                Err(why) => {
                    // Workers that meet the same file at once warn once.
                    let found = &mut self.undecodable.lock().unwrap_or_else(|e| e.into_inner()).found;
                    if found.insert(j, why.clone()).is_none() {
                        crate::err_line!(
                            "warning: cannot decode {}: {why}; left out (the next image of the split takes its place)",
                            self.files[j].0.display()
                        );
                    }
                }
            }
        }
        None
    }

    fn load(&self, index: usize, augment: bool, rng: &mut dyn rand::RngCore) -> Result<Vec<u8>, String> {
        let resized = self.resized(index)?;
        let (w, h, side) = (resized.width, resized.height, self.crop);
        let crop = if augment { Crop::random(rng, w, h, side) } else { Crop::centre(w, h, side) };
        let planes = self.clock.time(Stage::Crop, || crop.planes(&resized, side, self.channels));
        owt_pixels::recycle(resized.pixels);
        Ok(planes)
    }

    /// The 2012 paper's ten test patches of the image at `index` ([`Crop::ten`]), each `crop`
    /// square from the image resized as for training.
    pub fn ten_crops(&self, index: usize) -> Result<Vec<Vec<u8>>, String> {
        let resized = self.resized(index)?;
        let crops = Crop::ten(resized.width, resized.height, self.crop);
        Ok(self
            .clock
            .time(Stage::Crop, || crops.iter().map(|c| c.planes(&resized, self.crop, self.channels)).collect()))
    }

    /// The image at `index` read, decoded (at a reduced DCT scale where it is large enough:
    /// [`owt_pixels::dct_reduction`]) and resized with the folder's filter so its shorter side is
    /// `resize`, to the size torchvision's `Resize(resize)` gives.
    pub fn resized(&self, index: usize) -> Result<Rgb, String> {
        let (path, _) = &self.files[index];
        let bytes = self.clock.time(Stage::Read, || read_image(path))?;
        let decoded = self.clock.time(Stage::Decode, || decode::decode(&bytes, self.resize))?;
        let resized = self.clock.time(Stage::Resize, || decoded.resized(self.resize, filter_of(self.filter)));
        self.clock.count(1);
        Ok(resized)
    }

    /// The shorter side images are resized to before cropping.
    pub fn resize_side(&self) -> usize {
        self.resize
    }

    /// The split's files and their classes, in index order.
    pub fn files(&self) -> &[(PathBuf, usize)] {
        &self.files
    }
}

/// The bytes of the image file `path`: a regular file of at most [`MAX_IMAGE_BYTES`].
fn read_image(path: &Path) -> Result<Vec<u8>, String> {
    crate::host::bounded_read::read(path, MAX_IMAGE_BYTES, "an image file").map_err(|e| e.to_string())
}

/// A split's image files and their classes.
type Files = Vec<(PathBuf, usize)>;

/// Largest share of a split's files that may fail to decode; above it the split is refused.
pub const MAX_UNDECODABLE: f64 = 0.01;

/// Whether `bad` undecodable files of a split of `total` are more than [`MAX_UNDECODABLE`].
fn too_many(bad: usize, total: usize) -> bool {
    bad as f64 > MAX_UNDECODABLE * total as f64
}

/// An undecodable file as errors and warnings name it: its file name and why.
fn example(path: &Path, why: &str) -> String {
    format!("{} ({why})", path.file_name().unwrap_or_default().to_string_lossy())
}

/// A reader of the image file `path`: a regular file of at most [`MAX_IMAGE_BYTES`], its
/// format guessed from its bytes, decoding within the `image` crate's allocation limit.
fn reader(path: &Path) -> Result<image::ImageReader<std::io::BufReader<std::fs::File>>, String> {
    let file = crate::host::bounded_read::open_regular(path).map_err(|e| e.to_string())?;
    crate::host::bounded_read::check_size(&file, MAX_IMAGE_BYTES, "an image file").map_err(|e| e.to_string())?;
    image::ImageReader::new(std::io::BufReader::new(file)).with_guessed_format().map_err(|e| e.to_string())
}

/// Why `path` cannot be decoded and resized to a shorter side of `resize`, if its header
/// already says so (the pixels are read later).
fn undecodable(path: &Path, resize: usize) -> Option<String> {
    match reader(path) {
        Err(e) => Some(e),
        Ok(r) => match r.into_dimensions() {
            Err(e) => Some(e.to_string()),
            Ok((w, h)) => owt_pixels::check_resizable(w as usize, h as usize, resize).err(),
        },
    }
}

/// `files` without those whose header cannot be decoded, and the first few of those with
/// why: refused when more than [`MAX_UNDECODABLE`] of them fail (naming the count and the
/// first few), else one warning line.
fn drop_undecodable(root: &Path, files: Files, resize: usize) -> Result<(Files, Vec<String>), OwtError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len().max(1));
    let chunk = files.len().div_ceil(threads);
    let verdicts: Vec<Option<String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(|(p, _)| undecodable(p, resize)).collect::<Vec<_>>()))
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("decoding a header does not panic")).collect()
    });
    let bad: Vec<(&Path, &str)> =
        files.iter().zip(&verdicts).filter_map(|((p, _), v)| v.as_deref().map(|why| (p.as_path(), why))).collect();
    if bad.is_empty() {
        return Ok((files, Vec::new()));
    }
    let first: Vec<String> = bad.iter().take(3).map(|(p, why)| example(p, why)).collect();
    let summary = format!(
        "{} of {} images in {} cannot be decoded, e.g. {}",
        bad.len(),
        files.len(),
        root.display(),
        first.join(", ")
    );
    if too_many(bad.len(), files.len()) {
        return Err(OwtError::data(format!(
            "{summary}: more than {}% of the split; fix or remove them",
            MAX_UNDECODABLE * 100.0
        )));
    }
    crate::err_line!("warning: {summary}; they are left out");
    Ok((files.into_iter().zip(verdicts).filter(|(_, v)| v.is_none()).map(|(f, _)| f).collect(), first))
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

    fn class_names(&self) -> Vec<String> {
        self.class_names.clone()
    }

    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> Batch {
        let size = self.channels * self.crop * self.crop;
        let mut images = Vec::with_capacity(indices.len() * size);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            // When nothing decodes, `problem` refuses the split before this batch is used.
            let (pixels, class) =
                self.load_or_next(i, augment, rng).unwrap_or_else(|| (vec![0; size], self.files[i].1));
            images.extend(pixels);
            labels.push(class as i64);
        }
        Batch::new(images, labels, [indices.len(), self.channels, self.crop, self.crop])
    }

    fn stages(&self) -> Option<&StageClock> {
        Some(&self.clock)
    }

    fn problem(&self) -> Option<OwtError> {
        let u = self.undecodable.lock().unwrap_or_else(|e| e.into_inner());
        let bad = u.at_open + u.found.len();
        if !too_many(bad, u.total) {
            return None;
        }
        let found = u.found.iter().map(|(&i, why)| example(&self.files[i].0, why));
        let examples: Vec<String> = u.first.iter().cloned().chain(found).take(3).collect();
        Some(OwtError::data(format!(
            "{bad} of {} images in {} cannot be decoded ({} of them found while reading their pixels), e.g. {}: more than {}% of the split; fix or remove them",
            u.total,
            self.root.display(),
            u.found.len(),
            examples.join(", "),
            MAX_UNDECODABLE * 100.0
        )))
    }
}
