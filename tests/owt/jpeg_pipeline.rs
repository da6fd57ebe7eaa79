//! Real images at the GPUs' rate: JPEG folders decoded on several workers give the batches of
//! one (byte for byte, over an epoch, a failing image left out and counted alike) and train to
//! the same checkpoint; the packed copy (`owt prepare`) holds the folder's pixels and refuses
//! damage naming the shard. (The decode's quality is tested in pixels/tests.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cli::{owt, stderr};
use burn::backend::{Autodiff, Flex};
use owt::data::photo_folder::{write_photo_folder, PhotoFolder};
use owt::data::{Batch, ImageFolder, ImageSource, PackedImages};
use owt::train::input::{Prefetch, Preparation};
use owt_hybrid::SingleDevice;
use owt_models::ResizeFilter;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

fn photos() -> Vec<PathBuf> {
    let dir = crate::repository().join("tests/fixtures/photos");
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    all.retain(|p| p.extension().is_some_and(|x| x == "jpg"));
    all.sort();
    all
}

/// A JPEG folder of three classes (crops of three photographs), shorter sides 40 to 130 so
/// that a crop of 32 from a resize to 36 decodes some at a reduced DCT scale (72 or more),
/// plus a grey JPEG and a PNG.
pub(crate) fn jpeg_folder(dir: &Path, train: usize, val: usize) {
    let all = photos();
    let three: Vec<&Path> = all
        .iter()
        .filter(|p| !p.ends_with("retina.jpg") && !p.ends_with("hubble.jpg"))
        .take(3)
        .map(PathBuf::as_path)
        .collect();
    let spec = PhotoFolder {
        per_class: [train, val],
        shorter: [40, 130],
        aspect: 4.0 / 3.0,
        quality: 90,
        noise: 3.0,
        seed: 7,
    };
    write_photo_folder(&three, dir, &spec).unwrap();
    let class = std::fs::read_dir(dir.join("train")).unwrap().map(|e| e.unwrap().path()).min().unwrap();
    let grey = image::GrayImage::from_fn(90, 70, |x, y| image::Luma([((x * 3 + y * 5) % 256) as u8]));
    grey.save(class.join("grey.jpg")).unwrap();
    let png = image::RgbImage::from_fn(50, 40, |x, y| image::Rgb([x as u8 * 5, y as u8 * 6, 128]));
    png.save(class.join("colour.png")).unwrap();
}

fn drain(mut p: Prefetch) -> Vec<Batch> {
    std::iter::from_fn(move || p.next_batch().unwrap()).collect()
}

/// One epoch of a JPEG folder, random crops and flips on, in batches of 7: the same bytes on
/// 1, 2 and 4 workers; a PNG whose pixels fail is replaced by the next image on every count
/// of workers alike and counted once.
#[test]
fn batches_are_byte_for_byte_those_of_one_thread_for_any_number_of_workers() {
    let dir = tempfile::tempdir().unwrap();
    jpeg_folder(dir.path(), 34, 1);
    let class = std::fs::read_dir(dir.path().join("train")).unwrap().map(|e| e.unwrap().path()).max().unwrap();
    let bytes = std::fs::read(class.join("00003.jpg")).unwrap();
    let broken = image::RgbImage::from_pixel(30, 30, image::Rgb([9, 9, 9]));
    broken.save(class.join("00003b.png")).unwrap();
    let png = std::fs::read(class.join("00003b.png")).unwrap();
    std::fs::write(class.join("00003b.png"), &png[..45]).unwrap();
    assert!(bytes.len() > 1000);
    let epoch = |workers: usize| {
        let folder = ImageFolder::open(&dir.path().join("train"), 3, 36, 32).unwrap();
        assert_eq!(folder.len(), 3 * 34 + 3, "two extra images and the broken PNG (its header passes)");
        let source: Arc<dyn ImageSource> = Arc::new(folder);
        let mut order: Vec<usize> = (0..source.len()).collect();
        order.shuffle(&mut StdRng::seed_from_u64(11));
        let batches = drain(Prefetch::start(
            source.clone(),
            order,
            7,
            true,
            StdRng::seed_from_u64(12),
            Preparation::new(workers, 2),
        ));
        (batches, source.problem().is_none())
    };
    let (one, fine) = epoch(1);
    assert!(fine, "1 of 105 is within 1%");
    assert_eq!(one.len(), 15);
    assert_eq!(one.iter().map(Batch::len).sum::<usize>(), 105);
    for workers in [2, 4] {
        let (many, fine) = epoch(workers);
        assert!(fine);
        assert_eq!(many, one, "{workers} workers");
    }
}

/// JPEGs cut short or holding headers and no scan data are undecodable, not images: left out
/// and counted toward the 1% rule (2 of 106 here trips it, naming them), on any workers.
#[test]
fn truncated_jpegs_are_left_out_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    jpeg_folder(dir.path(), 34, 1);
    let class = std::fs::read_dir(dir.path().join("train")).unwrap().map(|e| e.unwrap().path()).max().unwrap();
    let bytes = std::fs::read(class.join("00003.jpg")).unwrap();
    std::fs::write(class.join("00003c.jpg"), &bytes[..bytes.len() / 3]).unwrap();
    let sos = bytes.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    std::fs::write(class.join("00003d.jpg"), [&bytes[..sos], &[0xFF, 0xD9][..]].concat()).unwrap();
    for workers in [1, 2] {
        let folder = ImageFolder::open(&dir.path().join("train"), 3, 36, 32).unwrap();
        // The file with no scan data is found when the split opens (its header is read then),
        // the one cut short when its pixels are.
        assert_eq!(folder.len(), 3 * 34 + 2 + 1);
        let source: Arc<dyn ImageSource> = Arc::new(folder);
        let order = (0..105).collect();
        let mut p =
            Prefetch::start(source.clone(), order, 8, true, StdRng::seed_from_u64(1), Preparation::new(workers, 2));
        let stopped = loop {
            match p.next_batch() {
                Ok(Some(_)) => continue,
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        let e = stopped.or_else(|| source.problem().map(|e| e.to_string())).expect("2 of 106 is more than 1%");
        assert!(e.contains("2 of 106 images") && e.contains("ends early"), "{e}");
        assert!(e.contains("00003c.jpg") || e.contains("00003d.jpg"), "{e}");
    }
}

/// At most `ahead` batches beyond the one in use are prepared, however many workers wait.
#[test]
fn workers_never_run_more_than_ahead_batches_before_the_step() {
    struct Watched {
        taken: Arc<std::sync::atomic::AtomicUsize>,
        worst: std::sync::Mutex<i64>,
    }
    impl ImageSource for Watched {
        fn len(&self) -> usize {
            40
        }
        fn image_dims(&self) -> [usize; 3] {
            [1, 1, 1]
        }
        fn classes(&self) -> usize {
            1
        }
        fn batch(&self, indices: &[usize], _: bool, _: &mut dyn rand::RngCore) -> Batch {
            let taken = self.taken.load(std::sync::atomic::Ordering::SeqCst) as i64;
            let mut worst = self.worst.lock().unwrap();
            *worst = (*worst).max(indices[0] as i64 - taken);
            std::thread::sleep(std::time::Duration::from_millis(1));
            Batch::new(vec![0; indices.len()], vec![0; indices.len()], [indices.len(), 1, 1, 1])
        }
    }
    let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let source = Arc::new(Watched { taken: taken.clone(), worst: Default::default() });
    let mut p =
        Prefetch::start(source.clone(), (0..40).collect(), 1, false, StdRng::seed_from_u64(0), Preparation::new(4, 2));
    while p.next_batch().unwrap().is_some() {
        std::thread::sleep(std::time::Duration::from_millis(3));
        taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    // Batch k starts once k - 2 batches are taken; this count lags the pool's by at most one.
    let worst = *source.worst.lock().unwrap();
    assert!((1..=2).contains(&worst), "a batch started {worst} batches ahead of the step");
}

/// A short training run on a JPEG folder with lighting noise: the same checkpoint on 1 and 4
/// workers.
#[test]
fn a_training_run_on_four_workers_ends_with_the_checkpoint_of_one() {
    use owt::data::{Lighting, LitImages, Splits};
    use owt::train::{train, RunOptions, TrainConfig};
    use owt_models::{ModelKind, ModelSpec};
    let data = tempfile::tempdir().unwrap();
    jpeg_folder(data.path(), 12, 4);
    let spec =
        ModelSpec { input: Some(32), channels: Some(3), classes: Some(3), ..ModelSpec::new(ModelKind::AlexNetSmall) };
    let config = TrainConfig { batch: 8, epochs: 1, ..TrainConfig::new(spec, owt::data::DatasetKind::Folder) };
    let run = |workers: usize| {
        let train_split = Arc::new(ImageFolder::open(&data.path().join("train"), 3, 36, 32).unwrap());
        let lighting = Lighting::fit(train_split.clone(), 0.1, Preparation::new(workers, 2)).unwrap();
        let test = Arc::new(ImageFolder::open(&data.path().join("val"), 3, 36, 32).unwrap());
        let splits = Splits { train: Arc::new(LitImages::new(train_split, lighting)), test };
        let out = tempfile::tempdir().unwrap();
        let layout = SingleDevice::<Autodiff<Flex>>::new(Default::default());
        let dir = owt::train::prepare_run_dir(out.path(), owt::train::Existing::Refuse, "train").unwrap();
        let metrics = train(&config, &splits, &layout, &dir, &RunOptions { workers, ..RunOptions::default() }).unwrap();
        let (model, _) = owt::train::load_model::<Flex>(out.path(), &Default::default()).unwrap();
        (owt_hybrid::parameter_values(&model), metrics[0].train_loss, metrics[0].input_wait_s)
    };
    let (one, loss1, wait) = run(1);
    let (four, loss4, _) = run(4);
    assert_eq!(loss1, loss4);
    assert!(one == four, "the weights after an epoch differ between 1 and 4 workers");
    let fresh = owt_hybrid::parameter_values(
        &config.model.architecture().unwrap().try_init::<Flex>(&Default::default()).unwrap(),
    );
    assert!(fresh != one, "the epoch changed the weights");
    assert!(wait.is_some_and(|w| w >= 0.0), "the epoch says how long it waited for input: {wait:?}");
}

/// The packed copy of a folder, at the folder's resize side, gives the folder's batches byte
/// for byte (random crops and flips included); at another side it is resized from the stored
/// images.
#[test]
fn a_packed_split_holds_the_folders_pixels_after_the_same_resize() {
    use owt::data::pack::{pack_split, PackOptions};
    let data = tempfile::tempdir().unwrap();
    jpeg_folder(data.path(), 10, 2);
    let folder = ImageFolder::open(&data.path().join("train"), 3, 36, 36).unwrap();
    let out = tempfile::tempdir().unwrap();
    let opts = PackOptions { workers: 3, shard_bytes: 20_000, verbose: false };
    let summary = pack_split(&folder, out.path(), "train", opts).unwrap();
    assert_eq!(summary.images, 32);
    assert!(summary.shards > 3, "small shards: {summary:?}");
    for channels in [3, 1] {
        let folder: Arc<dyn ImageSource> =
            Arc::new(ImageFolder::open(&data.path().join("train"), channels, 36, 32).unwrap());
        let packed: Arc<dyn ImageSource> =
            Arc::new(PackedImages::open(out.path(), channels, 36, 32, ResizeFilter::Area).unwrap());
        let order: Vec<usize> = (0..32).rev().collect();
        for augment in [true, false] {
            let a = drain(Prefetch::start(
                folder.clone(),
                order.clone(),
                5,
                augment,
                StdRng::seed_from_u64(4),
                Preparation::new(2, 2),
            ));
            let b = drain(Prefetch::start(
                packed.clone(),
                order.clone(),
                5,
                augment,
                StdRng::seed_from_u64(4),
                Preparation::new(3, 2),
            ));
            assert_eq!(a, b, "channels {channels}, augment {augment}");
        }
    }
    // Stored at 36, read for a resize to 34: resized from the stored pixels.
    let packed = PackedImages::open(out.path(), 3, 34, 32, ResizeFilter::Area).unwrap();
    let stored = PackedImages::open(out.path(), 3, 36, 32, ResizeFilter::Area).unwrap().resized(3).unwrap();
    assert_eq!(packed.resized(3).unwrap(), owt_pixels::resize_shorter_to(&stored, 34, owt_pixels::Filter::Area));
    let e = PackedImages::open(out.path(), 3, 36, 32, ResizeFilter::Bilinear).unwrap_err().to_string();
    assert!(e.contains("resized with the area filter, the model resizes with bilinear"), "{e}");
}

/// The network the packed copies here are trained and evaluated with.
const NETWORK: [&str; 10] =
    ["--model", "alexnet-small", "--channels", "3", "--input", "32", "--classes", "3", "--resize", "36"];

/// `owt prepare` writes a packed copy that trains as the folder does, never overwrites it,
/// leaves nothing when it fails, and a damaged or truncated shard is refused naming it.
#[test]
fn prepare_packs_atomically_and_damaged_shards_are_named() {
    let data = tempfile::tempdir().unwrap();
    jpeg_folder(data.path(), 8, 3);
    let work = tempfile::tempdir().unwrap();
    let packed = work.path().join("packed");
    let d = |p: &Path| p.to_str().unwrap().to_string();
    let prepare = |out: &Path| {
        owt(&[
            "prepare",
            "--data",
            &d(data.path()),
            "--out",
            &d(out),
            "--side",
            "36",
            "--shard-mib",
            "1",
            "--workers",
            "2",
        ])
    };
    let o = prepare(&packed);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("train: 26 images"), "{}", String::from_utf8_lossy(&o.stdout));
    let again = prepare(&packed);
    assert!(!again.status.success() && stderr(&again).contains("never overwrites"), "{}", stderr(&again));
    // Training on the packed copy and on the folder: the same losses and accuracies.
    let train = |kind: &str, dir: &Path, out: &Path| {
        let o = owt(&[
            &["train"][..],
            &NETWORK,
            &[
                "--dataset",
                kind,
                "--data",
                &d(dir),
                "--epochs",
                "1",
                "--batch",
                "8",
                "--lighting",
                "0",
                "--out",
                &d(out),
            ],
        ]
        .concat());
        assert!(o.status.success(), "{kind}: {}", stderr(&o));
        let metrics: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
        let m = &metrics[0];
        assert!(m["input_wait_s"].as_f64().is_some(), "{m}");
        [m["train_loss"].as_f64(), m["test_loss"].as_f64(), m["test_accuracy"].as_f64()]
    };
    let from_folder = train("folder", data.path(), &work.path().join("run-folder"));
    let from_packed = train("packed", &packed, &work.path().join("run-packed"));
    assert_eq!(from_folder, from_packed);
    // A folder with only val/: packed, it evaluates as the folder does; training on the
    // packed copy is refused in one line (it said only that train/index.json was missing).
    let val_only = work.path().join("val-only");
    for class in std::fs::read_dir(data.path().join("val")).unwrap() {
        let class = class.unwrap().path();
        let to = val_only.join("val").join(class.file_name().unwrap());
        std::fs::create_dir_all(&to).unwrap();
        for file in std::fs::read_dir(&class).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, to.join(file.file_name().unwrap())).unwrap();
        }
    }
    let packed_val = work.path().join("packed-val");
    let o = owt(&["prepare", "--data", &d(&val_only), "--out", &d(&packed_val), "--side", "36"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run = d(&work.path().join("run-folder"));
    let eval = |kind: &str, dir: &Path| {
        let o = owt(&["eval", "--checkpoint", &run, "--dataset", kind, "--data", &d(dir)]);
        assert!(o.status.success(), "{kind}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (folder, packed_only) = (eval("folder", &val_only), eval("packed", &packed_val));
    assert!(folder.contains("test accuracy") && folder == packed_only, "{folder} against {packed_only}");
    let o = owt(&[
        &["train"][..],
        &NETWORK,
        &["--dataset", "packed", "--data", &d(&packed_val), "--out", &d(&work.path().join("run-val-only"))],
    ]
    .concat());
    let e = stderr(&o);
    assert!(!o.status.success() && e.lines().count() == 1 && e.contains("has no train/ split to train on"), "{e}");
    // Both class lists edited alike (two names swapped: every image of them relabelled, and
    // the splits still agree): refused naming the list. An index of version 1 (no checksum,
    // from before it) is read as it was.
    for split in ["train", "val"] {
        let path = packed.join(split).join("index.json");
        let mut index: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(index["version"], 3);
        let classes = index["classes"].as_array_mut().unwrap();
        classes.swap(0, 1);
        std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
    }
    let open = |split: &str| PackedImages::open(&packed.join(split), 3, 36, 32, ResizeFilter::Area);
    let e = open("train").unwrap_err().to_string();
    assert!(e.contains("its class list (3 classes, first") && e.contains("was changed since it was packed"), "{e}");
    let path = packed.join("train/index.json");
    let mut index: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    index.as_object_mut().unwrap().remove("classes_crc32");
    index.as_object_mut().unwrap().remove("index_crc32");
    index["version"] = 1.into();
    std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
    assert!(open("train").is_ok(), "a version-1 index is read unchecked");
    for split in ["train", "val"] {
        let path = packed.join(split).join("index.json");
        let mut index: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        index["classes"].as_array_mut().unwrap().swap(0, 1);
        std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
    }
    assert!(open("val").is_ok(), "restored");
    // Any other entry edited (the side, the count left out, a shard's entry): refused naming
    // the index, as the class list is; the order of the shards is in the same checksum.
    let path = packed.join("val/index.json");
    let original = std::fs::read(&path).unwrap();
    for (entry, value) in [("side", serde_json::json!(40)), ("left_out", serde_json::json!(1))] {
        let mut index: serde_json::Value = serde_json::from_slice(&original).unwrap();
        index[entry] = value;
        std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
        let e = open("val").unwrap_err().to_string();
        assert!(
            e.contains("val/index.json") && e.contains("its entries") && e.contains("were changed"),
            "{entry}: {e}"
        );
    }
    let mut index: serde_json::Value = serde_json::from_slice(&original).unwrap();
    index["shards"][0]["bytes"] = serde_json::json!(index["shards"][0]["bytes"].as_u64().unwrap() + 1);
    std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
    assert!(open("val").unwrap_err().to_string().contains("its entries"));
    std::fs::write(&path, &original).unwrap();
    assert!(open("val").is_ok(), "restored");
    // A flipped byte in a shard: found when its images are first read, named.
    let shard = packed.join("train/shard-00000.bin");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&shard, &bytes).unwrap();
    let split: Arc<dyn ImageSource> =
        Arc::new(PackedImages::open(&packed.join("train"), 3, 36, 32, ResizeFilter::Area).unwrap());
    let mut p = Prefetch::start(split, (0..26).collect(), 26, false, StdRng::seed_from_u64(0), Preparation::new(2, 2));
    let e = p.next_batch().unwrap_err().to_string();
    assert!(e.contains("shard-00000.bin is damaged") && e.contains("CRC-32"), "{e}");
    // A truncated shard is refused when the split is opened.
    std::fs::write(&shard, &bytes[..bytes.len() / 2]).unwrap();
    let e = PackedImages::open(&packed.join("train"), 3, 36, 32, ResizeFilter::Area).unwrap_err().to_string();
    assert!(e.contains("shard-00000.bin is truncated"), "{e}");
    // A prepare that fails while packing (two PNGs whose pixels fail: more than 1% of the
    // split) leaves no output behind.
    let class = std::fs::read_dir(data.path().join("train")).unwrap().map(|e| e.unwrap().path()).max().unwrap();
    for i in 0..2 {
        let path = class.join(format!("broken{i}.png"));
        image::RgbImage::from_pixel(30, 30, image::Rgb([9, 9, 9])).save(&path).unwrap();
        let png = std::fs::read(&path).unwrap();
        std::fs::write(&path, &png[..45]).unwrap();
    }
    let failed = work.path().join("failed");
    let o = prepare(&failed);
    assert!(!o.status.success() && stderr(&o).contains("cannot be decoded"), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!failed.exists() && left.iter().all(|n| !n.to_string_lossy().contains("failed")), "{left:?}");
}
