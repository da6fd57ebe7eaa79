//! Batch normalisation on a mesh: VGG-11-BN (f64, 32x32) under data parallelism and the weird
//! trick at K = 2 and 4 trains to one device's weights, its running means and variances equal
//! one device's on every rank: on a batch split by rows the statistics are reductions over the
//! split dimension, so each is the whole batch's (PyTorch's `SyncBatchNorm`).

use burn::prelude::*;
use owt::train::{sgd, train_step, FcUpdate};
use owt_hybrid::{parameter_values, Exchange, MeshDevice, MeshLayout, PlanKind, SingleDevice, StepLayout};
use owt_models::{ConvNet, DropoutKey, ModelKind, ModelSpec};

use super::*;

fn vgg11_bn() -> ModelSpec {
    ModelSpec {
        input: Some(32),
        channels: Some(1),
        classes: Some(10),
        hidden: Some(32),
        dropout: Some(0.5),
        ..ModelSpec::new(ModelKind::Vgg11Bn)
    }
}

/// Every batch normalisation's running statistics, by path, as f64.
fn running_statistics<B: Backend>(model: &ConvNet<B>) -> Vec<(String, Vec<f64>)> {
    let arch = &model.architecture;
    let mut out = Vec::new();
    for n in 1..=arch.convs.len() {
        let bn = model.norm(n);
        let name = arch.stage_name(owt_models::Stage::BatchNorm(n));
        for (what, state) in [("running_mean", &bn.running_mean), ("running_var", &bn.running_var)] {
            out.push((format!("{name}.{what}"), state.value_sync().into_data().convert::<f64>().to_vec().unwrap()));
        }
    }
    out
}

/// Steps from `weights` under `layout`: the whole weights, the running statistics and the losses.
fn steps<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &owt::train::TrainConfig,
    weights: &[u8],
    count: usize,
) -> (Vec<(String, Vec<f64>)>, Vec<(String, Vec<f64>)>, Vec<f64>) {
    let arch = config.model.architecture().unwrap();
    let device = layout.device();
    let mut model = placed_model(layout, config, weights);
    let mut optim = sgd::<B>(config);
    let mut losses = Vec::new();
    for step in 0..count {
        let (x, y) = batch(step, config.batch, arch.input, arch.classes);
        let (x, y) =
            (layout.place_input(Tensor::from_data(x, device)), layout.place_labels(Tensor::from_data(y, device)));
        let key = DropoutKey::new(config.seed, step as u64);
        let (next, outcome) =
            train_step(layout, model, &mut optim, config.lr, config.head, config.fc_update, key, x, y);
        model = next;
        losses.push(outcome.read().0);
    }
    let model = layout.compute_module(&model);
    (parameter_values(&model), running_statistics(&model), losses)
}

#[test]
fn vgg11_bn_trains_to_one_devices_weights_and_statistics_under_data_parallelism_and_the_weird_trick() {
    let spec = vgg11_bn();
    let config = config(spec.clone(), 8, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let (want, want_stats, want_losses) =
        steps::<Ref, _>(&SingleDevice::<Ref>::new(Default::default()), &config, &weights, 3);
    assert_eq!(want_stats.len(), 16, "8 batch normalisations, a mean and a variance each");
    for k in [2, 4] {
        for plan in [PlanKind::DataParallel, PlanKind::WeirdTrick] {
            let mesh = MeshDevice::virtual_ranks(Default::default(), k);
            use_f64::<H>(&mesh);
            let layout = MeshLayout::<burn::backend::Flex>::new(mesh, plan.plan(), Exchange::AllGather);
            let (got, stats, losses) = steps::<H, _>(&layout, &config, &weights, 3);
            // A conv bias in front of a batch normalisation gets no gradient but rounding (the
            // normalisation subtracts every per-channel constant): it starts at 0 and stays
            // near 1e-17, where a relative gap means nothing. Those are held absolutely.
            let free = |name: &str| name.starts_with("conv") && name.ends_with(".bias");
            let (bias_got, got): (Vec<_>, Vec<_>) = got.into_iter().partition(|(n, _)| free(n));
            let (bias_want, want): (Vec<_>, Vec<_>) = want.clone().into_iter().partition(|(n, _)| free(n));
            let bias_gap = bias_got
                .iter()
                .zip(&bias_want)
                .flat_map(|((_, a), (_, b))| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
                .fold(0.0f64, f64::max);
            assert!(bias_gap <= 1e-12, "K={k} {}: conv biases differ by {bias_gap:e} (absolute)", plan.name());
            let (gap, worst) = relative_gap(&got, &want);
            let (stats_gap, stats_worst) = relative_gap(&stats, &want_stats);
            eprintln!(
                "vgg11-bn K={k} {}: weights {gap:.2e} ({worst}), conv biases {bias_gap:.1e} absolute, statistics {stats_gap:.2e} ({stats_worst})",
                plan.name()
            );
            assert!(gap <= 1e-10, "K={k} {}: {worst} differs by {gap:e}", plan.name());
            assert!(stats_gap <= 1e-10, "K={k} {}: {stats_worst} differs by {stats_gap:e}", plan.name());
            for (a, b) in losses.iter().zip(&want_losses) {
                assert!(
                    (a - b).abs() <= 1e-10 * b.abs(),
                    "K={k} {}: losses {losses:?} vs {want_losses:?}",
                    plan.name()
                );
            }
        }
    }
}

/// The running statistics after a step on a split batch are replicated (every rank holds the
/// whole, equal, values), not left pending or split.
#[test]
fn running_statistics_stay_replicated_on_a_split_batch() {
    let spec = vgg11_bn();
    let config = config(spec.clone(), 8, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
    use_f64::<H>(&mesh);
    let layout = MeshLayout::<burn::backend::Flex>::new(mesh, PlanKind::DataParallel.plan(), Exchange::AllGather);
    let model = placed_model(&layout, &config, &weights);
    let arch = config.model.architecture().unwrap();
    let (x, y) = batch(0, 8, arch.input, arch.classes);
    let device = layout.device();
    let (x, y) = (layout.place_input(Tensor::from_data(x, device)), layout.place_labels(Tensor::from_data(y, device)));
    let mut optim = sgd::<H>(&config);
    let key = DropoutKey::new(config.seed, 0);
    let (model, _) = train_step(&layout, model, &mut optim, config.lr, config.head, config.fc_update, key, x, y);
    for n in 1..=arch.convs.len() {
        let bn = model.norm(n);
        for state in [&bn.running_mean, &bn.running_var] {
            let value = state.value_sync().inner();
            assert_eq!(
                owt_hybrid::Distributed::placement(&value),
                owt_hybrid::Placement::Replicate,
                "{}",
                arch.stage_name(owt_models::Stage::BatchNorm(n))
            );
        }
    }
}
