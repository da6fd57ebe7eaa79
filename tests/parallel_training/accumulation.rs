//! Gradient accumulation (issue 42 point 2): a step over N micro-batches of B images equals one
//! step over the batch of N x B, in f64 within 1e-10, on one device and on every mesh (the
//! weird trick's schemes, data parallelism, a 2-D mesh): the dropout masks of each micro-batch
//! are its rows' in the whole batch, the losses are weighted by their share, momentum and the
//! rate move once per optimizer step. The gradient sums cross ranks once per optimizer step:
//! the sync entries of the ledger are those of one batch, while the activity exchanges happen
//! per micro-batch (the same bytes in N times the messages).

use super::*;
use owt::train::AccumulatedStep;
use owt_hybrid::LedgerSnapshot;

/// `steps` optimizer steps from `weights`, each over batch `step` of the stream in `accum`
/// consecutive micro-batches, at a rate that changes every step (a schedule counted in
/// optimizer steps); every parameter's final values, each step's loss and the last step's
/// ledger on a mesh.
fn accumulated<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
    steps: usize,
    accum: usize,
) -> (Vec<(String, Vec<f64>)>, Vec<f64>, Option<LedgerSnapshot>) {
    let arch = config.model.architecture().unwrap();
    let device = layout.device();
    let mut model = placed_model(layout, config, weights);
    let mut optim = sgd::<B>(config);
    let (n, micro) = (config.batch, config.batch / accum);
    let mut losses = Vec::new();
    let mut ledger = None;
    for step in 0..steps {
        layout.reset_traffic();
        let (x, y) = batch(step, n, arch.input, arch.classes);
        let mut acc = AccumulatedStep::new(n, config.head, DropoutKey::new(config.seed, step as u64));
        for m in 0..accum {
            let rows = m * micro..(m + 1) * micro;
            let xm = layout.place_input(Tensor::from_data(host_rows(&x, rows.clone()), device));
            let ym = layout.place_labels(Tensor::from_data(host_rows(&y, rows), device));
            acc.micro_batch(layout, &model, xm, ym);
        }
        let lr = config.lr * (1.0 + step as f64 / 2.0);
        let (next, outcome) = acc.finish(layout, model, &mut optim, lr);
        model = next;
        ledger = layout.traffic();
        losses.push(outcome.read().0);
    }
    (parameter_values(&layout.compute_module(&model)), losses, ledger)
}

fn mesh(k: usize) -> MeshDevice<burn::backend::flex::FlexDevice> {
    let mesh = MeshDevice::virtual_ranks(Default::default(), k);
    use_f64::<H>(&mesh);
    mesh
}

#[test]
fn micro_batches_sum_to_one_batch_on_one_device_and_every_mesh() {
    let spec = small(2);
    let config = config(spec.clone(), 16, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let one = SingleDevice::<Ref>::new(Default::default());
    let (want, want_losses, _) = accumulated::<Ref, _>(&one, &config, &weights, 3, 1);
    // The step without accumulation is the one train_step takes.
    let (plain, _) = run::<Ref, _>(&one, &config, &weights, 1);
    let (first, _, _) = accumulated::<Ref, _>(&one, &config, &weights, 1, 1);
    assert!(plain == first, "one micro-batch is train_step's step, bit for bit");
    let check = |what: &str, got: &(Vec<(String, Vec<f64>)>, Vec<f64>, Option<LedgerSnapshot>)| {
        let (gap, worst) = relative_gap(&got.0, &want);
        eprintln!("{what}: weight gap {gap:.2e} ({worst})");
        assert!(gap <= 1e-10, "{what}: {worst} differs by {gap:e} from one batch on one device");
        for (a, b) in got.1.iter().zip(&want_losses) {
            assert!((a - b).abs() <= 1e-10 * b.abs(), "{what}: losses {:?} against {want_losses:?}", got.1);
        }
    };
    for accum in [2, 4] {
        check(&format!("one device, {accum} micro-batches"), &accumulated::<Ref, _>(&one, &config, &weights, 3, accum));
    }
    for (k, plan, scheme) in [
        (2, PlanKind::WeirdTrick, Exchange::AllGather),
        (4, PlanKind::WeirdTrick, Exchange::Broadcast),
        (4, PlanKind::WeirdTrick, Exchange::Slices),
        (4, PlanKind::DataParallel, Exchange::AllGather),
    ] {
        let layout = MeshLayout::<Flex>::new(mesh(k), plan.plan(), scheme);
        let what = format!("{} K={k} scheme {}, 4 micro-batches", plan.name(), scheme.letter());
        check(&what, &accumulated::<H, _>(&layout, &config, &weights, 3, 4));
    }
    let plan = owt_hybrid::GridPlan::data_parallel_across(&PlanKind::WeirdTrick.plan());
    let nodes =
        on_grid([2, 2], &plan, Exchange::AllGather, |layout| accumulated::<H, _>(layout, &config, &weights, 3, 2));
    check("weird-trick on a (2, 2) mesh, 2 micro-batches", &nodes[0]);
}

#[test]
fn gradients_are_summed_across_ranks_once_per_optimizer_step() {
    let spec = small(2);
    let config = config(spec.clone(), 16, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    for (k, plan) in [(4, PlanKind::WeirdTrick), (2, PlanKind::DataParallel)] {
        let ledger = |accum| {
            let layout = MeshLayout::<Flex>::new(mesh(k), plan.plan(), Exchange::AllGather);
            accumulated::<H, _>(&layout, &config, &weights, 1, accum).2.unwrap()
        };
        let (one, four) = (ledger(1), ledger(4));
        assert_eq!(one.traffic.keys().collect::<Vec<_>>(), four.traffic.keys().collect::<Vec<_>>());
        let mut synced = 0;
        for (key @ (phase, collective), t1) in &one.traffic {
            let t4 = four.traffic[key];
            let what = format!("{} K={k}: {phase} {collective}", plan.name());
            match phase.stage {
                // The sums: once per optimizer step, as for one batch.
                Some(Stage::Sync) => {
                    assert_eq!((t4.bytes, t4.messages), (t1.bytes, t1.messages), "{what}");
                    synced += t4.bytes;
                }
                // The FC layers' activities: per micro-batch, a quarter of the rows each time.
                Some(_) if phase.layer.starts_with("fc") => {
                    assert_eq!((t4.bytes, t4.messages), (t1.bytes, 4 * t1.messages), "{what}");
                }
                _ => {}
            }
        }
        assert!(synced > 0, "{} K={k}: the gradients were summed", plan.name());
    }
}

#[test]
fn the_trainer_accumulates_to_the_same_epoch_short_last_step_included_and_resumes_with_another_count() {
    use owt::data::{synthetic_images, Splits};
    use owt::train::{load_model, train, RunOptions};
    use std::sync::Arc;
    let _ = initial_weights(&small(2)); // f64 on the Flex device
    let _guard = serial();
    // 40 images in steps of 16: 16, 16 and a short last step of 8 (2 micro-batches of 4).
    let splits = Splits {
        train: Arc::new(synthetic_images([1, 28, 28], 10, 40, 1)),
        test: Arc::new(synthetic_images([1, 28, 28], 10, 30, 2)),
    };
    let config = |epochs| TrainConfig { epochs, ..config(small(2), 16, FcUpdate::PerStep) };
    let layout = || MeshLayout::<Flex>::new(mesh(2), PlanKind::WeirdTrick.plan(), Exchange::AllGather);
    let run = |epochs, accum_steps, dir: &std::path::Path, resume| {
        let opts = RunOptions { accum_steps, ..RunOptions::default() };
        train::<H, _>(&config(epochs), &splits, &layout(), &run_dir(dir, resume), &opts).unwrap()
    };
    let (plain, accumulated) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let want = run(2, 1, plain.path(), false);
    let first = run(1, 4, accumulated.path(), false);
    // The second epoch resumed from the first's checkpoint with another count.
    let got = run(2, 2, accumulated.path(), true);
    assert_eq!(got[0].train_loss, first[0].train_loss);
    for (a, b) in got.iter().zip(&want) {
        for (x, y, what) in [(a.train_loss, b.train_loss, "train loss"), (a.test_loss, b.test_loss, "test loss")] {
            // The checkpoint between the epochs stores f32: the second epoch starts from weights
            // rounded to f32 (the first epoch's figures agree to f64's rounding).
            let bound = if a.epoch == 1 { 1e-10 } else { 1e-5 };
            assert!((x - y).abs() <= bound * y.abs(), "epoch {}: {what} {x} against {y}", a.epoch);
        }
        assert_eq!(a.train_accuracy, b.train_accuracy, "epoch {}", a.epoch);
    }
    let weights = |dir: &std::path::Path| parameter_values(&load_model::<Flex>(dir, &Default::default()).unwrap().0);
    let (gap, worst) = relative_gap(&weights(accumulated.path()), &weights(plain.path()));
    assert!(gap <= 1e-5, "{worst} differs by {gap:e}");
    // A batch that does not split evenly, or accumulation with per-chunk FC updates, is refused.
    let opts = RunOptions { accum_steps: 3, ..RunOptions::default() };
    let dir = tempfile::tempdir().unwrap();
    let e = train::<H, _>(&config(1), &splits, &layout(), &run_dir(dir.path(), false), &opts).unwrap_err();
    assert!(e.to_string().contains("--batch must be a multiple of 3, got 16"), "{e}");
    let per_chunk = TrainConfig { fc_update: FcUpdate::PerChunk, ..config(1) };
    let opts = RunOptions { accum_steps: 2, ..RunOptions::default() };
    let e = train::<H, _>(&per_chunk, &splits, &layout(), &run_dir(dir.path(), false), &opts).unwrap_err();
    assert!(e.to_string().contains("--fc-update per-chunk"), "{e}");
}

/// One device's change of every parameter at each step, each step's loss and the final
/// weights: what [`uneven_steps`] returns.
type StepChanges = (Vec<Vec<(String, Vec<f64>)>>, Vec<f64>, Vec<(String, Vec<f64>)>);

/// Optimizer steps from `weights`, step `i` over batch `i` of the stream (`steps[i]`'s sizes
/// summed) in consecutive micro-batches of `steps[i]`'s sizes: each step's change of every
/// parameter (the rate times the gradient at the first step, momentum added after), each
/// step's loss, and the final weights.
fn uneven_steps<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
    steps: &[&[usize]],
) -> StepChanges {
    let arch = config.model.architecture().unwrap();
    let device = layout.device();
    let mut model = placed_model(layout, config, weights);
    let mut optim = sgd::<B>(config);
    let mut before = parameter_values(&layout.compute_module(&model));
    let (mut changes, mut losses) = (Vec::new(), Vec::new());
    for (step, sizes) in steps.iter().enumerate() {
        let n: usize = sizes.iter().sum();
        let (x, y) = batch(step, n, arch.input, arch.classes);
        let mut acc = AccumulatedStep::new(n, config.head, DropoutKey::new(config.seed, step as u64));
        let mut start = 0;
        for &m in sizes.iter() {
            let rows = start..start + m;
            let xm = layout.place_input(Tensor::from_data(host_rows(&x, rows.clone()), device));
            let ym = layout.place_labels(Tensor::from_data(host_rows(&y, rows), device));
            acc.micro_batch(layout, &model, xm, ym);
            start += m;
        }
        let (next, outcome) = acc.finish(layout, model, &mut optim, config.lr);
        model = next;
        losses.push(outcome.read().0);
        let after = parameter_values(&layout.compute_module(&model));
        let change = after
            .iter()
            .zip(&before)
            .map(|((name, a), (_, b))| (name.clone(), a.iter().zip(b).map(|(p, q)| p - q).collect()))
            .collect();
        changes.push(change);
        before = after;
    }
    (changes, losses, before)
}

#[test]
fn uneven_micro_batches_step_as_one_batch_of_their_images_on_one_device_and_every_plan() {
    // An epoch's short last step under --batch 112 --accum-steps 4: 80 images as 28 + 28 + 24,
    // then 89 as 28 + 28 + 28 + 5 (the 5 split 3 + 2 over two ranks).
    let spec = small(2);
    let config = config(spec.clone(), 112, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let one = SingleDevice::<Ref>::new(Default::default());
    let (want_changes, want_losses, want) = uneven_steps::<Ref, _>(&one, &config, &weights, &[&[80], &[89]]);
    let micro: [&[usize]; 2] = [&[28, 28, 24], &[28, 28, 28, 5]];
    let check = |what: &str, (changes, losses, got): StepChanges| {
        for (step, (change, want_change)) in changes.iter().zip(&want_changes).enumerate() {
            let (gap, worst) = relative_gap(change, want_change);
            eprintln!("{what}: step {step} change gap {gap:.2e} ({worst})");
            assert!(gap <= 1e-10, "{what}: step {step}'s change of {worst} differs by {gap:e} from one batch's");
        }
        for (a, b) in losses.iter().zip(&want_losses) {
            assert!((a - b).abs() <= 1e-10 * b.abs(), "{what}: losses {losses:?} against {want_losses:?}");
        }
        let (gap, worst) = relative_gap(&got, &want);
        assert!(gap <= 1e-10, "{what}: {worst} differs by {gap:e} after the steps");
    };
    check("one device", uneven_steps::<Ref, _>(&one, &config, &weights, &micro));
    for (k, plan, scheme) in cases(true).into_iter().filter(|(k, ..)| *k == 2) {
        let layout = MeshLayout::<Flex>::new(mesh(k), plan.plan(), scheme);
        let what = format!("{} K={k} scheme {}", plan.name(), scheme.letter());
        check(&what, uneven_steps::<H, _>(&layout, &config, &weights, &micro));
    }
}

#[test]
fn an_epoch_whose_last_step_splits_unevenly_trains_as_without_accumulation() {
    use owt::data::{synthetic_images, Splits};
    use owt::train::{load_model, train, RunOptions};
    use std::sync::Arc;
    let _ = initial_weights(&small(2)); // f64 on the Flex device
    let _guard = serial();
    // 201 images in steps of 112: 112 (4 x 28), then 89 (28 + 28 + 28 + 5).
    let splits = Splits {
        train: Arc::new(synthetic_images([1, 28, 28], 10, 201, 1)),
        test: Arc::new(synthetic_images([1, 28, 28], 10, 30, 2)),
    };
    let config = config(small(2), 112, FcUpdate::PerStep);
    let one = || SingleDevice::<Ref>::new(Default::default());
    let two = || MeshLayout::<Flex>::new(mesh(2), PlanKind::WeirdTrick.plan(), Exchange::AllGather);
    let weights = |dir: &std::path::Path| parameter_values(&load_model::<Flex>(dir, &Default::default()).unwrap().0);
    let runs =
        [(1, "one device"), (4, "one device"), (1, "weird-trick K=2"), (4, "weird-trick K=2")].map(|(accum, what)| {
            let dir = tempfile::tempdir().unwrap();
            let opts = RunOptions { accum_steps: accum, ..RunOptions::default() };
            let metrics = if what == "one device" {
                train::<Ref, _>(&config, &splits, &one(), &run_dir(dir.path(), false), &opts).unwrap()
            } else {
                train::<H, _>(&config, &splits, &two(), &run_dir(dir.path(), false), &opts).unwrap()
            };
            (format!("{what}, --accum-steps {accum}"), metrics, weights(dir.path()))
        });
    let (_, want, want_weights) = &runs[0];
    for (what, metrics, got) in &runs[1..] {
        let (a, b) = (&metrics[0], &want[0]);
        for (x, y, name) in [(a.train_loss, b.train_loss, "train loss"), (a.test_loss, b.test_loss, "test loss")] {
            assert!((x - y).abs() <= 1e-10 * y.abs(), "{what}: {name} {x} against {y}");
        }
        assert_eq!((a.train_accuracy, a.test_accuracy), (b.train_accuracy, b.test_accuracy), "{what}");
        // The run directory stores f32: the weights agree to its rounding.
        let (gap, worst) = relative_gap(got, want_weights);
        assert!(gap <= 1e-6, "{what}: {worst} differs by {gap:e}");
    }
}
