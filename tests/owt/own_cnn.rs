//! `examples/own_cnn.rs`: a user's residual network (Burn's convolutions, `BatchNorm`, residual
//! additions, global average pooling, one linear layer), trained by a plain Burn loop on two
//! virtual ranks under the user's plan, ends at the weights the same program reaches on one
//! device; its dry run gives the traffic per layer that the real steps moved.

#[path = "../../examples/own_cnn.rs"]
#[allow(dead_code)]
mod example;

use crate::relative_gap::relative_gap;
use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::prelude::*;
use example::{my_plan, train, SmallInception, SmallResNet, SmallResNetConfig};
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt_hybrid::prelude::*;
use owt_hybrid::{parameter_values, Exchange, Hybrid, MeshDevice, MeshLayout};

type Ref = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

/// Trains `one` on one device and the same network made by `two` on two virtual ranks (loaded
/// with `one`'s starting weights) under the example's plan, `steps` steps of 16 images; both
/// must end at the same weights with no op gathered for want of a rule.
fn two_ranks_against_one<N1, N2>(one: N1, two: impl FnOnce(&MeshDevice<FlexDevice>) -> N2, steps: usize, what: &str)
where
    N1: example::Classifier<Ref>,
    N2: example::Classifier<H>,
{
    let device = FlexDevice;
    let initial = parameter_values(&one);
    let bytes = record_to_bytes::<Ref, _>(one.clone().into_record()).unwrap();
    let one = one.load_record(record_from_bytes::<Ref, _>(&bytes, &device).unwrap());
    let (one, one_losses) = train(one, &device, steps, 16);

    let layout = MeshLayout::<Flex>::new(MeshDevice::virtual_ranks(FlexDevice, 2), my_plan(), Exchange::AllGather);
    let mesh = layout.mesh().clone();
    let two = layout.place_module(two(&mesh).load_record(record_from_bytes::<H, _>(&bytes, &mesh).unwrap())).unwrap();
    mesh.reset_ledger();
    let (two, two_losses) = train(two, &mesh, steps, 16);
    let moved = mesh.ledger_snapshot();

    let (g, worst) = relative_gap(&parameter_values(&layout.compute_module(&two)), &parameter_values(&one));
    eprintln!("own_cnn {what}: weight gap {g:.2e} ({worst}), losses {one_losses:?} vs {two_losses:?}");
    // f32 and another summation order over 6 steps of momentum SGD; a wrong statistic (each
    // rank's own batch statistics) or a missing gradient sum is off by far more.
    assert!(g <= 1e-4, "{what}: {worst} differs by {g:e}");
    for (a, b) in two_losses.iter().zip(&one_losses) {
        assert!((a - b).abs() <= 1e-4 * b.abs(), "{what}: losses {two_losses:?} vs {one_losses:?}");
    }
    // The steps changed the weights by far more than the two runs differ (the starting
    // weights are drawn unseeded: whether 6 steps lower the loss depends on the draw).
    let (moved_by, _) = relative_gap(&parameter_values(&one), &initial);
    assert!(moved_by > 1e3 * g.max(1e-7), "{what}: the steps barely moved the weights: {moved_by:e}");
    assert!(moved.total().bytes > 0);
    assert_eq!(moved.total_fallbacks(), 0, "{what}: no op gathered a whole tensor for want of a rule: {moved:?}");
}

#[test]
fn the_residual_network_on_two_ranks_ends_at_one_devices_weights() {
    let one: SmallResNet<Ref> = SmallResNetConfig::new().init(&FlexDevice);
    two_ranks_against_one(one, |mesh| SmallResNetConfig::new().init::<H>(mesh), 6, "residual");
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2);
    // The plan splits the classifier by columns.
    let layout = MeshLayout::<Flex>::new(mesh.clone(), my_plan(), Exchange::AllGather);
    let placed = layout.place_module(SmallResNetConfig::new().init::<H>(&mesh)).unwrap();
    assert_eq!(owt_hybrid::Distributed::placement(&placed.fc.weight.val().inner()), owt_hybrid::Placement::Shard(1));
}

/// The Inception-style block's factorised convolutions (1x7 with stride (1, 2), 7x1 with stride
/// (2, 1), TensorFlow's "same" padding: two before and three after on a side of 16) on two
/// ranks, against one device.
#[test]
fn the_inception_style_network_on_two_ranks_ends_at_one_devices_weights() {
    let one: SmallInception<Ref> = SmallResNetConfig::new().init_inception(&FlexDevice);
    // The 1x7 layer is the explicit padding of 2 columns before and 3 after, then no padding;
    // 3 before and 2 after (same output side) is another convolution.
    let row = &one.block.row;
    let x = Tensor::<Ref, 4>::random([2, 8, 16, 16], burn::tensor::Distribution::Normal(0.0, 1.0), &FlexDevice);
    let same = row.forward(x.clone());
    assert_eq!(same.dims(), [2, 8, 16, 8]);
    let padded = |before: usize, after: usize| {
        burn::tensor::module::conv2d(
            x.clone().pad((before, after, 0, 0), burn::tensor::ops::PadMode::Constant(0.0)),
            row.weight.val(),
            row.bias.as_ref().map(|b| b.val()),
            burn::tensor::ops::ConvOptions::new([1, 2], [0, 0], [1, 1], 1),
        )
    };
    let off = |other: Tensor<Ref, 4>| (other - same.clone()).abs().max().into_scalar();
    assert!(off(padded(2, 3)) <= 1e-5, "{}", off(padded(2, 3)));
    assert!(off(padded(3, 2)) > 1e-2);
    two_ranks_against_one(one, |mesh| SmallResNetConfig::new().init_inception::<H>(mesh), 6, "inception-style");
}

#[test]
fn the_dry_run_gives_the_traffic_per_layer_that_a_real_step_moves() {
    let report = example::dry_run(2, 16);
    assert!(report.comm.total_bytes > 0);
    // A real step on two virtual ranks moves the same bytes.
    let layout = MeshLayout::<Flex>::new(MeshDevice::virtual_ranks(FlexDevice, 2), my_plan(), Exchange::AllGather);
    let mesh = layout.mesh().clone();
    let model = layout.place_module(SmallResNetConfig::new().init::<H>(&mesh)).unwrap();
    mesh.reset_ledger();
    let _ = train(model, &mesh, 1, 16);
    let real = mesh.ledger_snapshot();
    assert_eq!(report.comm.total_bytes, real.total().bytes);
    for t in &report.comm.layers {
        eprintln!("{} {} {} {} bytes", t.layer, t.phase, t.collective, t.bytes);
    }
}

/// The search `owt plan --auto` runs, on this network from the library: its 5 convs and its
/// linear layer, each replicated or split, under each scheme where the linear layer is split
/// (128 candidates, every one priced by a dry run of the user's own step). On 2 GTX 580s at 128
/// images each the step is compute-bound and the answer is data parallelism. On 2 H200s at 16
/// images each it is latency-bound: data parallelism sends 170 messages of 80 KB in all (an
/// all-reduce per parameter and batch normalisation's statistics: owt's gradient sync has no
/// buckets), so splitting the filters, which sends fewer and larger pieces, is predicted
/// faster; whatever it picks is predicted no slower than data parallelism or the user's plan.
#[test]
fn the_cost_model_chooses_data_parallelism_for_the_residual_network_where_compute_dominates() {
    let dp = owt_hybrid::PlanKind::DataParallel.plan();
    for (name, batch, want_data_parallel) in [("gtx580-pcie", 256, true), ("h200-nvlink", 32, false)] {
        let profile = owt_hybrid::DeviceProfile::preset(name).unwrap();
        let found = example::auto_plan(2, batch, &profile);
        assert!(found.exhaustive, "{name}");
        assert_eq!(found.evaluated, 128, "{name}");
        if want_data_parallel {
            assert!(found.split.is_empty(), "{name}: split {:?}", found.split);
        }
        let price = |plan| example::dry_run_of(plan, Exchange::AllGather, 2, batch).unwrap().predict(&profile).serial_s;
        let (data_parallel, mine) = (price(dp.clone()), price(example::my_plan()));
        assert!(
            found.step_s <= data_parallel && found.step_s <= mine,
            "{name}: {} s, {data_parallel} s, {mine} s",
            found.step_s
        );
    }
}

/// The figures the book gives for the Inception-style network (docs/src/hybrid.md, "A CNN of
/// your own"): its parameters, and the bytes and messages of a step on 2 ranks at batch 32.
fn books_inception_figures() -> (usize, u64, u64) {
    let page = std::fs::read_to_string(super::repository().join("docs/src/hybrid.md")).unwrap();
    let at = page.find("the Inception-style network has").expect("the Hybrid chapter's Inception-style figures");
    let text = &page[at..];
    let number = |before: &str| -> u64 {
        let end = text.find(before).unwrap_or_else(|| panic!("no {before:?} after the Inception-style figures"));
        let word = text[..end].trim_end().rsplit(' ').next().unwrap();
        word.chars().filter(char::is_ascii_digit).collect::<String>().parse().unwrap_or_else(|_| panic!("{word:?}"))
    };
    (number(" parameters") as usize, number(" bytes in "), number(" messages"))
}

#[test]
fn the_books_inception_figures_are_a_real_step_on_two_ranks() {
    let layout = MeshLayout::<Flex>::new(MeshDevice::virtual_ranks(FlexDevice, 2), my_plan(), Exchange::AllGather);
    let mesh = layout.mesh().clone();
    let model = layout.place_module(SmallResNetConfig::new().init_inception::<H>(&mesh)).unwrap();
    let params = model.num_params();
    mesh.reset_ledger();
    let _ = train(model, &mesh, 1, 32);
    let real = mesh.ledger_snapshot().total();
    // The example prints the dry run's figures: the same.
    let dry = example::inception_dry_run(2, 32).ledger.total();
    assert_eq!((dry.bytes, dry.messages), (real.bytes, real.messages));
    assert_eq!(
        books_inception_figures(),
        (params, real.bytes, real.messages),
        "the book's figures against a real step"
    );
}
