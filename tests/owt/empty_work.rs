//! Full AlexNet training steps and evaluations whose batches leave some ranks without an image
//! (a batch or an evaluation remainder smaller than the mesh, uneven shards, scalar losses)
//! send no empty piece to the inner backend, fall back nowhere, and give the numbers one
//! device gives. CubeCL CUDA fails on a kernel launched over zero elements, so an empty piece
//! would crash a GPU run that the CPU backends finish.

use std::sync::Arc;

use burn::backend::{Autodiff, Flex};
use burn::module::{AutodiffModule, Module};
use burn::prelude::*;
use owt::data::{synthetic_images, Batch, ImageSource};
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt::train::input::Preparation;
use owt::train::{evaluate_with, sgd, train_step, upload_batch, upload_eval, FcUpdate, TrainConfig};
use owt_hybrid::prelude::*;
use owt_hybrid::{parameter_values, PlanKind};
use owt_hybrid::{Exchange, MeshLayout, SingleDevice, StepLayout};
use owt_hybrid::{Hybrid, MeshDevice};
use owt_models::{AlexNet, DropoutKey, Head, ModelKind, ModelSpec, PixelNorm};
use rand::SeedableRng;

type Ref = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

fn spec() -> ModelSpec {
    ModelSpec { dropout: Some(0.0), ..ModelSpec::new(ModelKind::AlexNetSmall) }
}

fn images(n: usize) -> Arc<dyn ImageSource> {
    Arc::new(synthetic_images([1, 28, 28], 10, n, 5))
}

fn batch_of(source: &Arc<dyn ImageSource>, n: usize) -> Batch {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    source.batch(&(0..n).collect::<Vec<_>>(), false, &mut rng)
}

/// One SGD step on `layout` from `weights`: the mean loss, the correct count and the weights.
fn step<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    weights: &[u8],
    fc_update: FcUpdate,
    batch: &Batch,
) -> (f64, usize, Vec<f64>) {
    let config =
        TrainConfig { batch: batch.len(), fc_update, ..TrainConfig::new(spec(), owt::data::DatasetKind::Synthetic) };
    let arch = spec().architecture().unwrap();
    let device = layout.device();
    let model: AlexNet<B> = arch.try_init(device).unwrap();
    let model = layout.place_module(model.load_record(record_from_bytes::<B, _>(weights, device).unwrap())).unwrap();
    let mut optim = sgd::<B>(&config);
    let (images, labels) = upload_batch(layout, batch, &PixelNorm::Symmetric);
    let (model, outcome) =
        train_step(layout, model, &mut optim, 0.01, config.head, fc_update, DropoutKey::new(0, 0), images, labels);
    let (loss, correct) = outcome.read();
    let weights = parameter_values(&model).into_iter().flat_map(|(_, v)| v).collect();
    (loss, correct, weights)
}

/// f32 weights against one device's: measured (2026-11-30) at most 6e-8 of the largest
/// magnitude (one rounding); 1e-5 leaves room for other summation orders.
fn assert_close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let gap = a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(gap <= 1e-5 * scale.max(1.0), "{what}: weights differ by {gap}");
}

#[test]
fn steps_with_fewer_images_than_ranks_send_no_empty_work() {
    let arch = spec().architecture().unwrap();
    let device = Default::default();
    <Ref as Backend>::seed(&device, 2);
    let model: AlexNet<Ref> = arch.try_init(&device).unwrap();
    let weights = record_to_bytes::<Ref, _>(model.into_record()).unwrap();
    let source = images(8);
    for k in [2, 3, 4] {
        // Batches smaller than K, and one that splits unevenly.
        for n in (1..k).chain([k + 1]) {
            let batch = batch_of(&source, n);
            let single = step(&SingleDevice::<Ref>::new(device), &weights, FcUpdate::PerStep, &batch);
            for (plan, fc_update) in [
                (PlanKind::WeirdTrick, FcUpdate::PerStep),
                (PlanKind::DataParallel, FcUpdate::PerStep),
                (PlanKind::WeirdTrick, FcUpdate::PerChunk),
            ] {
                let what = format!("K={k}, {n} images, {} {}", plan.name(), fc_update.name());
                let layout =
                    MeshLayout::<Flex>::new(MeshDevice::virtual_ranks(device, k), plan.plan(), Exchange::Slices);
                let (loss, correct, params) = step(&layout, &weights, fc_update, &batch);
                let ledger = layout.traffic().unwrap();
                assert_eq!(ledger.total_empty_ops(), 0, "{what}: {:?}", ledger.empty_ops);
                assert_eq!(ledger.total_fallbacks(), 0, "{what}: {:?}", ledger.fallbacks);
                if fc_update == FcUpdate::PerStep {
                    assert!((loss - single.0).abs() <= 1e-5 * single.0.abs(), "{what}: loss {loss} vs {}", single.0);
                    assert_eq!(correct, single.1, "{what}");
                    assert_close(&params, &single.2, &what);
                } else {
                    // Later chunks see FC weights updated by earlier ones: not one device's step.
                    assert!(loss.is_finite() && correct <= n, "{what}: loss {loss}, {correct} correct");
                }
            }
        }
    }
}

#[test]
fn evaluation_remainders_smaller_than_the_mesh_send_no_empty_work() {
    let arch = spec().architecture().unwrap();
    let device = Default::default();
    let model: AlexNet<Flex> = arch.try_init(&device).unwrap();
    let weights = record_to_bytes::<Flex, _>(model.clone().into_record()).unwrap();
    // 500-image evaluation batches: a remainder of 1 image.
    let source = images(owt::train::EVAL_BATCH + 1);
    let single = SingleDevice::<Ref>::new(device);
    let want =
        evaluate_with(&model, Head::Softmax, &source, owt::train::EVAL_BATCH, Preparation::one_thread(2), &|b| {
            upload_eval(&single, b, &PixelNorm::Symmetric)
        })
        .unwrap();
    for k in [2, 3, 4] {
        let layout = MeshLayout::<Flex>::new(
            MeshDevice::virtual_ranks(device, k),
            PlanKind::WeirdTrick.plan(),
            Exchange::AllGather,
        );
        let mesh = layout.device().clone();
        let hmodel: AlexNet<H> = arch.try_init(&mesh).unwrap();
        let hmodel =
            layout.place_module(hmodel.load_record(record_from_bytes::<H, _>(&weights, &mesh).unwrap())).unwrap();
        layout.reset_traffic();
        let got = evaluate_with(
            &hmodel.valid(),
            Head::Softmax,
            &source,
            owt::train::EVAL_BATCH,
            Preparation::one_thread(2),
            &|b| upload_eval(&layout, b, &PixelNorm::Symmetric),
        )
        .unwrap();
        let ledger = layout.traffic().unwrap();
        assert_eq!(ledger.total_empty_ops(), 0, "K={k}: {:?}", ledger.empty_ops);
        assert_eq!(ledger.total_fallbacks(), 0, "K={k}: {:?}", ledger.fallbacks);
        assert_eq!(got.images, want.images);
        assert_eq!(got.accuracy, want.accuracy, "K={k}");
        assert!((got.loss - want.loss).abs() <= 1e-5 * want.loss, "K={k}: {} vs {}", got.loss, want.loss);
    }
}

/// Burn's own kernels (single-device runs, autodiff, the optimizer) can launch over zero
/// cubes too, where no `Hybrid` rule sees them: the cubecl-runtime linked is owt's patched copy
/// (vendor/README.md), whose every launch returns at once for a grid with a zero axis. Without
/// the patch this does not build (`SKIPS_EMPTY_LAUNCHES` is owt's).
#[cfg(feature = "wgpu")]
#[test]
fn the_linked_cubecl_runtime_skips_launches_over_zero_cubes() {
    use cubecl_runtime::server::{CubeCount, SKIPS_EMPTY_LAUNCHES};
    assert!(SKIPS_EMPTY_LAUNCHES);
    for empty in [CubeCount::Static(0, 1, 1), CubeCount::Static(4, 0, 1), CubeCount::Static(1, 1, 0)] {
        assert!(empty.is_empty(), "{empty:?}");
    }
    assert!(!CubeCount::Static(1, 1, 1).is_empty());
}
