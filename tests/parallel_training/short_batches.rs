//! Batches with fewer rows than a 2-D mesh has nodes, ranks or both (an epoch's last batch,
//! in training and in evaluation) train and evaluate as one device does, in f64: such a batch
//! is whole on every node (as a dimension shorter than a 1-D mesh stays whole), and a node
//! whose block is shorter than its local mesh keeps its block whole inside the node.
//! (Issue 39: the node uploading its rows asserted, and every epoch ending so aborted.)

use super::*;
use owt::data::{synthetic_images, Splits};
use owt::train::{load_model, train, EpochMetrics};
use owt_hybrid::GridPlan;
use std::sync::Arc;

/// The remainders each mesh is held to: 1, nodes - 1, and one that gives every node rows but
/// leaves some with fewer than their local ranks.
fn remainders(shape: [usize; 2]) -> Vec<usize> {
    let [n, l] = shape;
    let mut r = vec![1, n - 1, n + 1];
    assert!(n + 1 < n * l, "{shape:?}: n + 1 leaves a node with fewer rows than local ranks");
    r.dedup();
    r
}

/// The weird trick inside each node, data parallelism across: the plan most runs use.
fn weird_trick() -> GridPlan {
    GridPlan::data_parallel_across(&PlanKind::WeirdTrick.plan())
}

#[test]
fn short_batches_on_two_dimensional_meshes_step_to_the_single_device_weights() {
    // Steps of 8, then the short one, then 8 again (the step after must start from the same
    // weights): the weights and every step's loss as one device's, within 1e-12 (f64).
    let spec = small(2);
    let config = config(spec.clone(), 8, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    // Under FSDP a short batch whole on every node must cut its gradient, not sum it.
    let (dp, fsdp) = (weird_trick(), fsdp_weird_trick());
    for (shape, plan) in [([3, 2], &dp), ([2, 2], &dp), ([3, 2], &fsdp), ([2, 2], &fsdp)] {
        for r in remainders(shape) {
            let sizes = [8, r, 8];
            let (want, want_losses) =
                run_batches::<Ref, _>(&SingleDevice::<Ref>::new(Default::default()), &config, &weights, &sizes);
            let nodes = on_grid(shape, plan, Exchange::AllGather, |layout| {
                run_batches::<H, _>(layout, &config, &weights, &sizes)
            });
            for (node, (got, losses)) in nodes.iter().enumerate() {
                let (gap, worst) = relative_gap(got, &want);
                eprintln!("{shape:?} {} batches {sizes:?}: node {node} weight gap {gap:.2e} ({worst})", plan.name);
                assert!(
                    gap <= 1e-12,
                    "{shape:?} {} batches {sizes:?}: node {node}'s {worst} differs by {gap:e}",
                    plan.name
                );
                for (a, b) in losses.iter().zip(&want_losses) {
                    assert!(
                        (a - b).abs() <= 1e-12 * b.abs(),
                        "{shape:?} {sizes:?}: losses {losses:?} vs {want_losses:?}"
                    );
                }
            }
        }
    }
}

/// Two epochs of `splits` trained by the trainer on a `shape` mesh (nodes as threads), every
/// node's metrics; node 0 writes the checkpoint to `out`.
fn grid_train(
    shape: [usize; 2],
    config: &TrainConfig,
    splits: &Splits,
    out: &std::path::Path,
) -> Vec<Vec<EpochMetrics>> {
    let dir = run_dir(out, false);
    on_grid(shape, &weird_trick(), Exchange::AllGather, |layout| {
        train::<H, _>(config, splits, layout, &dir, &Default::default()).unwrap()
    })
}

#[test]
fn epochs_ending_in_short_batches_train_and_evaluate_on_two_dimensional_meshes_as_on_one_device() {
    let _ = initial_weights(&small(2)); // f64 on the Flex device
                                        // The trainer seeds the generator and initialises the model itself (each node under its
                                        // own lock): the whole test holds this one too, against the other tests' draws.
    let _guard = serial();
    let spec = small(2);
    let batch = 8;
    let config = TrainConfig { epochs: 2, ..config(spec, batch, FcUpdate::PerStep) };
    for shape in [[3, 2], [2, 2]] {
        for r in remainders(shape) {
            // The train split ends in a batch of r, the test split in one of r too (a test
            // batch of 1 on a (2, 2) mesh was the evaluation's abort).
            let splits = Splits {
                train: Arc::new(synthetic_images([1, 28, 28], 10, 2 * batch + r, 1)),
                test: Arc::new(synthetic_images([1, 28, 28], 10, batch + r, 2)),
            };
            let one = tempfile::tempdir().unwrap();
            let single = SingleDevice::<Ref>::new(Default::default());
            let want =
                train::<Ref, _>(&config, &splits, &single, &run_dir(one.path(), false), &Default::default()).unwrap();
            let mesh = tempfile::tempdir().unwrap();
            let nodes = grid_train(shape, &config, &splits, mesh.path());
            for (node, got) in nodes.iter().enumerate() {
                assert_eq!(got.len(), 2, "{shape:?} r={r}: node {node} trained both epochs");
                for (g, w) in got.iter().zip(&want) {
                    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-300);
                    eprintln!(
                        "{shape:?} r={r} node {node} epoch {}: train loss {:.6} (one device {:.6}), test loss {:.6} ({:.6})",
                        g.epoch, g.train_loss, w.train_loss, g.test_loss, w.test_loss
                    );
                    assert!(close(g.train_loss, w.train_loss), "{shape:?} r={r}: train loss {g:?} vs {w:?}");
                    assert!(close(g.test_loss, w.test_loss), "{shape:?} r={r}: test loss {g:?} vs {w:?}");
                    assert_eq!(g.train_accuracy, w.train_accuracy, "{shape:?} r={r}: train accuracy");
                    assert_eq!(g.test_accuracy, w.test_accuracy, "{shape:?} r={r}: test accuracy");
                }
            }
            // The checkpoints hold f32: equal to f32 rounding.
            let (a, _) = load_model::<Flex>(mesh.path(), &Default::default()).unwrap();
            let (b, _) = load_model::<Flex>(one.path(), &Default::default()).unwrap();
            let (gap, worst) = relative_gap(&parameter_values(&a), &parameter_values(&b));
            assert!(gap <= 1e-6, "{shape:?} r={r}: checkpointed {worst} differs by {gap:e}");
        }
    }
}
