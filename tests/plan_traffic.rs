//! The analytic communication plan (`owt plan`) against the ledger of real training steps:
//! equal entry by entry (layer, phase, collective: bytes and messages) for every plan and
//! exchange scheme; and the two-tower split moves data only at conv3, the FC layers and the
//! loss, as in the 2012 figure.

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use owt::hybrid::{Exchange, Hybrid, LedgerSnapshot, MeshDevice};
use owt::parallel::{comm_plan, CommPlan, PlanKind};
use owt::train::{sgd, train_step, FcUpdate, Layout, MeshLayout, TrainConfig};
use owt_models::{AlexNet, Head, ModelKind, ModelSpec};

type H = Autodiff<Hybrid<Flex>>;

/// The ledger of the second of two steps (the first warms nothing up, but the second shows
/// that nothing accumulates across steps).
fn measured_step(spec: &ModelSpec, k: usize, plan: PlanKind, scheme: Exchange, batch: usize) -> LedgerSnapshot {
    let arch = spec.architecture().unwrap();
    let config = TrainConfig { batch, seed: 1, ..TrainConfig::new(spec.clone(), owt::data::DatasetKind::Synthetic) };
    let layout = MeshLayout::<Flex>::new(MeshDevice::virtual_ranks(Default::default(), k), plan.plan(), scheme);
    layout.check(&arch, batch).unwrap();
    let device = layout.device().clone();
    let model: AlexNet<H> = arch.try_init(&device).unwrap();
    let mut model = layout.place_model(model).unwrap();
    let mut optim = sgd::<H>(&config);
    let [c, h, w] = arch.input;
    for step in 0..2 {
        let x = TensorData::new(
            (0..batch * c * h * w).map(|i| ((i * 31 + step) % 17) as f32 / 17.0).collect(),
            [batch, c, h, w],
        );
        let y = TensorData::new((0..batch).map(|i| ((i + step) % arch.classes) as i64).collect::<Vec<_>>(), [batch]);
        let (x, y) = layout.place_batch(Tensor::from_data(x, &device), Tensor::from_data(y, &device));
        layout.reset_traffic();
        model = train_step(&layout, model, &mut optim, 0.01, Head::Softmax, FcUpdate::PerStep, x, y).0;
    }
    layout.traffic().unwrap()
}

/// Asserts the ledger and the plan agree on every (layer, phase, collective).
fn assert_matches(ledger: &LedgerSnapshot, plan: &CommPlan, what: &str) {
    assert!(ledger.fallbacks.is_empty(), "{what}: fallbacks {:?}", ledger.fallbacks);
    let mut measured: Vec<(String, String, String, u64, u64)> = ledger
        .traffic
        .iter()
        .map(|((phase, collective), t)| {
            let (layer, phase) = phase.split_once(':').unwrap_or((phase, "?"));
            (layer.to_string(), phase.to_string(), collective.clone(), t.bytes, t.messages)
        })
        .collect();
    let mut planned: Vec<(String, String, String, u64, u64)> = plan
        .layers
        .iter()
        .map(|t| (t.layer.clone(), t.phase.clone(), t.collective.clone(), t.bytes, t.messages))
        .collect();
    measured.sort();
    planned.sort();
    assert_eq!(measured, planned, "{what}: ledger (left) vs plan (right)");
    assert_eq!(ledger.total().bytes, plan.total_bytes, "{what}");
    assert_eq!(ledger.total().messages, plan.total_messages, "{what}");
}

fn check(spec: &ModelSpec, k: usize, plan: PlanKind, scheme: Exchange, batch: usize) {
    let what = format!("{} K={k} {} scheme {} batch {batch}", spec.kind.name(), plan.name(), scheme.letter());
    let ledger = measured_step(spec, k, plan, scheme, batch);
    let planned = comm_plan(&spec.architecture().unwrap(), &plan.plan(), k, batch, scheme).unwrap();
    eprintln!("{what}: {} bytes, {} messages", planned.total_bytes, planned.total_messages);
    assert_matches(&ledger, &planned, &what);
}

#[test]
fn the_ledger_of_a_step_equals_the_plan_for_every_plan_and_scheme() {
    // Dropout on (its masks are broadcast), two towers.
    let small = ModelSpec::new(ModelKind::AlexNetSmall);
    for k in [2, 4] {
        for scheme in [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices] {
            check(&small, k, PlanKind::WeirdTrick, scheme, 8);
        }
        check(&small, k, PlanKind::DataParallel, Exchange::AllGather, 8);
    }
    // Uneven shards: 10 images on 4 ranks (3, 3, 2, 2), slices of 3 split 1, 1, 1, 0.
    check(&small, 4, PlanKind::WeirdTrick, Exchange::Slices, 10);
    check(&small, 3, PlanKind::WeirdTrick, Exchange::Broadcast, 10);
    check(&small, 2, PlanKind::TwoTower, Exchange::AllGather, 8);
    check(&small, 2, PlanKind::TwoTower, Exchange::Broadcast, 8);
    check(&small, 2, PlanKind::ModelParallel, Exchange::AllGather, 8);
}

#[test]
fn the_ledger_equals_the_plan_for_alexnet_owt_at_a_reduced_input() {
    let owt = ModelSpec { input: Some(67), classes: Some(16), ..ModelSpec::new(ModelKind::AlexNetOwt) };
    check(&owt, 2, PlanKind::WeirdTrick, Exchange::Slices, 4);
    check(&owt, 2, PlanKind::ModelParallel, Exchange::AllGather, 4);
}

#[test]
fn the_two_towers_talk_only_at_conv3_the_fc_layers_and_the_loss() {
    let spec = ModelSpec::new(ModelKind::AlexNetSmall);
    let ledger = measured_step(&spec, 2, PlanKind::TwoTower, Exchange::AllGather, 8);
    let mut layers: Vec<&str> = ledger.traffic.keys().map(|(phase, _)| phase.split(':').next().unwrap()).collect();
    layers.dedup();
    assert_eq!(layers, ["conv3", "fc6", "fc7", "fc8", "loss"], "{:?}", ledger.traffic);
    for layer in ["conv1", "conv2", "conv4", "conv5"] {
        for phase in ["forward", "backward", "sync"] {
            assert_eq!(ledger.by_phase(&format!("{layer}:{phase}")).bytes, 0, "{layer} {phase}");
        }
    }
    assert!(ledger.by_phase("conv3:forward").bytes > 0 && ledger.by_phase("conv3:backward").bytes > 0);
    // Nothing moves outside a labelled phase (no unlabelled traffic).
    assert_eq!(ledger.by_phase(owt::hybrid::UNLABELLED).bytes, 0);
}
