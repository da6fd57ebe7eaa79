//! Predicting a training step's time from a dry run: each op's FLOPs and bytes (logged by the
//! shape-only `Meta` devices, labelled with the same layer and phase as the traffic) and each
//! collective's bytes and messages (the ledger), priced by a device profile. Compute is a
//! roofline per op (the slower of arithmetic and memory), per rank, the slowest rank setting
//! the pace; communication is priced on the profile's links as a tree of shared uplinks
//! ([`crate::analysis::topology`]): each collective's bytes over the busiest link it crosses, plus a
//! latency per round. Without overlap a step is their sum; with overlap each layer phase costs
//! the larger of its compute and its communication.

use std::collections::BTreeMap;

use owt_meta::OpCost;

use crate::analysis::topology::{collective_seconds, groups_of, Pattern, Uplink};
use crate::ledger::CollectiveKey;
use crate::ledger::Stage;
use crate::ledger::{LedgerSnapshot, UNLABELLED};

/// What a device and its links can do.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceProfile {
    /// Name shown in reports.
    pub name: String,
    /// Sustained arithmetic rate, TFLOP/s.
    pub tflops: f64,
    /// Memory bandwidth, GB/s.
    pub mem_gbps: f64,
    /// Bandwidth of one rank's own link, GB/s (each direction).
    pub link_gbps: f64,
    /// Latency of one message on a rank's own link, microseconds.
    pub latency_us: f64,
    /// The shared links above the ranks' own, narrowest span first (a PCIe switch per pair,
    /// a node's network card per 8 GPUs); empty for a machine whose ranks all meet in one
    /// switch of full bandwidth (NVSwitch, or virtual ranks in one memory).
    pub uplinks: Vec<Uplink>,
    /// Devices in one node (server): a 2-D mesh's local dimension in the nodes table of
    /// `owt plan --profile`; the uplink of that span, if any, is the network between nodes.
    pub node_devices: usize,
}

impl DeviceProfile {
    /// The built-in profiles' names.
    pub const PRESETS: [&'static str; 5] = ["gtx580-pcie", "gtx580-pcie-10gbe", "h200-nvlink", "h200-nvlink-ib", "cpu"];

    /// A built-in profile:
    /// - `gtx580-pcie`: the 2012/2014 papers' GPU (1.58 TFLOP/s peak, of which cuda-convnet
    ///   sustains about 60% on AlexNet's convolutions; 192 GB/s) in the 2014 paper's 8-GPU
    ///   server, assumed built as such servers were: PCIe 2.0 x16 from each GPU to a switch
    ///   (about 6 GB/s each way in practice, 10 us a message), one switch per pair of GPUs on
    ///   one x16 link upstream (6 GB/s, shared by the pair), two switches per CPU socket, and
    ///   between the sockets no peer-to-peer: a copy goes through host memory and QPI, two
    ///   PCIe copies in series (3 GB/s, 20 us);
    /// - `gtx580-pcie-10gbe`: nodes of that server joined by 10 Gigabit Ethernet (1.1 GB/s
    ///   each way of the 1.25 line rate, 30 us through the TCP stack), one card per node of 8;
    /// - `h200-nvlink`: H200 SXM (67 TFLOP/s FP32 without tensor cores, 4.8 TB/s HBM3e) on
    ///   NVLink 4 through NVSwitch (450 GB/s each way, 5 us; full bandwidth between any pair,
    ///   so no shared link inside the node);
    /// - `h200-nvlink-ib`: nodes of 8 of those joined by InfiniBand NDR, one 400 Gb/s card per
    ///   GPU (the node's uplink 8 x 50 GB/s each way, 10 us);
    /// - `cpu`: Burn's Flex backend on the owt project's 2-core CI machine, calibrated from
    ///   `owt bench` (see owt's README, cost model section); ranks are virtual, so "links" are
    ///   memory copies.
    pub fn preset(name: &str) -> Option<Self> {
        let up =
            |name: &str, span: usize, gbps: f64, latency_us: f64| Uplink { name: name.into(), span, gbps, latency_us };
        let pcie = || vec![up("PCIe switch upstream", 2, 6.0, 10.0), up("QPI, host-staged", 4, 3.0, 20.0)];
        let (tflops, mem_gbps, link_gbps, latency_us, uplinks) = match name {
            "gtx580-pcie" => (0.95, 192.0, 6.0, 10.0, pcie()),
            "gtx580-pcie-10gbe" => {
                let mut u = pcie();
                u.push(up("10 GbE", 8, 1.1, 30.0));
                (0.95, 192.0, 6.0, 10.0, u)
            }
            "h200-nvlink" => (67.0, 4800.0, 450.0, 5.0, vec![]),
            "h200-nvlink-ib" => (67.0, 4800.0, 450.0, 5.0, vec![up("InfiniBand NDR", 8, 400.0, 10.0)]),
            "cpu" => (CPU_TFLOPS, CPU_MEM_GBPS, CPU_MEM_GBPS, 1.0, vec![]),
            _ => return None,
        };
        Some(Self { name: name.into(), tflops, mem_gbps, link_gbps, latency_us, uplinks, node_devices: 8 })
    }

    /// The link between nodes: the uplink whose span is a node's devices, if the profile has
    /// one (a profile of a single server has none).
    pub fn between_nodes(&self) -> Option<&Uplink> {
        self.uplinks.iter().find(|u| u.span == self.node_devices)
    }

    /// Seconds one op takes: the slower of its arithmetic and its memory traffic.
    pub fn op_seconds(&self, op: &OpCost) -> f64 {
        let compute = op.flops as f64 / (self.tflops * 1e12);
        let memory = (op.bytes_read + op.bytes_written) as f64 / (self.mem_gbps * 1e9);
        compute.max(memory)
    }

    /// Seconds one ledger entry's collective (`all_gather`, `all_reduce[node]`, ...) takes,
    /// `bytes` in `messages` on a mesh of `shape` = [nodes, local ranks] ([1, K] for a 1-D
    /// mesh), its ranks placed in order on this profile's links.
    pub fn comm_seconds(&self, collective: &CollectiveKey, bytes: u64, messages: u64, shape: [usize; 2]) -> f64 {
        let groups = groups_of(collective, shape);
        collective_seconds(
            Pattern::of(collective.collective),
            &groups,
            bytes,
            messages,
            self.link_gbps,
            self.latency_us,
            &self.uplinks,
        )
    }
}

/// The `cpu` profile's arithmetic rate, TFLOP/s, with [`CPU_MEM_GBPS`]: the pair that best fits
/// (smallest worst error) two `owt bench` steps on Flex on the 2-core machine, AlexNetSmall at
/// batch 128 (449 ms measured, 7.69 GFLOP and 1.38 GB by the dry run's count) and AlexNetOwt at
/// input 67 and batch 64 (1211 ms; 36.1 GFLOP, 4.76 GB); checked against two other steps
/// (README, cost model).
pub const CPU_TFLOPS: f64 = 0.06;

/// The `cpu` profile's memory bandwidth, GB/s (see [`CPU_TFLOPS`]); virtual ranks' "links" are
/// memory copies at the same rate.
pub const CPU_MEM_GBPS: f64 = 5.0;

/// Predicted time of one layer phase (`conv1:forward`, `fc6:sync`, ...).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PhaseTime {
    /// `layer:phase` as the ledger labels it (`-` for ops outside any phase).
    pub label: String,
    /// Compute seconds of the slowest rank.
    pub compute_s: f64,
    /// Communication seconds.
    pub comm_s: f64,
    /// FLOPs of the slowest rank.
    pub flops: u64,
}

/// The predicted time of one training step.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepPrediction {
    /// Per layer phase, in the order of the network.
    pub phases: Vec<PhaseTime>,
    /// Sum of compute.
    pub compute_s: f64,
    /// Sum of communication.
    pub comm_s: f64,
    /// Compute then communication, nothing overlapped.
    pub serial_s: f64,
    /// Each phase's communication hidden behind its compute (or the reverse).
    pub overlapped_s: f64,
    /// The gradient sums overlapped with the backward pass (PyTorch DDP's buckets, a layout's
    /// `with_overlapped_sync`): the passes and their own exchanges in sequence, each layer's
    /// sums started on one communication stream as soon as its backward is done; the rest
    /// (the update) after both.
    pub sync_overlapped_s: f64,
}

/// Prices one step: `costs[r]` are rank r's ops, `ledger` the traffic, on `profile`.
///
/// ```
/// use burn::backend::Autodiff;
/// use burn::prelude::*;
/// use owt_hybrid::{DeviceProfile, Distributed, DryRun, Hybrid, Placement};
///
/// type M = Autodiff<Hybrid<owt_meta::Meta>>;
/// let dry = DryRun::new(2);
/// let w = Tensor::<M, 2>::zeros([4096, 4096], dry.mesh()).distribute(Placement::Shard(1)).require_grad();
/// dry.begin_step();
/// let x = Tensor::<M, 2>::zeros([256, 4096], dry.mesh()).distribute(Placement::Shard(0));
/// let _ = x.matmul(w).sum().backward();
/// let step = dry.report().predict(&DeviceProfile::preset("h200-nvlink").unwrap());
/// assert!(step.compute_s > 0.0 && step.comm_s > 0.0);
/// assert!(step.overlapped_s <= step.serial_s);
/// ```
pub fn predict(costs: &[Vec<OpCost>], ledger: &LedgerSnapshot, profile: &DeviceProfile) -> StepPrediction {
    predict_on_mesh(costs, ledger, profile, [1, costs.len().max(1)])
}

/// [`predict`] on a mesh of `shape` = [nodes, local ranks]: `costs` holds one node's ranks
/// (every node runs the same ops), `ledger` the whole mesh's traffic, each entry priced over
/// the groups its collective ran on (the columns for `...[node]` entries, the rows otherwise).
pub fn predict_on_mesh(
    costs: &[Vec<OpCost>],
    ledger: &LedgerSnapshot,
    profile: &DeviceProfile,
    shape: [usize; 2],
) -> StepPrediction {
    let ranks = costs.len().max(1);
    // Per label: each rank's seconds and flops.
    let mut compute: BTreeMap<String, Vec<(f64, u64)>> = BTreeMap::new();
    for (r, rank_costs) in costs.iter().enumerate() {
        for op in rank_costs {
            let label = op.label.clone().unwrap_or_else(|| UNLABELLED.to_string());
            let per_rank = compute.entry(label).or_insert_with(|| vec![(0.0, 0); ranks]);
            per_rank[r].0 += profile.op_seconds(op);
            per_rank[r].1 += op.flops;
        }
    }
    let mut comm: BTreeMap<String, f64> = BTreeMap::new();
    for ((label, collective), t) in &ledger.traffic {
        *comm.entry(label.to_string()).or_default() += profile.comm_seconds(collective, t.bytes, t.messages, shape);
    }
    let order = LayerOrder::of(costs);
    let mut labels: Vec<String> = compute.keys().chain(comm.keys()).cloned().collect();
    labels.sort_by_key(|l| order.key(l));
    labels.dedup();
    let phases: Vec<PhaseTime> = labels
        .into_iter()
        .map(|label| {
            let (compute_s, flops) = compute
                .get(&label)
                .and_then(|v| v.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0)))
                .unwrap_or((0.0, 0));
            let comm_s = comm.get(&label).copied().unwrap_or(0.0);
            PhaseTime { label, compute_s, comm_s, flops }
        })
        .collect();
    let compute_s = phases.iter().map(|p| p.compute_s).sum();
    let comm_s = phases.iter().map(|p| p.comm_s).sum();
    let overlapped_s = phases.iter().map(|p| p.compute_s.max(p.comm_s)).sum();
    let sync_overlapped_s = sync_overlapped(&phases);
    StepPrediction { phases, compute_s, comm_s, serial_s: compute_s + comm_s, overlapped_s, sync_overlapped_s }
}

/// The step of `phases` (in the network's order) with each layer's sums started as its
/// backward ends: the forward, then the layers' backward passes from the last layer to the
/// first, each with its own exchanges; each layer's sync queued on one communication stream
/// from the moment its backward is done (its compute, the adding of received pieces, on the
/// compute stream); the phases of no layer stage (the update) once both streams are done.
fn sync_overlapped(phases: &[PhaseTime]) -> f64 {
    let stage = |p: &PhaseTime| layer_and_stage(&p.label).1.to_string();
    let mut compute_end: f64 =
        phases.iter().filter(|p| stage(p) == Stage::Forward.name()).map(|p| p.compute_s + p.comm_s).sum();
    let mut layers: Vec<&str> = Vec::new();
    for p in phases {
        let (layer, st) = layer_and_stage(&p.label);
        if (st == Stage::Backward.name() || st == Stage::Sync.name()) && !layers.contains(&layer) {
            layers.push(layer);
        }
    }
    let of = |layer: &str, st: Stage| phases.iter().find(|p| layer_and_stage(&p.label) == (layer, st.name()));
    let mut comm_end: f64 = 0.0;
    for layer in layers.iter().rev() {
        if let Some(b) = of(layer, Stage::Backward) {
            compute_end += b.compute_s + b.comm_s;
        }
        if let Some(sync) = of(layer, Stage::Sync) {
            comm_end = comm_end.max(compute_end) + sync.comm_s;
            compute_end += sync.compute_s;
        }
    }
    let staged = [Stage::Forward, Stage::Backward, Stage::Sync].map(|s| s.name().to_string());
    let rest: f64 = phases.iter().filter(|p| !staged.contains(&stage(p))).map(|p| p.compute_s + p.comm_s).sum();
    compute_end.max(comm_end) + rest
}

/// The order of a step's layers as its ops ran: each layer where its first op appears in rank
/// 0's cost log (the forward pass, so the network's own order), then the stages of a layer
/// in [`Stage::ALL`] order. Derived from the step itself, so it is right for any module.
#[derive(Debug, Clone, Default)]
pub struct LayerOrder {
    layers: Vec<String>,
}

impl LayerOrder {
    /// The order in which `costs` (one log per rank) first name each layer.
    pub fn of(costs: &[Vec<OpCost>]) -> Self {
        let mut layers: Vec<String> = Vec::new();
        for op in costs.first().into_iter().flatten() {
            if let Some(label) = &op.label {
                let (layer, _) = layer_and_stage(label);
                if !layers.iter().any(|l| l == layer) {
                    layers.push(layer.to_string());
                }
            }
        }
        Self { layers }
    }

    /// The layers in order.
    pub fn layers(&self) -> &[String] {
        &self.layers
    }

    /// Where `layer` and `stage` (its name: `forward`, `backward`, `sync`) sort: layers in the
    /// step's order (unknown ones last), stages in [`Stage::ALL`] order (unknown ones last).
    pub fn rank(&self, layer: &str, stage: &str) -> (usize, usize) {
        let l = self.layers.iter().position(|x| x == layer).unwrap_or(self.layers.len());
        let s = Stage::named(stage).map_or(Stage::ALL.len(), |s| s as usize);
        (l, s)
    }

    /// The sort key of a phase's text, `layer:stage` (ties broken by the text itself).
    pub fn key(&self, label: &str) -> ((usize, usize), String) {
        let (layer, stage) = layer_and_stage(label);
        (self.rank(layer, stage), label.to_string())
    }
}

/// The layer and stage of a phase's text as an op's cost log carries it (owt-meta labels ops
/// with text: it knows nothing of the ledger's types), `-` for a phase without a stage.
fn layer_and_stage(label: &str) -> (&str, &str) {
    label.split_once(':').unwrap_or((label, "-"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Collective;

    #[test]
    fn the_sums_overlap_the_backward_of_the_layers_before_theirs() {
        let phase = |label: &str, compute_s, comm_s| PhaseTime { label: label.into(), compute_s, comm_s, flops: 0 };
        let phases = [
            phase("conv1:forward", 1.0, 0.0),
            phase("conv1:backward", 2.0, 0.0),
            phase("conv1:sync", 0.0, 1.0),
            phase("fc:forward", 1.0, 0.0),
            phase("fc:backward", 2.0, 0.5),
            phase("fc:sync", 0.0, 3.0),
            phase("-", 0.5, 0.0),
        ];
        // Forward 2; fc's backward ends at 4.5, its sum runs 4.5..7.5 while conv1's backward
        // runs 4.5..6.5; conv1's sum then waits for the link, 7.5..8.5; the update after: 9.
        assert_eq!(sync_overlapped(&phases), 9.0);
        let serial: f64 = phases.iter().map(|p| p.compute_s + p.comm_s).sum();
        assert_eq!(serial, 11.0);
    }

    /// The presets are the machines their documentation describes, figure by figure.
    #[test]
    fn the_presets_are_the_documented_machines() {
        let up = |name: &str, span, gbps, latency_us| Uplink { name: name.into(), span, gbps, latency_us };
        let pcie = [up("PCIe switch upstream", 2, 6.0, 10.0), up("QPI, host-staged", 4, 3.0, 20.0)];
        let ten_gbe = [pcie[0].clone(), pcie[1].clone(), up("10 GbE", 8, 1.1, 30.0)];
        let ib = [up("InfiniBand NDR", 8, 400.0, 10.0)];
        let want: [(&str, f64, f64, f64, f64, &[Uplink]); 5] = [
            ("gtx580-pcie", 0.95, 192.0, 6.0, 10.0, &pcie),
            ("gtx580-pcie-10gbe", 0.95, 192.0, 6.0, 10.0, &ten_gbe),
            ("h200-nvlink", 67.0, 4800.0, 450.0, 5.0, &[]),
            ("h200-nvlink-ib", 67.0, 4800.0, 450.0, 5.0, &ib),
            ("cpu", CPU_TFLOPS, CPU_MEM_GBPS, CPU_MEM_GBPS, 1.0, &[]),
        ];
        assert_eq!(want.map(|w| w.0), DeviceProfile::PRESETS);
        for (name, tflops, mem_gbps, link_gbps, latency_us, uplinks) in want {
            let p = DeviceProfile::preset(name).unwrap_or_else(|| panic!("no preset {name}"));
            let expected = DeviceProfile {
                name: name.into(),
                tflops,
                mem_gbps,
                link_gbps,
                latency_us,
                uplinks: uplinks.to_vec(),
                node_devices: 8,
            };
            assert_eq!(p, expected);
        }
        assert_eq!(DeviceProfile::preset("gtx580"), None);
        // The link between nodes is the uplink spanning a node's 8 devices; one server has none.
        let between = |name: &str| DeviceProfile::preset(name).unwrap().between_nodes().map(|u| u.name.clone());
        assert_eq!(between("gtx580-pcie"), None);
        assert_eq!(between("gtx580-pcie-10gbe").as_deref(), Some("10 GbE"));
        assert_eq!(between("h200-nvlink"), None);
        assert_eq!(between("h200-nvlink-ib").as_deref(), Some("InfiniBand NDR"));
    }

    /// Every op, phase and total of a two-rank step priced by hand: each rank's seconds summed
    /// per phase, the slowest rank's kept with its flops, phases in the step's layer order
    /// (stages in theirs, unlabelled ops last), each phase's collectives summed.
    #[test]
    fn a_step_is_priced_phase_by_phase_from_the_slowest_rank_and_the_ledger() {
        let p = DeviceProfile {
            name: "t".into(),
            tflops: 1.0,
            mem_gbps: 1000.0,
            link_gbps: 1.0,
            latency_us: 7.0,
            uplinks: vec![],
            node_devices: 8,
        };
        const T: u64 = 1_000_000_000_000; // one second of arithmetic
        let unlabelled = OpCost { op: "float_add", label: None, flops: T / 2, bytes_read: 0, bytes_written: 0 };
        let costs = vec![
            vec![
                op("conv1:forward", T, 0),
                op("fc6:forward", 2 * T, 0),
                op("fc6:backward", T, 0),
                op("conv1:backward", 3 * T, 0),
                unlabelled,
            ],
            vec![
                op("conv1:forward", 2 * T, 0),
                op("fc6:forward", T, 0),
                op("fc6:backward", T, 0),
                op("conv1:backward", T, 0),
                op("conv1:forward", T / 2, 0),
            ],
        ];
        let mut ledger = LedgerSnapshot::default();
        let entries = [
            ("conv1:sync", Collective::AllReduce, 3_000_000_000, 4),
            ("fc6:forward", Collective::AllGather, 4_000_000_000, 2),
            ("fc6:forward", Collective::AllReduce, 1_000_000_000, 2),
        ];
        for (label, collective, bytes, messages) in entries {
            ledger.traffic.insert((label.into(), collective.into()), crate::ledger::Traffic::within(bytes, messages));
        }
        let comm = |i: usize| {
            let (_, collective, bytes, messages) = entries[i];
            let seconds = p.comm_seconds(&collective.into(), bytes, messages, [1, 2]);
            assert!(seconds > 0.1, "{seconds}");
            seconds
        };
        let s = predict(&costs, &ledger, &p);
        let got: Vec<(&str, f64, f64, u64)> =
            s.phases.iter().map(|ph| (ph.label.as_str(), ph.compute_s, ph.comm_s, ph.flops)).collect();
        let want = [
            ("conv1:forward", 2.5, 0.0, 5 * T / 2),
            ("conv1:backward", 3.0, 0.0, 3 * T),
            ("conv1:sync", 0.0, comm(0), 0),
            ("fc6:forward", 2.0, comm(1) + comm(2), 2 * T),
            ("fc6:backward", 1.0, 0.0, T),
            ("-", 0.5, 0.0, T / 2),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.0, g.3), (w.0, w.3), "{got:?}");
            assert!((g.1 - w.1).abs() < 1e-12 && (g.2 - w.2).abs() < 1e-12, "{g:?} vs {w:?}");
        }
        let (compute, comm_all) = (9.0, comm(0) + comm(1) + comm(2));
        assert!((s.compute_s - compute).abs() < 1e-12 && (s.comm_s - comm_all).abs() < 1e-12, "{s:?}");
        assert!((s.serial_s - (compute + comm_all)).abs() < 1e-12, "{s:?}");
        let overlapped: f64 = want.iter().map(|w| w.1.max(w.2)).sum();
        assert!((s.overlapped_s - overlapped).abs() < 1e-12, "{s:?}");
        assert_eq!(s.sync_overlapped_s, sync_overlapped(&s.phases));
        // One rank's log: the mesh is [1, 1]; an empty log prices nothing.
        assert_eq!(predict(&costs[..1], &LedgerSnapshot::default(), &p).compute_s, 1.0 + 2.0 + 1.0 + 3.0 + 0.5);
        assert!(predict(&[], &LedgerSnapshot::default(), &p).phases.is_empty());
    }

    /// An op costs the slower of its arithmetic and its memory traffic (read and written).
    #[test]
    fn an_op_costs_the_slower_of_its_arithmetic_and_its_bytes() {
        let p = DeviceProfile::preset("cpu").unwrap();
        let cost = |flops: u64, bytes_read: u64, bytes_written: u64| {
            p.op_seconds(&OpCost { op: "conv2d", label: None, flops, bytes_read, bytes_written })
        };
        // 0.06 TFLOP/s and 5 GB/s: 6e10 flops are 1 s, 5e9 bytes are 1 s.
        assert!((cost(60_000_000_000, 1_000, 0) - 1.0).abs() < 1e-12);
        assert!((cost(1_000, 3_000_000_000, 2_000_000_000) - 1.0).abs() < 1e-12);
        assert!((cost(120_000_000_000, 2_500_000_000, 2_500_000_000) - 2.0).abs() < 1e-12);
    }

    /// Layers sort where rank 0's log first names them, stages as a step runs them, unknown
    /// ones last, ties by the text.
    #[test]
    fn phases_sort_by_the_steps_layer_order_then_by_stage() {
        let costs = vec![vec![
            op("fc6:forward", 1, 0),
            op("conv1:forward", 1, 0),
            OpCost { op: "float_add", label: None, flops: 1, bytes_read: 0, bytes_written: 0 },
            op("fc6:backward", 1, 0),
            op("pool", 1, 0),
        ]];
        let order = LayerOrder::of(&costs);
        assert_eq!(order.layers(), ["fc6", "conv1", "pool"]);
        assert_eq!(order.rank("conv1", "backward"), (1, 1));
        assert_eq!(order.rank("fc6", "sync"), (0, 2));
        assert_eq!(order.rank("fc7", "forward"), (3, 0));
        assert_eq!(order.rank("pool", "-"), (2, 3));
        assert_eq!(order.key("conv1:sync"), ((1, 2), "conv1:sync".to_string()));
        assert_eq!(order.key("pool"), ((2, 3), "pool".to_string()));
        assert!(LayerOrder::of(&[]).layers().is_empty());
    }

    /// What the first test leaves at zero, priced by hand: a forward pass that communicates,
    /// the compute of a sum (adding the received pieces), a layer whose only phase is its
    /// backward pass, one whose only phase is its sum, an update that communicates.
    #[test]
    fn every_phase_of_a_step_takes_its_place_in_the_overlap() {
        let phase = |label: &str, compute_s, comm_s| PhaseTime { label: label.into(), compute_s, comm_s, flops: 0 };
        let phases = |c_sum: f64| {
            [
                phase("a:forward", 1.0, 0.5),
                phase("a:backward", 1.0, 0.0),
                phase("b:backward", 5.0, 0.25),
                phase("c:sync", 0.25, c_sum),
                phase("a:sync", 0.0, 2.0),
                phase("-", 0.5, 0.25),
            ]
        };
        // Forward 1.5. c's sum (the last layer's) is on the link from 1.5, its adding on the
        // compute stream 1.5..1.75; b's backward 1.75..7, a's 7..8; a's sum starts when both
        // its backward and c's sum are done and takes 2 s; then the update, 0.75.
        assert_eq!(sync_overlapped(&phases(4.0)), 8.0 + 2.0 + 0.75);
        // A long sum of c's: a's waits for the link, not for the backward passes.
        assert_eq!(sync_overlapped(&phases(10.0)), 1.5 + 10.0 + 2.0 + 0.75);
    }

    fn op(label: &str, flops: u64, bytes: u64) -> OpCost {
        OpCost { op: "float_matmul", label: Some(label.into()), flops, bytes_read: bytes, bytes_written: 0 }
    }

    #[test]
    fn the_slowest_rank_sets_the_pace_and_overlap_takes_the_larger_side() {
        let p = DeviceProfile {
            name: "t".into(),
            tflops: 1.0,
            mem_gbps: 1000.0,
            link_gbps: 1.0,
            latency_us: 0.0,
            uplinks: vec![],
            node_devices: 8,
        };
        // Rank 1 has twice rank 0's work in fc6:forward; 1e12 flops at 1 TFLOP/s is 1 s.
        let costs = vec![vec![op("fc6:forward", 500_000_000_000, 0)], vec![op("fc6:forward", 1_000_000_000_000, 0)]];
        let mut ledger = LedgerSnapshot::default();
        // 4e9 bytes landing on 2 ranks over 1 GB/s links: 2 s.
        ledger.traffic.insert(
            ("fc6:forward".into(), Collective::AllGather.into()),
            crate::ledger::Traffic::within(4_000_000_000, 2),
        );
        let s = predict(&costs, &ledger, &p);
        assert_eq!(s.phases.len(), 1);
        assert!((s.compute_s - 1.0).abs() < 1e-9 && (s.comm_s - 2.0).abs() < 1e-9, "{s:?}");
        assert!((s.serial_s - 3.0).abs() < 1e-9 && (s.overlapped_s - 2.0).abs() < 1e-9, "{s:?}");
        // A memory-bound op costs its bytes, not its flops.
        let mem = op("x", 1, 2_000_000_000_000);
        assert!((p.op_seconds(&mem) - 2.0).abs() < 1e-9);
    }
}
