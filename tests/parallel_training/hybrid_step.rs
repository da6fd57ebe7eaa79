//! A full training step (forward, loss, backward, SGD with momentum and weight decay) of the
//! AlexNet family on `Autodiff<Hybrid<Flex>>` under the weird-trick and two-tower placements:
//! no fallbacks, and the same loss, gradients (tensor by tensor, each against its own scale)
//! and updated weights as one device.
//!
//! Tolerance: f64 (see the binary's doc for why not f32), relative to each tensor's largest
//! magnitude; every draw of weights and batch is seeded, so a run is the same everywhere.

use burn::backend::{Autodiff, Flex};
use burn::module::{AutodiffModule, Module};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::Distribution;
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt_hybrid::PlanKind;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
use owt_models::{AlexNet, Architecture, Head, ModelKind, ModelSpec};

type Ref = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

use crate::{serial, use_f64};

fn sgd<B: burn::tensor::backend::AutodiffBackend>() -> impl Optimizer<AlexNet<B>, B> {
    SgdConfig::new()
        .with_momentum(Some(MomentumConfig { momentum: 0.9, dampening: 0.0, nesterov: false }))
        .with_weight_decay(Some(WeightDecayConfig::new(5e-4)))
        .init::<B, AlexNet<B>>()
}

/// Relative tolerance of a tensor against one device's: f64 summation-order differences are
/// ~1e-15; a gradient off by a factor, a dropped summand or a wrong rank's slice is off by far
/// more.
const TOLERANCE: f64 = 1e-10;

/// The largest gap of any tensor, relative to that tensor's largest magnitude, and its name.
fn worst_gap(got: &[(String, Vec<f64>)], want: &[(String, Vec<f64>)]) -> (f64, String) {
    assert_eq!(got.len(), want.len(), "tensor counts");
    let mut worst = (0.0f64, String::new());
    for ((name, a), (name_b, b)) in got.iter().zip(want) {
        assert_eq!(name, name_b);
        assert_eq!(a.len(), b.len(), "{name}: lengths");
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
        let gap = a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale;
        if gap >= worst.0 {
            worst = (gap, name.clone());
        }
    }
    worst
}

/// Every parameter's gradient (all must have one).
fn gradients<B: burn::tensor::backend::AutodiffBackend>(
    model: &AlexNet<B>,
    grads: &GradientsParams,
) -> Vec<(String, Vec<f64>)> {
    owt_hybrid::gradient_values(model, grads)
        .into_iter()
        .map(|(name, g)| {
            let g = g.unwrap_or_else(|| panic!("{name} has no gradient"));
            (name, g)
        })
        .collect()
}

/// A mesh model's parameters, read back whole.
fn weights<B: Backend>(model: &AlexNet<B>) -> Vec<(String, Vec<f64>)> {
    owt_hybrid::parameter_values(model)
}

fn assert_close(got: &[(String, Vec<f64>)], want: &[(String, Vec<f64>)], what: &str) {
    let (gap, name) = worst_gap(got, want);
    eprintln!("{what}: worst gap {gap:.2e} ({name})");
    assert!(gap <= TOLERANCE, "{what}: {name} differs by {gap:e} of its scale");
}

struct Case {
    arch: Architecture,
    k: usize,
    plan: PlanKind,
    head: Head,
    batch: usize,
}

fn run(case: Case) {
    let rd = Default::default();
    use_f64::<Ref>(&rd);
    let [c, h, w] = case.arch.input;
    let (x, model) = {
        let _turn = serial();
        <Flex as burn::tensor::backend::Backend>::seed(&rd, 5);
        let x = Tensor::<Flex, 4>::random([case.batch, c, h, w], Distribution::Normal(0.0, 1.0), &rd)
            .into_data()
            .convert::<f64>();
        let model: AlexNet<Ref> = case.arch.init(&rd);
        (x, model)
    };
    let y = TensorData::new(
        (0..case.batch as i64).map(|i| (i * 7) % case.arch.classes as i64).collect::<Vec<_>>(),
        [case.batch],
    );

    let bytes = record_to_bytes::<Ref, _>(model.clone().into_record()).unwrap();
    // The mesh loads these bytes, which hold f32: one device starts from the same values.
    let model = model.load_record(record_from_bytes::<Ref, _>(&bytes, &rd).unwrap());
    let mut opt = sgd::<Ref>();
    let loss = case.head.loss(model.forward(Tensor::from_data(x.clone(), &rd)), Tensor::from_data(y.clone(), &rd));
    let ref_loss = loss.clone().into_scalar();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let ref_grads = gradients(&model, &grads);
    let ref_model = opt.step(0.01, model, grads);

    let mesh = MeshDevice::virtual_ranks(rd, case.k);
    use_f64::<H>(&mesh);
    let hmodel: AlexNet<H> = {
        let _turn = serial();
        case.arch.init(&mesh)
    };
    let hmodel = hmodel.load_record(record_from_bytes::<H, _>(&bytes, &mesh).unwrap());
    let plan = case.plan.plan();
    let hmodel = plan.apply(hmodel);
    let mut hopt = sgd::<H>();
    mesh.reset_ledger();
    let xs = Tensor::<H, 4>::from_data(x, &mesh).distribute(plan.input);
    let ys = Tensor::<H, 1, Int>::from_data(y, &mesh).distribute(plan.input);
    let loss = case.head.loss(hmodel.forward(xs), ys);
    let hy_loss = loss.clone().into_scalar();
    let grads = GradientsParams::from_grads(loss.backward(), &hmodel);
    let hy_grads = gradients(&hmodel, &grads);
    let hmodel = hopt.step(0.01, hmodel, grads);
    let ledger = mesh.ledger_snapshot();

    let what = format!("{} K={} {:?} plan {}", case.arch.name, case.k, case.head, plan.name);
    assert!(ledger.fallbacks.is_empty(), "{what}: fallbacks {:?}", ledger.fallbacks);
    assert!((hy_loss - ref_loss).abs() <= 1e-6 * ref_loss.abs(), "{what}: loss {hy_loss} vs {ref_loss}");
    assert_close(&hy_grads, &ref_grads, &format!("{what} gradients"));
    assert_close(&weights(&hmodel), &weights(&ref_model), &format!("{what} weights"));
}

fn small(towers: usize) -> Architecture {
    ModelSpec { towers: Some(towers), dropout: Some(0.0), ..ModelSpec::new(ModelKind::AlexNetSmall) }
        .architecture()
        .unwrap()
}

#[test]
fn alexnet_small_weird_trick_step_matches_one_device() {
    for k in [1, 2, 3, 4] {
        for head in Head::ALL {
            run(Case { arch: small(1), k, plan: PlanKind::WeirdTrick, head, batch: 8 });
        }
    }
}

#[test]
fn alexnet_small_two_tower_step_matches_one_device() {
    for head in Head::ALL {
        run(Case { arch: small(2), k: 2, plan: PlanKind::TwoTower, head, batch: 6 });
    }
}

/// One of the ImageNet-sized nets at a reduced input side (the adaptive 6x6 pool keeps fc6 at
/// 9216 inputs) with 10 classes, stepped on 2 ranks under `plan` for each head.
fn reduced_net_matches_one_device(kind: ModelKind, plan: PlanKind) {
    let arch = ModelSpec { input: Some(67), classes: Some(10), dropout: Some(0.0), ..ModelSpec::new(kind) }
        .architecture()
        .unwrap();
    for head in Head::ALL {
        run(Case { arch: arch.clone(), k: 2, plan, head, batch: 4 });
    }
}

#[test]
fn alexnet_owt_weird_trick_step_matches_one_device() {
    reduced_net_matches_one_device(ModelKind::AlexNetOwt, PlanKind::WeirdTrick);
}

#[test]
fn alexnet_2012_two_tower_step_matches_one_device() {
    reduced_net_matches_one_device(ModelKind::AlexNet2012, PlanKind::TwoTower);
}

/// Dropout on, through the ordinary `forward` (no key from the caller): each model keys its
/// masks by its own pass count, so the mesh draws exactly what one device draws and, each rank
/// computing its own part of the mask, nothing is broadcast. Adam instead of SGD, over two steps:
/// optimizers need nothing from the backend beyond its ops. (Adam's update is nearly blind to
/// a gradient's scale, so the gradients are compared directly as well.)
#[test]
fn dropout_and_adam_match_one_device() {
    let _turn = serial();
    use burn::optim::AdamConfig;
    let arch = ModelSpec { towers: Some(1), dropout: Some(0.5), ..ModelSpec::new(ModelKind::AlexNetSmall) }
        .architecture()
        .unwrap();
    let rd = Default::default();
    use_f64::<Ref>(&rd);
    <Flex as burn::tensor::backend::Backend>::seed(&rd, 7);
    let x = Tensor::<Flex, 4>::random([8, 1, 28, 28], Distribution::Normal(0.0, 1.0), &rd).into_data().convert::<f64>();
    let y = TensorData::new((0..8i64).map(|i| i % 10).collect::<Vec<_>>(), [8]);
    let model: AlexNet<Ref> = arch.init(&rd);
    let bytes = record_to_bytes::<Ref, _>(model.clone().into_record()).unwrap();
    let model = model.load_record(record_from_bytes::<Ref, _>(&bytes, &rd).unwrap());

    let mut opt = AdamConfig::new().init::<Ref, AlexNet<Ref>>();
    let mut model = model;
    let mut reference = Vec::new();
    for _ in 0..2 {
        let loss =
            Head::Softmax.loss(model.forward(Tensor::from_data(x.clone(), &rd)), Tensor::from_data(y.clone(), &rd));
        let value = loss.clone().into_scalar();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        reference.push((value, gradients(&model, &grads)));
        model = opt.step(1e-3, model, grads);
    }
    let ref_model = model.valid();

    let mesh = MeshDevice::virtual_ranks(rd, 2);
    use_f64::<H>(&mesh);
    let hmodel: AlexNet<H> = arch.init(&mesh);
    let mut hmodel =
        PlanKind::WeirdTrick.plan().apply(hmodel.load_record(record_from_bytes::<H, _>(&bytes, &mesh).unwrap()));
    let mut hopt = AdamConfig::new().init::<H, AlexNet<H>>();
    mesh.reset_ledger();
    for (step, (ref_loss, ref_grads)) in reference.iter().enumerate() {
        let xs = Tensor::<H, 4>::from_data(x.clone(), &mesh).distribute(Placement::Shard(0));
        let loss = Head::Softmax.loss(hmodel.forward(xs), Tensor::from_data(y.clone(), &mesh));
        let hy_loss = loss.clone().into_scalar();
        assert!((hy_loss - ref_loss).abs() <= 1e-6 * ref_loss.abs(), "step {step}: loss {hy_loss} vs {ref_loss}");
        let grads = GradientsParams::from_grads(loss.backward(), &hmodel);
        assert_close(&gradients(&hmodel, &grads), ref_grads, &format!("Adam step {step} gradients"));
        hmodel = hopt.step(1e-3, hmodel, grads);
    }
    let ledger = mesh.ledger_snapshot();
    assert!(ledger.fallbacks.is_empty(), "fallbacks {:?}", ledger.fallbacks);
    assert_eq!(ledger.by_collective("broadcast").bytes, 0, "no dropout mask is broadcast");
    assert_eq!(hmodel.dropout.passes.next(), 2, "each step's forward took the next key");
    // Adam divides each update by the root of its squared gradients, so a weight whose gradient
    // is near zero moves by about lr x sign(g), and rounding in g shows up to 4.5e-5 of a small
    // tensor's own scale (measured). Judged in absolute terms instead: two steps move a weight
    // at most 2e-3; measured gaps up to 2.6e-6 over several runs; the bound is 1% of that 2e-3.
    let (got, want) = (weights(&hmodel), weights(&ref_model));
    assert_eq!(got.len(), want.len());
    for ((name, a), (_, b)) in got.iter().zip(&want) {
        assert_eq!(a.len(), b.len(), "{name}: lengths");
        let gap = a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        eprintln!("Adam weights after two steps: {name} within {gap:.2e}");
        assert!(gap <= 2e-5, "Adam weights after two steps: {name} differs by {gap:e}");
    }
}

/// Diagnostic for issue 22's intermittent gap: the two-tower step on one device and on the
/// mesh for many seeded draws of weights and batch; a draw beyond the tolerance is computed
/// again (the same gap: deterministic, no race) and with its batch scaled by 1 + 1e-4 (a gap
/// that vanishes: a knife edge of a max or a ReLU, where the two summation orders fall on
/// different sides, not a wrong gradient). In f32 (before this binary) seeds 707, 710, 1075,
/// 1200 and 1218 of 0..1300 showed gaps of 3.7e-4 to 5.3e-2, each repeated exactly and each
/// gone (under 1e-6) with the batch scaled; in f64, seeds 0..1400 with both heads: none above
/// the tolerance (2026-12-01).
#[test]
#[ignore = "a search over seeds (OWT_SEEDS=FROM..TO), not a unit test"]
fn two_tower_gaps_over_seeds() {
    let arch = small(2);
    let rd: burn::tensor::Device<Flex> = Default::default();
    use_f64::<Ref>(&rd);
    let [c, h, w] = arch.input;
    let batch = 6;
    let range = std::env::var("OWT_SEEDS").unwrap_or_else(|_| "0..20".into());
    let (from, to) = range.split_once("..").unwrap();
    let y = TensorData::new((0..batch as i64).map(|i| (i * 7) % arch.classes as i64).collect::<Vec<_>>(), [batch]);
    let gap_of = |bytes: &[u8], x: &TensorData, head: Head| {
        let model: AlexNet<Ref> = {
            let _turn = serial();
            arch.init(&rd)
        };
        let model = model.load_record(record_from_bytes::<Ref, _>(bytes, &rd).unwrap());
        let loss = head.loss(model.forward(Tensor::from_data(x.clone(), &rd)), Tensor::from_data(y.clone(), &rd));
        let want = gradients(&model, &GradientsParams::from_grads(loss.backward(), &model));
        let mesh = MeshDevice::virtual_ranks(rd, 2);
        use_f64::<H>(&mesh);
        let plan = PlanKind::TwoTower.plan();
        let hmodel: AlexNet<H> = {
            let _turn = serial();
            arch.init(&mesh)
        };
        let hmodel = plan.apply(hmodel.load_record(record_from_bytes::<H, _>(bytes, &mesh).unwrap()));
        let xs = Tensor::<H, 4>::from_data(x.clone(), &mesh).distribute(plan.input);
        let ys = Tensor::<H, 1, Int>::from_data(y.clone(), &mesh).distribute(plan.input);
        let loss = head.loss(hmodel.forward(xs), ys);
        worst_gap(&gradients(&hmodel, &GradientsParams::from_grads(loss.backward(), &hmodel)), &want)
    };
    for seed in from.parse::<u64>().unwrap()..to.parse::<u64>().unwrap() {
        let (bytes, x) = {
            let _turn = serial();
            <Flex as burn::tensor::backend::Backend>::seed(&rd, seed);
            let x = Tensor::<Flex, 4>::random([batch, c, h, w], Distribution::Normal(0.0, 1.0), &rd)
                .into_data()
                .convert::<f64>();
            let model: AlexNet<Ref> = arch.init(&rd);
            (record_to_bytes::<Ref, _>(model.into_record()).unwrap(), x)
        };
        for head in Head::ALL {
            let (gap, name) = gap_of(&bytes, &x, head);
            if gap <= TOLERANCE {
                continue;
            }
            let (again, _) = gap_of(&bytes, &x, head);
            let scaled = Tensor::<Flex, 4>::from_data(x.clone(), &rd).mul_scalar(1.0 + 1e-4).into_data();
            let (nudged, nudged_name) = gap_of(&bytes, &scaled, head);
            eprintln!(
                "seed {seed} {head:?}: gap {gap:e} ({name}); again {again:e}; batch x (1 + 1e-4): {nudged:e} ({nudged_name})"
            );
        }
    }
}
