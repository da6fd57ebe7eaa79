//! f64 training steps shared by the test binaries that compare a parallel run with one
//! device (`tests/parallel_training`, and `tests/mpi` for a mesh across processes): the
//! deterministic batches, the seeded starting weights, a run of SGD steps through any
//! `StepLayout`, and the gap between two runs' weights. Each binary uses a part of it.
#![allow(dead_code)]

use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::prelude::*;
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt::train::{sgd, train_step, FcUpdate, TrainConfig};
use owt_hybrid::{parameter_values, StepLayout};
use owt_models::{AlexNet, DropoutKey, ModelKind, ModelSpec};

pub(crate) type Ref = Autodiff<Flex>;
pub(crate) type H = Autodiff<owt_hybrid::Hybrid<Flex>>;

/// Flex's random generator is process-global: every draw from it (a model's initialisation)
/// happens under this lock, so a seeded sequence (seed, then initialise) is never broken into
/// by another test's draw. The training steps draw nothing (dropout masks are counter-based),
/// so the long equivalence runs go on side by side.
pub(crate) static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn config(model: ModelSpec, batch: usize, fc_update: FcUpdate) -> TrainConfig {
    TrainConfig { batch, seed: 3, fc_update, ..TrainConfig::new(model, owt::data::DatasetKind::Synthetic) }
}

pub(crate) fn small(towers: usize) -> ModelSpec {
    ModelSpec { towers: Some(towers), dropout: Some(0.5), ..ModelSpec::new(ModelKind::AlexNetSmall) }
}

pub(crate) fn owt_reduced() -> ModelSpec {
    ModelSpec { input: Some(67), classes: Some(16), dropout: Some(0.5), ..ModelSpec::new(ModelKind::AlexNetOwt) }
}

/// Batch `step` of a deterministic stream: smooth images with a class-dependent pattern.
pub(crate) fn batch(step: usize, n: usize, dims: [usize; 3], classes: usize) -> (TensorData, TensorData) {
    let [c, h, w] = dims;
    let labels: Vec<i64> = (0..n).map(|i| ((i * 7 + step * 3) % classes) as i64).collect();
    let mut images = Vec::with_capacity(n * c * h * w);
    for (i, &y) in labels.iter().enumerate() {
        for ch in 0..c {
            for r in 0..h {
                for col in 0..w {
                    let phase = (step * 13 + i * 5 + ch) as f32 * 0.37;
                    let v = ((r as f32 * 0.3 + y as f32).sin() + (col as f32 * 0.2 + phase).cos()) * 0.5;
                    images.push(v);
                }
            }
        }
    }
    let images: Vec<f64> = images.into_iter().map(f64::from).collect();
    (TensorData::new(images, [n, c, h, w]), TensorData::new(labels, [n]))
}

/// Makes f64 the default float type of `device` (before its first tensor; later calls for the
/// same device are no-ops).
pub(crate) fn use_f64<B: Backend>(device: &B::Device) {
    let _ = burn::tensor::backend::set_default_float_dtype::<B>(device, burn::tensor::FloatDType::F64);
}

/// A model of `arch` on `device` whose weights are loaded next (its initialisation draws from
/// the shared generator, so it takes the lock).
pub(crate) fn init_model<B: Backend>(arch: &owt_models::Architecture, device: &B::Device) -> AlexNet<B> {
    let _guard = serial();
    arch.try_init(device).unwrap()
}

/// The starting weights of a run, as checkpoint bytes (drawn once on Flex, seeded).
pub(crate) fn initial_weights(spec: &ModelSpec) -> Vec<u8> {
    let _guard = serial();
    let arch = spec.architecture().unwrap();
    let device = Default::default();
    use_f64::<Ref>(&device);
    <Ref as Backend>::seed(&device, 11);
    let model: AlexNet<Ref> = arch.try_init(&device).unwrap();
    record_to_bytes::<Ref, _>(model.into_record()).unwrap()
}

/// Trains `steps` steps from `weights` with `layout`; returns every parameter's final values.
pub(crate) fn run<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
    steps: usize,
) -> (Vec<(String, Vec<f64>)>, Vec<f64>) {
    let (params, outcomes) = run_outcomes(layout, config, weights, steps);
    (params, outcomes.into_iter().map(|(loss, _)| loss).collect())
}

/// [`run`] with each step's loss and count of images classified right.
pub(crate) fn run_outcomes<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
    steps: usize,
) -> (Vec<(String, Vec<f64>)>, Vec<(f64, usize)>) {
    let arch = config.model.architecture().unwrap();
    if let Some(plan) = layout.plan() {
        let (ranks, batch) = layout.plan_mesh(config.batch);
        owt::parallel::check_run(plan, &arch, ranks, batch).unwrap();
    }
    let device = layout.device();
    let placed =
        |x, y| (layout.place_input(Tensor::from_data(x, device)), layout.place_labels(Tensor::from_data(y, device)));
    steps_of(layout, config, weights, &vec![config.batch; steps], placed)
}

/// SGD steps from `weights` with `layout`, step `i` on batch `i` of `sizes[i]` images brought
/// to the device by `feed` (images, labels); every parameter's final values and each step's
/// loss and count of images classified right.
fn steps_of<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
    sizes: &[usize],
    feed: impl Fn(TensorData, TensorData) -> (Tensor<B, 4>, Tensor<B, 1, Int>),
) -> (Vec<(String, Vec<f64>)>, Vec<(f64, usize)>) {
    let arch = config.model.architecture().unwrap();
    let mut model = placed_model(layout, config, weights);
    let mut optim = sgd::<B>(config);
    let mut losses = Vec::new();
    for (step, &n) in sizes.iter().enumerate() {
        let (x, y) = batch(step, n, arch.input, arch.classes);
        let (x, y) = feed(x, y);
        let key = DropoutKey::new(config.seed, step as u64);
        let (next, outcome) =
            train_step(layout, model, &mut optim, config.lr, config.head, config.fc_update, key, x, y);
        model = next;
        losses.push(outcome.read());
    }
    // The whole weights (a layout that stores slices gathers them: a collective there).
    (parameter_values(&layout.compute_module(&model)), losses)
}

/// `config`'s model with the starting weights `weights`, placed by `layout`.
pub(crate) fn placed_model<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
) -> AlexNet<B> {
    let device = layout.device();
    let model: AlexNet<B> = init_model(&config.model.architecture().unwrap(), device);
    let model = model.load_record(record_from_bytes::<B, _>(weights, device).unwrap());
    layout.place_module(model).unwrap()
}

/// Rows `rows` of `data` (along dimension 0).
pub(crate) fn host_rows(data: &TensorData, rows: std::ops::Range<usize>) -> TensorData {
    let total = data.shape[0];
    let per_row = data.as_bytes().len() / total.max(1);
    let mut shape = data.shape.clone();
    shape[0] = rows.len();
    TensorData::from_bytes_vec(data.as_bytes()[rows.start * per_row..rows.end * per_row].to_vec(), shape, data.dtype)
}

/// [`run`] with batch `step` of `sizes[step]` images, each brought to the device as the
/// trainer does: this process's (or node's) rows only, those [`StepLayout::row_split`] names.
pub(crate) fn run_batches<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
    sizes: &[usize],
) -> (Vec<(String, Vec<f64>)>, Vec<f64>) {
    let rows_of = |x: TensorData, y: TensorData| {
        let n = x.shape[0];
        let rows = layout.row_split().rows(n);
        let x = layout.upload_input_rows::<4>(host_rows(&x, rows.clone()), rows.clone(), n);
        (x, layout.upload_labels_rows::<1>(host_rows(&y, rows.clone()), None, rows, n))
    };
    let (params, outcomes) = steps_of(layout, config, weights, sizes, rows_of);
    (params, outcomes.into_iter().map(|(loss, _)| loss).collect())
}
