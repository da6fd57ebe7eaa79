//! The gradient sync overlapped with the backward pass (issue 42 point 4): with
//! `with_overlapped_sync`, each layer's gradient sums start as soon as the backward pass leaves
//! the layer (PyTorch DDP's buckets), not after the whole pass. The same sums in another order:
//! the weights equal the serial sync's (f64, 1e-10) under every plan and on a 2-D mesh, the
//! ledger holds the same entries, and the order in which the ledger saw its phases interleaves
//! each layer's sync with the backward of the layers before it.

use super::*;
use owt_hybrid::{GridLayout, GridMesh, LedgerSnapshot};

/// `steps` steps on a mesh of `k` ranks under `plan`, overlapped or not; the weights, losses
/// and the last step's ledger.
fn on_mesh(
    k: usize,
    plan: PlanKind,
    scheme: Exchange,
    overlap: bool,
    config: &TrainConfig,
    weights: &[u8],
) -> (Vec<(String, Vec<f64>)>, Vec<f64>, LedgerSnapshot) {
    let mesh = MeshDevice::virtual_ranks(Default::default(), k);
    use_f64::<H>(&mesh);
    let layout = MeshLayout::<Flex>::new(mesh.clone(), plan.plan(), scheme);
    let layout = if overlap { layout.with_overlapped_sync() } else { layout };
    let (params, losses) = run::<H, _>(&layout, config, weights, 3);
    mesh.reset_ledger();
    let _ = run::<H, _>(&layout, config, weights, 1);
    (params, losses, mesh.ledger_snapshot())
}

#[test]
fn overlapped_sums_give_the_serial_syncs_weights_and_bytes() {
    let spec = small(2);
    let config = config(spec.clone(), 8, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let (want, want_losses) = run::<Ref, _>(&SingleDevice::<Ref>::new(Default::default()), &config, &weights, 3);
    for (k, plan, scheme) in [
        (2, PlanKind::WeirdTrick, Exchange::AllGather),
        (4, PlanKind::WeirdTrick, Exchange::Slices),
        (4, PlanKind::DataParallel, Exchange::AllGather),
        (2, PlanKind::ModelParallel, Exchange::AllGather),
    ] {
        let what = format!("{} K={k} scheme {}", plan.name(), scheme.letter());
        let (serial, serial_losses, serial_ledger) = on_mesh(k, plan, scheme, false, &config, &weights);
        let (overlapped, losses, ledger) = on_mesh(k, plan, scheme, true, &config, &weights);
        for (a, b) in losses.iter().zip(&serial_losses) {
            assert!((a - b).abs() <= 1e-12 * b.abs(), "{what}: losses {losses:?} against {serial_losses:?}");
        }
        let (gap, worst) = relative_gap(&overlapped, &serial);
        assert!(gap <= 1e-10, "{what}: {worst} differs by {gap:e} from the serial sync's");
        let (gap, worst) = relative_gap(&overlapped, &want);
        assert!(gap <= 1e-10, "{what}: {worst} differs by {gap:e} from one device");
        for (a, b) in losses.iter().zip(&want_losses) {
            assert!((a - b).abs() <= 1e-10 * b.abs(), "{what}: losses");
        }
        assert_eq!(ledger.traffic, serial_ledger.traffic, "{what}: the same entries, bytes and messages");
    }
    // A 2-D mesh: the sums inside each node and along the nodes, started layer by layer.
    let grid = |overlap: bool| {
        let plan = owt_hybrid::GridPlan::data_parallel_across(&PlanKind::WeirdTrick.plan());
        GridMesh::threaded(
            2,
            |_| {
                let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
                use_f64::<H>(&mesh);
                mesh
            },
            |node| {
                let layout = GridLayout::<Flex>::with_plan(node, &plan, Exchange::AllGather).unwrap();
                let layout = if overlap { layout.with_overlapped_sync() } else { layout };
                run::<H, _>(&layout, &config, &weights, 3)
            },
        )
        .remove(0)
    };
    let (serial, overlapped) = (grid(false), grid(true));
    let (gap, worst) = relative_gap(&overlapped.0, &serial.0);
    assert!(gap <= 1e-10, "(2, 2) mesh: {worst} differs by {gap:e}");
    for (a, b) in overlapped.1.iter().zip(&serial.1) {
        assert!((a - b).abs() <= 1e-12 * b.abs(), "(2, 2) mesh: losses");
    }
}

#[test]
fn the_ledger_sees_each_layers_sync_right_after_its_backward() {
    // fc6 split by columns (its backward reduce-scatters its input's gradient), every other
    // layer replicated (its gradient summed): the sum of fc7 comes before fc6's
    // backward exchange when they overlap the pass, the conv layers' after it; after the pass,
    // every sum comes after it, in the module's order.
    use owt_hybrid::{Placement, Plan, PlanRule};
    let rule = |pattern: &str, placement| PlanRule { pattern: pattern.into(), placement };
    let plan = Plan {
        name: "fc6-split".into(),
        rules: vec![rule("fc6.weight", Placement::Shard(1)), rule("fc6.bias", Placement::Shard(0))],
        default: Placement::Replicate,
        input: Placement::Shard(0),
        ranks: None,
        towers: None,
        batch_stats: Default::default(),
    };
    let spec = small(2);
    let config = config(spec.clone(), 8, FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let (want, _) = run::<Ref, _>(&SingleDevice::<Ref>::new(Default::default()), &config, &weights, 1);
    for overlap in [false, true] {
        let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
        use_f64::<H>(&mesh);
        let layout = MeshLayout::<Flex>::new(mesh.clone(), plan.clone(), Exchange::AllGather);
        let layout = if overlap { layout.with_overlapped_sync() } else { layout };
        let (got, _) = run::<H, _>(&layout, &config, &weights, 1);
        assert!(relative_gap(&got, &want).0 <= 1e-10, "overlap {overlap}: one device's weights");
        let order: Vec<String> = mesh.ledger_snapshot().phase_order.iter().map(|p| p.to_string()).collect();
        let at = |label: &str| order.iter().position(|p| p == label).unwrap_or_else(|| panic!("{label} in {order:?}"));
        let exchange = at("fc6:backward");
        // (fc8 computes on the whole batch after fc6's columns: its gradient is whole already.)
        let syncs = ["fc7", "conv5", "conv4", "conv3", "conv2", "conv1"].map(|l| at(&format!("{l}:sync")));
        if overlap {
            // As the backward pass leaves each layer: fc7 first, conv1 (whose input is the
            // images, with nothing after it) last, fc6's exchange between fc7's and conv5's.
            assert!(syncs.windows(2).all(|w| w[0] < w[1]), "{order:?}");
            assert!(syncs[0] < exchange && exchange < syncs[1], "{order:?}");
        } else {
            assert!(syncs.windows(2).all(|w| w[0] > w[1]), "{order:?}");
            assert!(syncs.iter().all(|&s| s > exchange), "{order:?}");
        }
    }
}
