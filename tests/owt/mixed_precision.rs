//! Mixed precision (issue 42 point 3): the forward and backward passes in bf16 or f16 on f32
//! master weights, on Flex (which computes in both) alone and on a mesh; f16's dynamic loss
//! scale skips a step whose gradients overflow and leaves the weights and momentum as they
//! were.

use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::prelude::*;
use owt::train::precision::{LossScale, Precision};
use owt::train::{sgd, AccumulatedStep, TrainConfig};
use owt_hybrid::prelude::*;
use owt_hybrid::{parameter_values, Exchange, Hybrid, MeshDevice, MeshLayout, PlanKind, SingleDevice};
use owt_models::{AlexNet, DropoutKey, Head, ModelKind, ModelSpec};

type B = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

fn spec() -> ModelSpec {
    ModelSpec { dropout: Some(0.5), ..ModelSpec::new(ModelKind::AlexNetSmall) }
}

/// A deterministic batch of `n` images of AlexNetSmall's geometry and its labels.
fn batch(n: usize) -> (TensorData, TensorData) {
    let values = (0..n * 28 * 28).map(|i| ((i * 37 % 101) as f32 / 101.0 - 0.5) * 2.0).collect::<Vec<f32>>();
    (TensorData::new(values, [n, 1, 28, 28]), TensorData::new((0..n as i64).map(|i| i % 10).collect(), [n]))
}

/// `count` SGD steps in `precision` (a loss `scale` for f16) on `layout` from the weights
/// `start`; the weights after them and the scaler.
fn steps<BB: burn::tensor::backend::AutodiffBackend, L: StepLayout<BB>>(
    layout: &L,
    start: &[u8],
    precision: Precision,
    scale: Option<LossScale>,
    count: u64,
) -> (Vec<(String, Vec<f64>)>, Option<LossScale>) {
    let arch = spec().architecture().unwrap();
    let config = TrainConfig { batch: 8, ..TrainConfig::new(spec(), owt::data::DatasetKind::Synthetic) };
    let device = layout.device();
    let model: AlexNet<BB> = arch.try_init(device).unwrap();
    let model = model.load_record(owt::train::checkpoint::record_from_bytes::<BB, _>(start, device).unwrap());
    let mut model = layout.place_module(model).unwrap();
    let mut optim = sgd::<BB>(&config);
    let mut scaler = scale;
    for step in 0..count {
        let (x, y) = batch(8);
        let (x, y) =
            (layout.place_input(Tensor::from_data(x, device)), layout.place_labels(Tensor::from_data(y, device)));
        let s = scaler.map_or(1.0, |s| s.scale);
        let mut acc = AccumulatedStep::new(8, Head::Softmax, DropoutKey::new(5, step)).in_precision(precision, s);
        acc.micro_batch(layout, &model, x, y);
        model = acc.finish_with(layout, model, &mut optim, 0.05, scaler.as_mut()).0;
    }
    let dtype = model.fc6.weight.val().dtype();
    assert_eq!(dtype, burn::tensor::DType::F32, "{precision}: the masters stay f32");
    (parameter_values(&layout.compute_module(&model)), scaler)
}

/// The starting weights: Kaiming-uniform draws from a generator of this test's own. (Seeding
/// Flex's generator, which is the whole process's, raced with the other tests of the binary
/// that draw from it: the weights then differed from run to run, and at some of them f16's
/// first scaled step overflowed and was skipped.)
fn start() -> Vec<u8> {
    use burn::module::{ModuleMapper, Param};
    use rand::{Rng, SeedableRng};
    struct Draw(rand::rngs::StdRng);
    impl<B: Backend> ModuleMapper<B> for Draw {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let dims = tensor.dims();
            // Fan-in: a conv weight's [in, k, k], a Linear weight's rows ([in, out]); biases
            // take a small fixed bound.
            let bound = match D {
                4 => 1.0 / ((dims[1] * dims[2] * dims[3]) as f32).sqrt(),
                2 => 1.0 / (dims[0] as f32).sqrt(),
                _ => 0.05,
            };
            let values: Vec<f32> =
                (0..tensor.shape().num_elements()).map(|_| self.0.random_range(-bound..bound)).collect();
            let drawn = Tensor::from_data(TensorData::new(values, dims), &tensor.device());
            Param::from_mapped_value(id, drawn, mapper)
        }
    }
    let device = Default::default();
    let model: AlexNet<B> = spec().architecture().unwrap().try_init(&device).unwrap();
    let model = model.map(&mut Draw(rand::rngs::StdRng::seed_from_u64(3)));
    owt::train::checkpoint::record_to_bytes::<B, _>(model.into_record()).unwrap()
}

/// Largest over parameters of |a - b| / |b - start| in norm: the gap relative to the update.
fn update_gap(a: &[(String, Vec<f64>)], b: &[(String, Vec<f64>)], start: &[(String, Vec<f64>)]) -> f64 {
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
    a.iter()
        .zip(b)
        .zip(start)
        .map(|(((_, x), (_, y)), (_, s))| {
            norm(&mut x.iter().zip(y).map(|(p, q)| p - q)) / norm(&mut y.iter().zip(s).map(|(q, s)| q - s))
        })
        .fold(0.0, f64::max)
}

#[test]
fn bf16_and_f16_steps_update_f32_masters_close_to_f32_steps_on_one_device_and_a_mesh() {
    let weights = start();
    let one = SingleDevice::<B>::new(Default::default());
    let initial = initial(&weights);
    let (f32_weights, _) = steps(&one, &weights, Precision::F32, None, 1);
    let mut gaps = Vec::new();
    for (precision, scale) in [(Precision::Bf16, None), (Precision::F16, Some(LossScale::default()))] {
        let (low, scaler) = steps(&one, &weights, precision, scale, 1);
        let gap = update_gap(&low, &f32_weights, &initial);
        eprintln!("{precision} on one device: update gap {gap:.2e} against f32");
        // Measured 2026-12-06 (one step of AlexNetSmall from `start`'s weights): bf16 1.4e-1,
        // f16 6.4e-2 of the update's norm, the gap growing from the loss backwards (fc8 1%,
        // conv1 15% in bf16) as every activation and gradient is rounded on the way; a lost
        // cast or scale is off by the whole update.
        assert!(gap > 0.0 && gap < 0.3, "{precision}: {gap:e}");
        if let Some(s) = scaler {
            assert_eq!((s.scale, s.good_steps, s.skipped_steps), (LossScale::INITIAL, 1, 0), "{precision}");
        }
        gaps.push(gap);
        // The same step on 2 ranks under the weird trick, in the same precision: close to one
        // device's (only the order of sums differs), its masters f32 as well.
        let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
        let layout = MeshLayout::<Flex>::new(mesh.clone(), PlanKind::WeirdTrick.plan(), Exchange::AllGather);
        let (on_mesh, _) = steps::<H, _>(&layout, &weights, precision, scale, 1);
        let gap = update_gap(&on_mesh, &low, &initial);
        eprintln!("{precision} on 2 ranks: update gap {gap:.2e} against one device");
        assert!(gap < 0.05, "{precision} on a mesh: {gap:e}");
    }
    assert!(gaps[1] < gaps[0], "f16's 11 bits of mantissa round less than bf16's 8: {gaps:?}");
}

#[test]
fn activities_cross_in_the_compute_precision_and_gradient_sums_in_f32() {
    let weights = start();
    let ledger = |precision| {
        let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
        let layout = MeshLayout::<Flex>::new(mesh.clone(), PlanKind::WeirdTrick.plan(), Exchange::AllGather);
        let _ = steps::<H, _>(&layout, &weights, precision, None, 2);
        mesh.ledger_snapshot()
    };
    let (full, low) = (ledger(Precision::F32), ledger(Precision::Bf16));
    for layer in ["fc6", "fc7", "fc8"] {
        let phase = format!("{layer}:forward");
        assert_eq!(low.by_phase(&phase).bytes * 2, full.by_phase(&phase).bytes, "{phase}: bf16 activities");
    }
    for layer in ["conv1", "conv5"] {
        let phase = format!("{layer}:sync");
        assert_eq!(low.by_phase(&phase).bytes, full.by_phase(&phase).bytes, "{phase}: f32 gradients");
    }
}

#[test]
fn an_f16_step_whose_gradients_overflow_is_skipped_and_the_scale_halved() {
    let weights = start();
    let one = SingleDevice::<B>::new(Default::default());
    let initial = initial(&weights);
    // 2^40 times the loss overflows f16 (largest 65504) in the backward pass: both steps skip.
    let huge = LossScale { scale: 2f64.powi(40), good_steps: 7, skipped_steps: 0 };
    let (after, scaler) = steps(&one, &weights, Precision::F16, Some(huge), 2);
    let s = scaler.unwrap();
    assert_eq!((s.scale, s.good_steps, s.skipped_steps), (2f64.powi(38), 0, 2));
    assert!(after == initial, "skipped steps leave the weights as they were");
    // From GradScaler's first scale, 2^16, these weights' two steps fit: the scale stays and
    // counts them as good steps.
    let (_, scaler) = steps(&one, &weights, Precision::F16, Some(LossScale::default()), 2);
    let s = scaler.unwrap();
    assert_eq!((s.scale, s.good_steps, s.skipped_steps), (LossScale::INITIAL, 2, 0));
    let (moved, _) = steps(&one, &weights, Precision::F32, None, 1);
    assert!(moved != initial, "an applied step moves them");
}

/// The parameters of the model `weights` hold.
fn initial(weights: &[u8]) -> Vec<(String, Vec<f64>)> {
    let device = Default::default();
    let model: AlexNet<B> = spec().architecture().unwrap().try_init(&device).unwrap();
    parameter_values(&model.load_record(owt::train::checkpoint::record_from_bytes::<B, _>(weights, &device).unwrap()))
}
