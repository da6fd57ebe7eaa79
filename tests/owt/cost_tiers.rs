//! The cost model on tiered links (issue 25, points 4 and 5): the 2014 paper's 8-GPU speedups
//! from the `gtx580-pcie` server (GPUs behind shared PCIe switches, host-staged between the
//! sockets), the bytes of a 2-D mesh per dimension against their analytic volume, and the
//! `[node]` entries priced on the network between nodes.

use owt::parallel::PlanDryRun;
use owt::train::FcUpdate;
use owt_hybrid::{Collective, DeviceProfile, DryRunReport, Exchange, Phase, Plan, PlanKind, Stage, WirePrecision};
use owt_models::{Architecture, Head, ModelKind, ModelSpec};

fn step<'a>(arch: &'a Architecture, plan: &'a Plan, ranks: usize, batch: usize, scheme: Exchange) -> PlanDryRun<'a> {
    let (head, fc_update, wire) = (Head::Softmax, FcUpdate::PerStep, WirePrecision::Native);
    PlanDryRun { arch, plan, ranks, batch, scheme, head, fc_update, wire }
}

/// Krizhevsky 2014, table 1: 1.95x, 3.74x and 6.25x on 2, 4 and 8 GPUs at 128 images per GPU.
/// The same profile for every K, nothing fitted: the speedups of AlexNetOwt under the weird
/// trick (scheme b, the paper's broadcast rounds) come out within 10% of each (3.1%, 4.5%,
/// 3.4% over when this was written), where one link per GPU predicted 7.85x at 8 (+26%).
#[test]
fn the_tiered_pcie_server_predicts_the_papers_speedups_within_ten_percent() {
    let arch = ModelSpec::new(ModelKind::AlexNetOwt).architecture().unwrap();
    let plan = PlanKind::WeirdTrick.plan();
    let profile = DeviceProfile::preset("gtx580-pcie").unwrap();
    let time = |k: usize| step(&arch, &plan, k, 128 * k, Exchange::Broadcast).run().unwrap().predict(&profile).serial_s;
    let one = time(1);
    for (k, paper) in [(2usize, 1.95), (4, 3.74), (8, 6.25)] {
        let speedup = k as f64 * one / time(k);
        let gap = speedup / paper - 1.0;
        assert!(
            gap.abs() < 0.10,
            "K = {k}: predicted {speedup:.2}x against the paper's {paper}x ({:+.1}%)",
            gap * 100.0
        );
    }
    // The shared links are what brings K = 8 down: with every GPU on a link of its own
    // (broadcasts still without multicast) the same step is over 7% faster.
    let flat = DeviceProfile { uplinks: vec![], ..profile.clone() };
    let on = |p: &DeviceProfile| step(&arch, &plan, 8, 1024, Exchange::Broadcast).run().unwrap().predict(p).serial_s;
    assert!(on(&profile) / on(&flat) > 1.07, "{} vs {}", on(&profile), on(&flat));
}

/// A (4, 8) mesh under the weird trick: the `local` entries are exactly four times one node's
/// 1-D step on a quarter of the batch plus, per replicated (conv) gradient, the all-gather of
/// its slices summed over the nodes, and the `node` entries exactly the ring volume over the 4
/// nodes of every gradient once (an eighth of each on each local rank: the conv gradients'
/// slices, the FC gradients' columns). The step's loss and correct count are the whole
/// batch's pending sums: they cross the nodes when read, not in the step. At 4 bytes an
/// element in f32, at 2 with bf16 on the wire (issue 42).
#[test]
fn a_two_dimensional_mesh_moves_the_analytic_bytes_in_each_dimension() {
    for (wire, size) in [(WirePrecision::Native, 4), (WirePrecision::Bf16, 2)] {
        two_dimensional_volumes(wire, size);
    }
}

/// [`a_two_dimensional_mesh_moves_the_analytic_bytes_in_each_dimension`] sending in `wire`,
/// `size` bytes an element.
fn two_dimensional_volumes(wire: WirePrecision, size: u64) {
    let arch = ModelSpec::new(ModelKind::AlexNetOwt).architecture().unwrap();
    let plan = PlanKind::WeirdTrick.plan();
    let (nodes, local, batch) = (4usize, 8usize, 4 * 8 * 16);
    let on = |ranks, batch| PlanDryRun { wire, ..step(&arch, &plan, ranks, batch, Exchange::AllGather) };
    let (grid, _) = on(nodes * local, batch).run_on_grid([nodes, local]).unwrap();
    let node: DryRunReport = on(local, batch / nodes).run().unwrap();
    let params = arch.parameters().unwrap();
    let elements = |prefix: &str| -> u64 {
        params.iter().filter(|(p, _)| p.starts_with(prefix)).map(|(_, d)| d.iter().product::<usize>() as u64).sum()
    };
    let (n, l) = (nodes as u64, local as u64);
    let mut node_bytes = 0u64;
    for ((label, collective), t) in &grid.ledger.traffic {
        if collective.over.is_some() {
            node_bytes += t.bytes;
            continue;
        }
        let one = node.ledger.traffic.get(&(label.clone(), collective.clone())).copied().unwrap_or_default();
        let (layer, phase) = (label.layer.as_str(), label.stage.map_or("-", |s| s.name()));
        // A conv layer's slices (weight and bias), summed over the nodes, all-gathered inside
        // each node.
        let (gathered, gathers) = if phase == "sync" && layer.starts_with("conv") && collective == "all_gather" {
            (n * (l - 1) * elements(layer) * size, n * l * (l - 1) * 2)
        } else {
            (0, 0)
        };
        assert_eq!(
            (t.bytes, t.messages),
            (n * one.bytes + gathered, n * one.messages + gathers),
            "{label} {collective} {wire}"
        );
    }
    // Every gradient once across the nodes: the conv gradients by slices, the FC by columns.
    let held = elements("");
    assert_eq!(node_bytes, 2 * (nodes as u64 - 1) * held * size, "{wire}");
}

/// On `h200-nvlink-ib` a `[node]` ring crosses each node's InfiniBand uplink once each way per
/// column and round: fc6's gradient sums over N nodes (weight and bias) cost 2 (N - 1) / N of
/// their bytes at 400 GB/s plus 2 (N - 1) rounds of 10 us each.
#[test]
fn the_sums_across_nodes_are_priced_on_the_network_between_them() {
    let arch = ModelSpec::new(ModelKind::AlexNetOwt).architecture().unwrap();
    let plan = PlanKind::WeirdTrick.plan();
    let profile = DeviceProfile::preset("h200-nvlink-ib").unwrap();
    let fc6: u64 = arch
        .parameters()
        .unwrap()
        .iter()
        .filter(|(p, _)| p.starts_with("fc6"))
        .map(|(_, d)| d.iter().product::<usize>() as u64)
        .sum();
    for (nodes, local) in [(2usize, 8usize), (4, 8), (8, 8)] {
        let (grid, _) = step(&arch, &plan, nodes * local, nodes * local * 4, Exchange::AllGather)
            .run_on_grid([nodes, local])
            .unwrap();
        let entry = grid.ledger.traffic[&(Phase::of("fc6", Stage::Sync), Collective::AllReduce.over("node"))];
        let n = nodes as f64;
        let ring = 2.0 * (n - 1.0);
        let uplink = profile.uplinks.iter().find(|u| u.span == 8).unwrap();
        let want = ring / n * (fc6 * 4) as f64 / (uplink.gbps * 1e9) + 2.0 * ring * uplink.latency_us * 1e-6;
        let got =
            profile.comm_seconds(&Collective::AllReduce.over("node"), entry.bytes, entry.messages, [nodes, local]);
        assert!((got - want).abs() <= 1e-12 * want, "({nodes}, {local}): {got} s against {want} s");
        // Inside a node the same bytes would take the NVLink's time: the network is the cost.
        let inside =
            profile.comm_seconds(&Collective::AllReduce.into(), entry.bytes, entry.messages, [1, nodes * local]);
        assert!(inside < got, "({nodes}, {local})");
    }
}
