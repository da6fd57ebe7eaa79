//! Training on one device: it learns, checkpoints are atomic, and resume continues exactly.
//!
//! Its own test binary (the other integration tests share one): a run seeds Flex's
//! process-wide random generator and then draws the model's initial weights from it, so two
//! runs compared here must not share the process with tests drawing random numbers meanwhile.

use std::sync::Arc;

use burn::backend::{Autodiff, Flex};
use owt::data::DatasetKind;
use owt::data::{synthetic_images, Splits};
use owt::train::{load_model, train, Checkpoint, Existing, RunDir, RunOptions, TrainConfig, CHECKPOINT_FILE};
use owt_hybrid::SingleDevice;
use owt_models::{Head, ModelKind, ModelSpec};

type B = Autodiff<Flex>;

/// Flex's random generator is process-global: runs that must be reproducible take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn splits(n: usize) -> Splits {
    Splits {
        train: Arc::new(synthetic_images([1, 28, 28], 10, n, 1)),
        test: Arc::new(synthetic_images([1, 28, 28], 10, 100, 2)),
    }
}

fn config(epochs: usize, head: Head) -> TrainConfig {
    TrainConfig {
        head,
        epochs,
        batch: 32,
        seed: 7,
        ..TrainConfig::new(ModelSpec::new(ModelKind::AlexNetSmall), DatasetKind::Synthetic)
    }
}

/// Whether two epoch records are the same record: equal but for the last bits a JSON round
/// trip may change in a float (serde_json parses to the nearest value, not always the same).
fn same_record(a: &owt::train::EpochMetrics, b: &owt::train::EpochMetrics) -> bool {
    let near = |x: f64, y: f64| (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs());
    a.epoch == b.epoch
        && a.layout == b.layout
        && near(a.seconds, b.seconds)
        && near(a.train_loss, b.train_loss)
        && near(a.train_accuracy, b.train_accuracy)
        && near(a.test_loss, b.test_loss)
        && near(a.test_accuracy, b.test_accuracy)
        && near(a.images_per_second, b.images_per_second)
}

fn quiet(out: &std::path::Path, resume: bool) -> RunDir {
    owt::train::prepare_run_dir(out, Existing::of(resume, false), "train").unwrap()
}

#[test]
fn small_network_learns_synthetic_classes_with_either_head() {
    let _turn = serial();
    // Four epochs: after three, some dropout draws still sit on the steep part of the curve
    // (logistic head, 35% to 96% test accuracy over seeds 1..7); after four every one is well past chance.
    for head in Head::ALL {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(4, head);
        c.batch = 16;
        let m = train::<B, _>(
            &c,
            &splits(320),
            &SingleDevice::<B>::new(Default::default()),
            &quiet(dir.path(), false),
            &RunOptions::default(),
        )
        .unwrap();
        assert_eq!(m.len(), 4);
        assert!(m[3].train_loss < m[0].train_loss, "{head:?}: loss {} -> {}", m[0].train_loss, m[3].train_loss);
        assert!(m[3].test_accuracy > 0.5, "{head:?}: test accuracy {} (chance 0.1)", m[3].test_accuracy);
        // metrics.json holds the same epochs.
        let json: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(dir.path().join("metrics.json")).unwrap()).unwrap();
        assert_eq!(json.len(), 4);
        for key in
            ["epoch", "train_loss", "train_accuracy", "test_accuracy", "test_loss", "images_per_second", "seconds"]
        {
            assert!(json[3].get(key).is_some(), "metrics.json lacks {key}");
        }
    }
}

#[test]
fn resume_continues_exactly() {
    let _turn = serial();
    let data = splits(96);
    let straight = tempfile::tempdir().unwrap();
    let full = train::<B, _>(
        &config(3, Head::Softmax),
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(straight.path(), false),
        &RunOptions::default(),
    )
    .unwrap();

    let split = tempfile::tempdir().unwrap();
    train::<B, _>(
        &config(1, Head::Softmax),
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(split.path(), false),
        &RunOptions::default(),
    )
    .unwrap();
    let saved = Checkpoint::load(split.path()).unwrap().state.metrics;
    let resumed = train::<B, _>(
        &config(3, Head::Softmax),
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(split.path(), true),
        &RunOptions::default(),
    )
    .unwrap();

    // The epoch before the resume is the checkpoint's record, not a second training of it:
    // values, seconds and layout equal what the first run saved.
    assert_eq!((saved.len(), resumed.len()), (1, 3));
    assert!(same_record(&resumed[0], &saved[0]), "{:?} vs {:?}", resumed[0], saved[0]);
    let written: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(split.path().join("metrics.json")).unwrap()).unwrap();
    assert_eq!(written[0]["seconds"].as_f64(), Some(saved[0].seconds));
    // Equal up to the order of Flex's multi-threaded float reductions: measured below 1e-7
    // relative for the losses; 1e-6 leaves room for other thread counts.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(1.0);
    assert_eq!(full.len(), resumed.len());
    for (a, b) in full.iter().zip(&resumed) {
        assert!(
            close(a.train_loss, b.train_loss) && close(a.test_loss, b.test_loss),
            "epoch {}: {a:?} vs {b:?}",
            a.epoch
        );
        assert_eq!(a.test_accuracy, b.test_accuracy, "epoch {}", a.epoch);
    }
    let (ma, _) = load_model::<Flex>(straight.path(), &Default::default()).unwrap();
    let (mb, _) = load_model::<Flex>(split.path(), &Default::default()).unwrap();
    let wa = ma.fc6.weight.val().into_data().to_vec::<f32>().unwrap();
    let wb = mb.fc6.weight.val().into_data().to_vec::<f32>().unwrap();
    let scale = wa.iter().fold(0f32, |m, w| m.max(w.abs()));
    assert_eq!(wa.len(), wb.len());
    let diff = wa.iter().zip(&wb).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(diff <= 1e-6 * scale, "resumed fc6 differs by {diff} (scale {scale})");
}

/// A resume continues from the checkpoint's weights, not from a fresh start: a checkpoint
/// made with another learning rate (its config then set to this run's) leads to other
/// weights than a fresh run of the same epochs, and its epochs before the resume keep their
/// record.
#[test]
fn a_resume_starts_from_the_checkpoint_not_from_scratch() {
    let _turn = serial();
    let data = splits(96);
    let single = SingleDevice::<B>::new(Default::default());
    let fresh = tempfile::tempdir().unwrap();
    train::<B, _>(&config(2, Head::Softmax), &data, &single, &quiet(fresh.path(), false), &RunOptions::default())
        .unwrap();
    let other = tempfile::tempdir().unwrap();
    let fast = TrainConfig { lr: 0.05, ..config(1, Head::Softmax) };
    let fast_metrics =
        train::<B, _>(&fast, &data, &single, &quiet(other.path(), false), &RunOptions::default()).unwrap();
    // Relabel the checkpoint as this run's (lr 0.01), keeping the lr-0.05 weights.
    let ckpt = Checkpoint::load(other.path()).unwrap();
    let mut state = ckpt.state.clone();
    state.config = config(1, Head::Softmax);
    Checkpoint::save(other.path(), &state, ckpt.model_bytes(), ckpt.optimizer_bytes()).unwrap();
    let resumed =
        train::<B, _>(&config(2, Head::Softmax), &data, &single, &quiet(other.path(), true), &RunOptions::default())
            .unwrap();
    assert!(same_record(&resumed[0], &fast_metrics[0]), "epoch 1 is the checkpoint's record: {:?}", resumed[0]);
    let (a, _) = load_model::<Flex>(fresh.path(), &Default::default()).unwrap();
    let (b, _) = load_model::<Flex>(other.path(), &Default::default()).unwrap();
    let (wa, wb) = (owt_hybrid::parameter_values(&a), owt_hybrid::parameter_values(&b));
    assert_eq!(wa.len(), wb.len());
    let gap = wa
        .iter()
        .zip(&wb)
        .map(|((_, x), (_, y))| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).fold(0f64, |m, (p, q)| m.max((p - q).abs()))
        })
        .fold(0f64, f64::max);
    // A resume that retrained from epoch 0 would end where the fresh run ends (gap ~1e-7).
    assert!(gap > 1e-3, "the resumed run ended {gap:e} from a fresh run: it did not start from the checkpoint");
}

#[test]
fn resume_refuses_a_different_run() {
    let _turn = serial();
    let data = splits(32);
    let dir = tempfile::tempdir().unwrap();
    train::<B, _>(
        &config(1, Head::Softmax),
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(dir.path(), false),
        &RunOptions::default(),
    )
    .unwrap();
    let mut other = config(2, Head::Softmax);
    other.batch = 16;
    let e = train::<B, _>(
        &other,
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(dir.path(), true),
        &RunOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("this command has --batch 16, the checkpoint was trained with --batch 32"), "{e}");
}

#[test]
fn checkpoints_are_written_atomically_and_validated_on_read() {
    let _turn = serial();
    let data = splits(32);
    let dir = tempfile::tempdir().unwrap();
    train::<B, _>(
        &config(1, Head::Softmax),
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(dir.path(), false),
        &RunOptions::default(),
    )
    .unwrap();
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "temporary files left behind: {names:?}");
    let path = dir.path().join(CHECKPOINT_FILE);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(Checkpoint::load(dir.path()).unwrap().state.epochs_done, 1);
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let e = Checkpoint::load(dir.path()).err().unwrap().to_string();
    assert!(e.contains("truncated"), "{e}");
    std::fs::write(&path, b"PK\x03\x04 something else").unwrap();
    let e = Checkpoint::load(dir.path()).err().unwrap().to_string();
    assert!(e.contains("not an owt checkpoint"), "{e}");
}

#[test]
fn bad_settings_are_rejected_before_training() {
    let _turn = serial();
    let data = splits(32);
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(1, Head::Softmax);
    c.batch = 0;
    let e = train::<B, _>(
        &c,
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(dir.path(), false),
        &RunOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--batch must be at least 1, got 0"), "{e}");
    let mut c = config(1, Head::Softmax);
    c.model = ModelSpec::new(ModelKind::AlexNetOwt);
    let e = train::<B, _>(
        &c,
        &data,
        &SingleDevice::<B>::new(Default::default()),
        &quiet(dir.path(), false),
        &RunOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("[N, 3, 224, 224]") && e.contains("[N, 1, 28, 28]"), "{e}");
}

/// A schedule's rate per epoch is in the metrics, and a resumed run continues it exactly: the
/// step schedule divides after epoch 1 and 2 whether or not the run stopped in between, and
/// plateau re-derives its state (best loss, epochs without improvement) from the checkpoint's
/// test losses, landing on the rates an uninterrupted run used.
#[test]
fn a_resumed_run_continues_its_learning_rate_schedule() {
    use owt::train::{LrScaling, LrSchedule};
    let _turn = serial();
    let data = splits(64);
    let single = SingleDevice::<B>::new(Default::default());
    for (schedule, lr) in [(LrSchedule::Step(vec![1, 2]), 0.01), (LrSchedule::Plateau { patience: 1 }, 0.3)] {
        let run = |epochs| TrainConfig {
            lr,
            lr_schedule: schedule.clone(),
            // Scaled 32/64 = half the given rate.
            lr_scaling: LrScaling::Linear,
            base_batch: 64,
            ..config(epochs, Head::Softmax)
        };
        let straight = tempfile::tempdir().unwrap();
        let full =
            train::<B, _>(&run(6), &data, &single, &quiet(straight.path(), false), &RunOptions::default()).unwrap();
        let split = tempfile::tempdir().unwrap();
        train::<B, _>(&run(3), &data, &single, &quiet(split.path(), false), &RunOptions::default()).unwrap();
        let resumed =
            train::<B, _>(&run(6), &data, &single, &quiet(split.path(), true), &RunOptions::default()).unwrap();
        let rates = |m: &[owt::train::EpochMetrics]| m.iter().map(|e| e.lr.unwrap()).collect::<Vec<_>>();
        let (a, b) = (rates(&full), rates(&resumed));
        assert_eq!(a, b, "{schedule}: rates of the straight run vs the resumed one");
        // The rates are the schedule's on the losses the run saw, at half the given rate.
        let losses: Vec<f64> = full.iter().map(|e| e.test_loss).collect();
        let expected: Vec<f64> = (0..6).map(|e| schedule.rate(lr / 2.0, e, &losses)).collect();
        assert_eq!(a, expected, "{schedule}: test losses {losses:?}");
        // Both schedules divide within the run (plateau: measured after epochs 4 and 5, past
        // the resume after epoch 3), so a trainer that ignored them would fail here.
        assert!(a[5] < a[0], "{schedule}: no division in {a:?} (test losses {losses:?})");
        if let LrSchedule::Step(_) = schedule {
            let tenth = |x: f64, y: f64| (x / y - 10.0).abs() < 1e-12;
            assert!(tenth(a[0], a[1]) && tenth(a[1], a[2]) && a[2..].iter().all(|r| *r == a[2]), "{a:?}");
        } else {
            assert!(a[5] < a[2], "{schedule}: no division after the resume in {a:?} (test losses {losses:?})");
        }
        for (x, y) in full.iter().zip(&resumed) {
            let close = |p: f64, q: f64| (p - q).abs() <= 1e-6 * p.abs().max(1.0);
            assert!(close(x.train_loss, y.train_loss) && close(x.test_loss, y.test_loss), "{x:?} vs {y:?}");
        }
        // metrics.json carries the rate of each epoch.
        let json: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(split.path().join("metrics.json")).unwrap()).unwrap();
        assert_eq!(json.iter().map(|e| e["lr"].as_f64().unwrap()).collect::<Vec<_>>(), b);
    }
}

/// A training split that records, for each batch it prepares, the images asked for and the
/// first value its random generator gives (where the batch's crops and flips start).
struct Recording {
    inner: Arc<dyn owt::data::ImageSource>,
    log: std::sync::Mutex<Vec<(Vec<usize>, u64)>>,
}

impl owt::data::ImageSource for Recording {
    fn len(&self) -> usize {
        self.inner.len()
    }

    fn image_dims(&self) -> [usize; 3] {
        self.inner.image_dims()
    }

    fn classes(&self) -> usize {
        self.inner.classes()
    }

    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> owt::data::Batch {
        if augment {
            self.log.lock().unwrap().push((indices.to_vec(), rng.next_u64()));
        }
        self.inner.batch(indices, augment, rng)
    }
}

/// Trains `epochs` epochs (resuming from `dir` when asked) and returns each epoch's draws:
/// the order of its images and the first random value of each of its batches. One worker
/// prepares the batches, so the source is asked for the images in the epoch's order (that
/// more workers prepare the same batches is tests/owt/jpeg_pipeline.rs's).
fn draws_of(dir: &std::path::Path, epochs: usize, resume: bool) -> Vec<(Vec<usize>, Vec<u64>)> {
    let recording = Arc::new(Recording { inner: splits(64).train, log: Default::default() });
    let data = Splits { train: recording.clone(), test: splits(64).test };
    let c = TrainConfig { epochs, ..config(epochs, Head::Softmax) };
    let opts = RunOptions { workers: 1, ..RunOptions::default() };
    train::<B, _>(&c, &data, &SingleDevice::<B>::new(Default::default()), &quiet(dir, resume), &opts).unwrap();
    let log = recording.log.lock().unwrap();
    // One entry per image (each image's crops and flips have their own generator), 64 an epoch.
    log.chunks(64)
        .map(|e| (e.iter().flat_map(|(i, _)| i.clone()).collect(), e.iter().map(|(_, r)| *r).collect()))
        .collect()
}

#[test]
fn every_epoch_draws_a_new_order_and_new_crops_and_a_resumed_epoch_the_same_ones() {
    let _turn = serial();
    let dir = tempfile::tempdir().unwrap();
    // 64 images in batches of 32: two steps an epoch.
    let whole = draws_of(dir.path(), 2, false);
    assert_eq!(whole.len(), 2);
    for (order, _) in &whole {
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..64).collect::<Vec<_>>(), "an epoch sees every image once");
    }
    assert_ne!(whole[0].0, whole[1].0, "the second epoch repeats the first one's order");
    assert_ne!(whole[0].1, whole[1].1, "the second epoch repeats the first one's crops and flips");
    assert_ne!(whole[0].1[0], whole[0].1[1], "a batch repeats the previous one's crops and flips");
    let dir = tempfile::tempdir().unwrap();
    let first = draws_of(dir.path(), 1, false);
    let resumed = draws_of(dir.path(), 2, true);
    assert_eq!(first[0], whole[0]);
    assert_eq!(resumed, vec![whole[1].clone()], "a resumed epoch draws what the uninterrupted run drew");
}
