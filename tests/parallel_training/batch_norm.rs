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

/// The model from `weights` after the first step on `layout`, the mesh's ledger holding that
/// step's traffic alone (reset after the model is placed and its batch uploaded).
fn first_step(
    layout: &MeshLayout<burn::backend::Flex>,
    config: &owt::train::TrainConfig,
    weights: &[u8],
) -> ConvNet<H> {
    let model = placed_model(layout, config, weights);
    let arch = config.model.architecture().unwrap();
    let (x, y) = batch(0, config.batch, arch.input, arch.classes);
    let device = layout.device();
    let (x, y) = (layout.place_input(Tensor::from_data(x, device)), layout.place_labels(Tensor::from_data(y, device)));
    let mut optim = sgd::<H>(config);
    let key = DropoutKey::new(config.seed, 0);
    layout.mesh().reset_ledger();
    train_step(layout, model, &mut optim, config.lr, config.head, config.fc_update, key, x, y).0
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
    let model = first_step(&layout, &config, &weights);
    let arch = config.model.architecture().unwrap();
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

/// The local form by hand on one device: each rank's rows through the conv trunk on their own
/// (so each batch normalisation takes that shard's statistics, as DDP's `BatchNorm2d` does on
/// each rank), the features joined for the classifier and one loss over the whole batch, whose
/// gradient is the sum of the ranks' (weighted by their share of the batch, as the mesh's mean
/// loss is); the running statistics the mean over the shards of each shard's update from the
/// same start.
fn local_steps_by_hand(
    config: &owt::train::TrainConfig,
    weights: &[u8],
    count: usize,
    ranks: usize,
) -> (Vec<(String, Vec<f64>)>, Vec<(String, Vec<f64>)>, Vec<f64>) {
    use burn::optim::{GradientsParams, Optimizer};
    let arch = config.model.architecture().unwrap();
    let layout = SingleDevice::<Ref>::new(Default::default());
    let device = layout.device().clone();
    let mut model: ConvNet<Ref> = placed_model(&layout, config, weights);
    let mut optim = sgd::<Ref>(config);
    let mut losses = Vec::new();
    for step in 0..count {
        let (x, y) = batch(step, config.batch, arch.input, arch.classes);
        let (x, y) = (Tensor::<Ref, 4>::from_data(x, &device), Tensor::<Ref, 1, Int>::from_data(y, &device));
        let norms: Vec<_> = (1..=arch.convs.len()).map(|n| model.norm(n).clone()).collect();
        let start: Vec<_> =
            norms.iter().map(|bn| (bn.running_mean.value_sync(), bn.running_var.value_sync())).collect();
        let mut sums: Vec<Option<(Tensor<Ref, 1>, Tensor<Ref, 1>)>> = vec![None; norms.len()];
        let mut features = Vec::new();
        let shards: Vec<_> =
            owt_hybrid::shard_ranges(config.batch, ranks).into_iter().filter(|r| !r.is_empty()).collect();
        for rows in &shards {
            for (bn, (mean, var)) in norms.iter().zip(&start) {
                bn.running_mean.update(mean.clone());
                bn.running_var.update(var.clone());
            }
            features.push(model.forward_features(x.clone().slice([rows.clone()])));
            for (sum, bn) in sums.iter_mut().zip(&norms) {
                let (mean, var) = (bn.running_mean.value_sync(), bn.running_var.value_sync());
                *sum = Some(match sum.take() {
                    Some((m, v)) => (m + mean, v + var),
                    None => (mean, var),
                });
            }
        }
        for (bn, sum) in norms.iter().zip(sums) {
            let (mean, var) = sum.unwrap();
            bn.running_mean.update(mean.div_scalar(shards.len() as f64));
            bn.running_var.update(var.div_scalar(shards.len() as f64));
        }
        let key = DropoutKey::new(config.seed, step as u64);
        let logits = model.forward_classifier_hooked(Tensor::cat(features, 0), &mut owt_models::KeyedDropout(key));
        let loss = config.head.loss(logits, y);
        losses.push(loss.clone().into_data().convert::<f64>().to_vec::<f64>().unwrap()[0]);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(config.lr, model, grads);
    }
    (parameter_values(&model), running_statistics(&model), losses)
}

/// A plan with `batch_stats: local`: each rank's own statistics (DDP's default), on even and
/// uneven shards (8 images on 3 ranks: 3, 3, 2), equal to the hand-computed per-rank reference
/// within 1e-10 and, so that the test could fail, away from the synchronised form's weights.
#[test]
fn local_batch_statistics_equal_each_ranks_own_computed_by_hand() {
    let spec = vgg11_bn();
    let config = config(spec.clone(), 8, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let (synced, _, _) = steps::<Ref, _>(&SingleDevice::<Ref>::new(Default::default()), &config, &weights, 3);
    // Conv biases in front of batch norm get only rounding (see above); the running
    // statistics are compared by `running_statistics` (which reads them synchronised: the
    // reference moves them several times a step, and a module visit reads a lagging value).
    let free = |name: &str| (name.starts_with("conv") && name.ends_with(".bias")) || name.contains(".running_");
    let without_free = |v: Vec<(String, Vec<f64>)>| v.into_iter().filter(|(n, _)| !free(n)).collect::<Vec<_>>();
    let synced = without_free(synced);
    for (k, plans) in [
        (2, &[PlanKind::DataParallel, PlanKind::WeirdTrick][..]),
        (3, &[PlanKind::DataParallel][..]),
        (4, &[PlanKind::DataParallel, PlanKind::WeirdTrick][..]),
    ] {
        let (want, want_stats, want_losses) = local_steps_by_hand(&config, &weights, 3, k);
        let want = without_free(want);
        let (apart, _) = relative_gap(&want, &synced);
        assert!(apart > 1e-6, "K={k}: each rank's statistics should train elsewhere than the batch's ({apart:e})");
        for &plan in plans {
            let mesh = MeshDevice::virtual_ranks(Default::default(), k);
            use_f64::<H>(&mesh);
            let plan_local = owt_hybrid::Plan { batch_stats: owt_hybrid::BatchStats::Local, ..plan.plan() };
            let layout = MeshLayout::<burn::backend::Flex>::new(mesh, plan_local, Exchange::AllGather);
            let (got, stats, losses) = steps::<H, _>(&layout, &config, &weights, 3);
            let got = without_free(got);
            let (gap, worst) = relative_gap(&got, &want);
            let (stats_gap, stats_worst) = relative_gap(&stats, &want_stats);
            eprintln!(
                "vgg11-bn local K={k} {}: weights {gap:.2e} ({worst}), statistics {stats_gap:.2e} ({stats_worst}), {apart:.1e} from the synchronised form",
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

/// What the statistics move, counted by the ledger and priced by the dry run: on a
/// data-parallel mesh the conv trunk moves nothing else, so each conv layer's forward and
/// backward traffic is its batch normalisation's. Synchronised: two all-reduces of C values
/// forward (the mean and the variance, each reduced once however many ops read it) and two
/// backward; local: the two of the running statistics' mean forward (detached), none backward.
/// An all-reduce of C values on K ranks is a ring: 2 (K - 1) C elements in 2 K (K - 1) messages.
#[test]
fn the_statistics_traffic_is_two_all_reduces_of_the_channels_each_way() {
    let spec = vgg11_bn();
    let config = config(spec.clone(), 8, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let arch = config.model.architecture().unwrap();
    for k in [2, 4] {
        for stats in [owt_hybrid::BatchStats::Sync, owt_hybrid::BatchStats::Local] {
            let plan = owt_hybrid::Plan { batch_stats: stats, ..PlanKind::DataParallel.plan() };
            let mesh = MeshDevice::virtual_ranks(Default::default(), k);
            use_f64::<H>(&mesh);
            let layout = MeshLayout::<burn::backend::Flex>::new(mesh.clone(), plan.clone(), Exchange::AllGather);
            let _ = first_step(&layout, &config, &weights);
            let ledger = mesh.ledger_snapshot();
            assert_eq!(ledger.total_fallbacks(), 0, "{:?}", ledger.fallbacks);
            // The same step priced on shape-only ranks (f32: 4 bytes an element).
            let priced = owt::parallel::PlanDryRun {
                arch: &arch,
                plan: &plan,
                ranks: k,
                batch: 8,
                scheme: Exchange::AllGather,
                head: config.head,
                fc_update: FcUpdate::PerStep,
                wire: owt_hybrid::WirePrecision::Native,
            }
            .run()
            .unwrap()
            .comm;
            for n in 1..=arch.convs.len() {
                let (conv, c) = (arch.conv_name(n), arch.convs[n - 1].filters as u64);
                let rings = |count: u64, element: u64| {
                    (count * 2 * (k as u64 - 1) * c * element, count * 2 * (k * (k - 1)) as u64)
                };
                let backward_rings = if stats == owt_hybrid::BatchStats::Sync { 2 } else { 0 };
                for (phase, count) in [("forward", 2), ("backward", backward_rings)] {
                    let moved = ledger.by_phase(&format!("{conv}:{phase}"));
                    assert_eq!(
                        (moved.bytes, moved.messages),
                        rings(count, 8),
                        "K={k} {stats:?} {conv}:{phase}: {} bytes in {} messages",
                        moved.bytes,
                        moved.messages
                    );
                    let dry: (u64, u64) = priced
                        .layers
                        .iter()
                        .filter(|t| t.layer == conv && t.phase == phase)
                        .fold((0, 0), |(b, m), t| (b + t.bytes, m + t.messages));
                    assert_eq!(dry, rings(count, 4), "K={k} {stats:?} {conv}:{phase} priced by the dry run");
                }
            }
        }
    }
}

/// Accumulation with batch normalisation (issue 60 point 7): each micro-batch is normalised by
/// its own statistics and moves the running statistics once, as a PyTorch loop that
/// accumulates gradients does; the recipes chapter says so. Checked against computations that
/// share nothing with the accumulated step: its weights are the mean of plain steps over each
/// micro-batch alone (SGD's first step from zero momentum is linear in the gradient, and the
/// losses weighted by their share make the accumulated gradient the micro-batches' mean), its
/// running statistics those of train-mode passes over the micro-batches one after the other;
/// and both differ from the whole batch's step, whose statistics are the batch's.
#[test]
fn accumulated_batch_norm_takes_each_micro_batchs_statistics() {
    let spec = ModelSpec { dropout: Some(0.0), ..vgg11_bn() };
    let whole = owt::train::TrainConfig { batch: 8, ..config(spec.clone(), 8, FcUpdate::PerStep) };
    let half = owt::train::TrainConfig { batch: 4, ..whole.clone() };
    let weights = initial_weights(&spec);
    let one = SingleDevice::<Ref>::new(Default::default());
    let device = one.device();
    let arch = whole.model.architecture().unwrap();
    let (x, y) = batch(0, 8, arch.input, arch.classes);
    let rows = |r: std::ops::Range<usize>| {
        (
            one.place_input(Tensor::from_data(host_rows(&x, r.clone()), device)),
            one.place_labels(Tensor::from_data(host_rows(&y, r), device)),
        )
    };
    let key = DropoutKey::new(whole.seed, 0);
    // The step in two micro-batches of 4.
    let model = placed_model(&one, &whole, &weights);
    let mut acc = owt::train::AccumulatedStep::new(8, whole.head, key);
    for r in [0..4, 4..8] {
        let (xm, ym) = rows(r);
        acc.micro_batch(&one, &model, xm, ym);
    }
    let (accumulated, _) = acc.finish(&one, model, &mut sgd::<Ref>(&whole), whole.lr);
    // Each micro-batch alone, a plain step of 4 images from the same weights.
    // The learnt parameters (the running statistics are state, compared below).
    let learnt = |values: Vec<(String, Vec<f64>)>| -> Vec<(String, Vec<f64>)> {
        values.into_iter().filter(|(name, _)| !name.contains("running_")).collect()
    };
    let alone: Vec<Vec<(String, Vec<f64>)>> = [0..4, 4..8]
        .into_iter()
        .map(|r| {
            let (xm, ym) = rows(r);
            let model = placed_model(&one, &half, &weights);
            let (next, _) =
                train_step(&one, model, &mut sgd::<Ref>(&half), half.lr, half.head, half.fc_update, key, xm, ym);
            learnt(parameter_values(&next))
        })
        .collect();
    let mean: Vec<(String, Vec<f64>)> = alone[0]
        .iter()
        .zip(&alone[1])
        .map(|((name, a), (_, b))| (name.clone(), a.iter().zip(b).map(|(a, b)| (a + b) / 2.0).collect()))
        .collect();
    let (gap, worst) = relative_gap(&learnt(parameter_values(&accumulated)), &mean);
    assert!(gap <= 1e-10, "the accumulated step is not the micro-batches' mean step: {worst} off by {gap:e}");
    // The running statistics: train-mode passes over the two micro-batches, one after the other.
    let passes = placed_model(&one, &whole, &weights);
    for r in [0..4, 4..8] {
        let _ = passes.forward(rows(r).0);
    }
    let (gap, worst) = relative_gap(&running_statistics(&accumulated), &running_statistics(&passes));
    assert!(gap <= 1e-12, "running statistics: {worst} off by {gap:e}");
    // The whole batch in one step normalises by the batch's statistics: another step.
    let (xw, yw) = rows(0..8);
    let model = placed_model(&one, &whole, &weights);
    let (step, _) =
        train_step(&one, model, &mut sgd::<Ref>(&whole), whole.lr, whole.head, whole.fc_update, key, xw, yw);
    let (gap, worst) = relative_gap(&learnt(parameter_values(&step)), &learnt(parameter_values(&accumulated)));
    eprintln!("one batch against two micro-batches: weights {gap:.2e} apart ({worst})");
    assert!(
        gap > 1e-8,
        "the whole batch's step equals the accumulated one ({gap:e}): the statistics would be the batch's"
    );
    let (gap, _) = relative_gap(&running_statistics(&step), &running_statistics(&accumulated));
    assert!(gap > 1e-8, "one update of the running statistics equals two ({gap:e})");
}
