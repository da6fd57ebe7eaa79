//! `owt plan --profile`: a step's predicted time on a device profile and the speedups it
//! implies, from dry runs of the real step (1 to 8 devices on the plan asked for; 1 to 8 nodes
//! of a node's devices for data parallelism, the flat weird trick and the 2-D weird trick).

use serde::Serialize;

use owt_hybrid::{DeviceProfile, Exchange, Plan, PlanKind, StepPrediction, Uplink, WirePrecision};
use owt_models::{Architecture, Head};

use crate::error::OwtError;
use crate::parallel::PlanDryRun;
use crate::train::FcUpdate;

/// What every dry run of the tables shares: the model, scheme, head, FC schedule and the
/// images each rank takes.
#[derive(Debug, Clone, Copy)]
pub struct StepShape<'a> {
    /// The network.
    pub arch: &'a Architecture,
    /// Images per rank (the global batch over the ranks).
    pub per_rank: usize,
    /// Activity exchange scheme.
    pub scheme: Exchange,
    /// Output head.
    pub head: Head,
    /// When FC weights are updated.
    pub fc_update: FcUpdate,
    /// The precision pieces cross ranks in.
    pub wire: WirePrecision,
}

impl<'a> StepShape<'a> {
    fn dry_run<'p>(&self, plan: &'p Plan, ranks: usize) -> PlanDryRun<'p>
    where
        'a: 'p,
    {
        PlanDryRun {
            arch: self.arch,
            plan,
            ranks,
            batch: self.per_rank * ranks,
            scheme: self.scheme,
            head: self.head,
            fc_update: self.fc_update,
            wire: self.wire,
        }
    }

    /// The same step sending in `wire`.
    fn on_wire(&self, wire: WirePrecision) -> Self {
        Self { wire, ..*self }
    }

    /// The step on a 1-D mesh of `ranks`.
    fn flat(&self, plan: &Plan, ranks: usize, profile: &DeviceProfile) -> Result<StepPrediction, OwtError> {
        Ok(self.dry_run(plan, ranks).run()?.predict(profile))
    }

    /// The step on a 2-D mesh of `shape`, `plan` inside each node.
    fn grid(&self, plan: &Plan, shape: [usize; 2], profile: &DeviceProfile) -> Result<StepPrediction, OwtError> {
        let (report, _) = self.dry_run(plan, shape[0] * shape[1]).run_on_grid(shape)?;
        Ok(report.predict_on_mesh(profile, shape))
    }
}

/// One row of the speedup table over K devices: `K x T1 / TK`, serial and overlapped.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedupRow {
    /// Devices.
    pub devices: usize,
    /// Predicted step, ms, nothing overlapped (absent where the plan cannot run on K).
    pub step_ms: Option<f64>,
    /// Predicted step, ms, communication overlapped per layer phase.
    pub overlapped_ms: Option<f64>,
    /// Throughput over one device, serial.
    pub speedup: Option<f64>,
    /// Throughput over one device, overlapped.
    pub overlapped_speedup: Option<f64>,
    /// Predicted step, ms, the gradient sums overlapped with the backward pass (a layout's
    /// `with_overlapped_sync`, `--overlap-sync`).
    pub sync_overlapped_ms: Option<f64>,
    /// Throughput over one device, the sums overlapped with the backward pass.
    pub sync_overlapped_speedup: Option<f64>,
    /// Why the plan cannot run on K, where it cannot.
    pub error: Option<String>,
}

impl SpeedupRow {
    fn of(devices: usize, step: Result<StepPrediction, OwtError>, one: Option<&StepPrediction>) -> Self {
        match step {
            Ok(p) => {
                let k = devices as f64;
                SpeedupRow {
                    devices,
                    step_ms: Some(p.serial_s * 1e3),
                    overlapped_ms: Some(p.overlapped_s * 1e3),
                    speedup: one.map(|b| k * b.serial_s / p.serial_s),
                    overlapped_speedup: one.map(|b| k * b.overlapped_s / p.overlapped_s),
                    sync_overlapped_ms: Some(p.sync_overlapped_s * 1e3),
                    sync_overlapped_speedup: one.map(|b| k * b.serial_s / p.sync_overlapped_s),
                    error: None,
                }
            }
            Err(e) => SpeedupRow {
                devices,
                step_ms: None,
                overlapped_ms: None,
                speedup: None,
                overlapped_speedup: None,
                sync_overlapped_ms: None,
                sync_overlapped_speedup: None,
                error: Some(e.to_string()),
            },
        }
    }
}

/// The plan asked for on 1, 2, 4 and 8 devices, each with the same images per rank.
pub fn device_speedups(shape: &StepShape, plan: &Plan, profile: &DeviceProfile) -> Vec<SpeedupRow> {
    let one = shape.flat(plan, 1, profile).ok();
    [1usize, 2, 4, 8].into_iter().map(|k| SpeedupRow::of(k, shape.flat(plan, k, profile), one.as_ref())).collect()
}

/// One row of the nodes table: N nodes of L devices, three layouts sending in the step's
/// wire precision, and two of them in bf16.
#[derive(Debug, Clone, Serialize)]
pub struct NodeRow {
    /// Nodes.
    pub nodes: usize,
    /// Data-parallel over all N x L ranks.
    pub data_parallel: SpeedupRow,
    /// The weird trick over all N x L ranks as one 1-D mesh (FC columns split over every rank).
    pub flat_weird_trick: SpeedupRow,
    /// The weird trick inside each node, data-parallel across nodes (`--mesh N,L`).
    pub grid_weird_trick: SpeedupRow,
    /// Data-parallel with bf16 on the wire.
    pub data_parallel_bf16: SpeedupRow,
    /// The 2-D weird trick with bf16 on the wire.
    pub grid_weird_trick_bf16: SpeedupRow,
}

/// Data parallelism, the flat weird trick and the 2-D weird trick on 1..=8 nodes of `local`
/// devices in the step's wire precision, data parallelism and the 2-D weird trick in bf16,
/// each over one device at the same images per rank (one device sends nothing, so its step
/// is the same in any precision).
pub fn node_speedups(shape: &StepShape, local: usize, profile: &DeviceProfile) -> Vec<NodeRow> {
    let (dp, wt) = (PlanKind::DataParallel.plan(), PlanKind::WeirdTrick.plan());
    let one = shape.flat(&dp, 1, profile).ok();
    let one = one.as_ref();
    let bf16 = shape.on_wire(WirePrecision::Bf16);
    (1..=8)
        .map(|n| {
            let k = n * local;
            NodeRow {
                nodes: n,
                data_parallel: SpeedupRow::of(k, shape.flat(&dp, k, profile), one),
                flat_weird_trick: SpeedupRow::of(k, shape.flat(&wt, k, profile), one),
                grid_weird_trick: SpeedupRow::of(k, shape.grid(&wt, [n, local], profile), one),
                data_parallel_bf16: SpeedupRow::of(k, bf16.flat(&dp, k, profile), one),
                grid_weird_trick_bf16: SpeedupRow::of(k, bf16.grid(&wt, [n, local], profile), one),
            }
        })
        .collect()
}

/// Everything `owt plan --profile --json` adds to the traffic: the profile, the prediction of
/// the step asked for, and both speedup tables.
#[derive(Debug, Clone, Serialize)]
pub struct CostReport {
    /// The profile's figures.
    pub profile: DeviceProfile,
    /// The step asked for, per layer phase.
    pub prediction: StepPrediction,
    /// The plan asked for on 1, 2, 4, 8 devices (1-D meshes only).
    pub speedups: Vec<SpeedupRow>,
    /// Devices per node in `nodes`.
    pub node_devices: usize,
    /// 1..8 nodes: data-parallel, flat and 2-D weird trick.
    pub nodes: Vec<NodeRow>,
}

fn ms(s: f64) -> String {
    format!("{:.2}", s * 1e3)
}

/// The profile in one line.
pub fn describe(profile: &DeviceProfile) -> String {
    let mut s = format!(
        "{} ({} TFLOP/s, {} GB/s memory, {} GB/s links, {} us/message",
        profile.name, profile.tflops, profile.mem_gbps, profile.link_gbps, profile.latency_us
    );
    for u in &profile.uplinks {
        s.push_str(&format!("; shared by each {} ranks: {} {} GB/s, {} us", u.span, u.name, u.gbps, u.latency_us));
    }
    s.push(')');
    s
}

/// Compute, communication and step time per layer phase.
pub fn print_prediction(p: &StepPrediction, profile: &DeviceProfile) {
    println!();
    println!("predicted on {}, ms:", describe(profile));
    println!("{:<16} {:>10} {:>10} {:>14}", "layer:phase", "compute", "comm", "GFLOP/rank");
    for t in &p.phases {
        println!("{:<16} {:>10} {:>10} {:>14.3}", t.label, ms(t.compute_s), ms(t.comm_s), t.flops as f64 / 1e9);
    }
    println!(
        "step: compute {} + comm {} = {} ms serial; {} ms with each phase's communication overlapped; {} ms with the gradient sums overlapped with the backward pass",
        ms(p.compute_s),
        ms(p.comm_s),
        ms(p.serial_s),
        ms(p.overlapped_s),
        ms(p.sync_overlapped_s)
    );
}

fn times(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}x")).unwrap_or_else(|| "-".into())
}

/// The 1, 2, 4, 8 devices table.
pub fn print_device_speedups(rows: &[SpeedupRow], per_rank: usize) {
    println!();
    println!("speedup over one device, {per_rank} images per rank (throughput ratio K x T1 / TK):");
    println!("{:>2} {:>12} {:>14} {:>9} {:>11}", "K", "step ms", "overlapped ms", "speedup", "overlapped");
    for r in rows {
        match (&r.error, r.step_ms, r.overlapped_ms) {
            (None, Some(s), Some(o)) => println!(
                "{:>2} {s:>12.2} {o:>14.2} {:>9} {:>11}",
                r.devices,
                times(r.speedup),
                times(r.overlapped_speedup)
            ),
            (e, _, _) => println!("{:>2} n/a: {}", r.devices, e.as_deref().unwrap_or("no prediction")),
        }
    }
}

/// The 1..8 nodes table.
pub fn print_node_speedups(rows: &[NodeRow], local: usize, per_rank: usize, scheme: Exchange, wire: WirePrecision) {
    println!();
    println!(
        "1..8 nodes of {local} devices, {per_rank} images per rank, speedup over one device (serial; overlapped in brackets); weird trick scheme {}; {} on the wire, then bf16:",
        scheme.letter(),
        wire.name()
    );
    println!(
        "{:>5} {:>5} {:>20} {:>20} {:>20} {:>20} {:>20}",
        "nodes",
        "ranks",
        "data-parallel",
        "flat weird trick",
        "2-D weird trick",
        "data-parallel bf16",
        "2-D weird bf16"
    );
    let cell = |r: &SpeedupRow| match r.error {
        None => format!("{} ({})", times(r.speedup), times(r.overlapped_speedup)),
        Some(_) => "n/a".to_string(),
    };
    let mut reasons = Vec::new();
    for row in rows {
        println!(
            "{:>5} {:>5} {:>20} {:>20} {:>20} {:>20} {:>20}",
            row.nodes,
            row.data_parallel.devices,
            cell(&row.data_parallel),
            cell(&row.flat_weird_trick),
            cell(&row.grid_weird_trick),
            cell(&row.data_parallel_bf16),
            cell(&row.grid_weird_trick_bf16)
        );
        for (what, r) in [
            ("data-parallel", &row.data_parallel),
            ("flat", &row.flat_weird_trick),
            ("2-D", &row.grid_weird_trick),
            ("data-parallel bf16", &row.data_parallel_bf16),
            ("2-D bf16", &row.grid_weird_trick_bf16),
        ] {
            if let Some(e) = &r.error {
                if !reasons.iter().any(|(w, x): &(&str, String)| *w == what && x == e) {
                    reasons.push((what, e.clone()));
                }
            }
        }
    }
    for (what, e) in reasons {
        println!("n/a ({what}): {e}");
    }
}

/// A profile from `--profile` or the four explicit figures (all of which must then be given
/// and positive), with any `--uplink SPAN,GBPS,US` above a custom profile's own links (the
/// widest of them is the network between nodes).
/// The figures of a custom profile and the range each is accepted in: from a thousandth of
/// the slowest device or link anyone would plan for to a thousand times the fastest there is,
/// so that every time the cost model predicts (flops over rate, bytes over bandwidth, plus
/// latencies) is finite and positive, and a table never reads "NaNx faster".
pub const FIGURES: [(&str, std::ops::RangeInclusive<f64>); 4] =
    [("--tflops", 1e-3..=1e6), ("--mem-gbps", 1e-3..=1e6), ("--link-gbps", 1e-6..=1e6), ("--latency-us", 0.0..=1e9)];

/// Bandwidths of an `--uplink`, GB/s: those of `--link-gbps`.
const UPLINK_GBPS: std::ops::RangeInclusive<f64> = 1e-6..=1e6;

/// Latencies of an `--uplink`, microseconds: those of `--latency-us`.
const UPLINK_US: std::ops::RangeInclusive<f64> = 0.0..=1e9;

/// The widest `--uplink` span: the speedup tables price up to 8 nodes of it, and a dry run
/// takes at most [`crate::train::budget::MAX_DRY_RUN_RANKS`] ranks.
pub const MAX_UPLINK_SPAN: usize = crate::train::budget::MAX_DRY_RUN_RANKS / 8;

/// What a figure's range stands for, in words.
fn why(name: &str) -> &'static str {
    match name {
        "--tflops" => "1 GFLOP/s to 1 EFLOP/s",
        "--mem-gbps" => "1 MB/s to 1 PB/s",
        "--link-gbps" => "1 KB/s to 1 PB/s",
        _ => "up to 1000 s",
    }
}

pub fn profile_from_args(
    preset: Option<&str>,
    figures: [Option<f64>; 4],
    uplinks: &[Uplink],
) -> Result<Option<DeviceProfile>, OwtError> {
    let explicit = figures;
    match (preset, explicit.iter().any(Option::is_some)) {
        (Some(_), true) => {
            Err(OwtError::input("give either --profile or --tflops/--mem-gbps/--link-gbps/--latency-us, not both"))
        }
        (Some(_), false) if !uplinks.is_empty() => Err(OwtError::input(
            "--uplink adds a shared link to a custom profile (--tflops ...); a --profile preset has its own",
        )),
        (Some(name), false) => DeviceProfile::preset(name).map(Some).ok_or_else(|| {
            OwtError::input(format!(
                "unknown --profile {name:?}; expected one of {}",
                DeviceProfile::PRESETS.join(", ")
            ))
        }),
        (None, false) if !uplinks.is_empty() => Err(OwtError::input(
            "--uplink needs a custom profile: give --tflops, --mem-gbps, --link-gbps and --latency-us",
        )),
        (None, false) => Ok(None),
        (None, true) => {
            let mut values = [0.0; 4];
            for ((v, (name, range)), out) in explicit.iter().zip(FIGURES).zip(&mut values) {
                match v {
                    Some(x) if range.contains(x) => *out = *x,
                    Some(x) => {
                        return Err(OwtError::input(format!(
                            "{name} must be in [{}, {}] ({}), got {x:?}",
                            range.start(),
                            range.end(),
                            why(name)
                        )))
                    }
                    None => {
                        return Err(OwtError::input(format!(
                            "{name} is missing: a custom profile needs all four figures"
                        )))
                    }
                }
            }
            let [tflops, mem_gbps, link_gbps, latency_us] = values;
            let mut uplinks = uplinks.to_vec();
            uplinks.sort_by_key(|u| u.span);
            if let Some(w) = uplinks.windows(2).find(|w| w[0].span == w[1].span) {
                return Err(OwtError::input(format!("two --uplink entries have span {}; one per span", w[0].span)));
            }
            // The widest shared link is taken as the network card of a node.
            let node_devices = uplinks.last().map_or(8, |u| u.span);
            Ok(Some(DeviceProfile {
                name: "custom".into(),
                tflops,
                mem_gbps,
                link_gbps,
                latency_us,
                uplinks,
                node_devices,
            }))
        }
    }
}

/// `SPAN,GBPS,US`: a shared link above each block of SPAN ranks.
pub fn parse_uplink(s: &str) -> Result<Uplink, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let bad = || {
        format!(
            "expected SPAN,GBPS,US (ranks behind the link, 2 to {MAX_UPLINK_SPAN}; GB/s in [{}, {}]; latency us in [{}, {}]), got {s:?}",
            UPLINK_GBPS.start(),
            UPLINK_GBPS.end(),
            UPLINK_US.start(),
            UPLINK_US.end()
        )
    };
    let [span, gbps, us] = parts.as_slice() else { return Err(bad()) };
    let span: usize = span.parse().map_err(|_| bad())?;
    let gbps: f64 = gbps.parse().map_err(|_| bad())?;
    let latency_us: f64 = us.parse().map_err(|_| bad())?;
    if !(2..=MAX_UPLINK_SPAN).contains(&span) || !UPLINK_GBPS.contains(&gbps) || !UPLINK_US.contains(&latency_us) {
        return Err(bad());
    }
    Ok(Uplink { name: format!("uplink of {span}"), span, gbps, latency_us })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_named_or_complete() {
        assert!(profile_from_args(Some("h200-nvlink"), [None; 4], &[]).unwrap().is_some());
        let e = profile_from_args(Some("tpu"), [None; 4], &[]).unwrap_err();
        assert!(e.to_string().contains("gtx580-pcie"), "{e}");
        let e = profile_from_args(None, [Some(1.0), None, Some(2.0), Some(1.0)], &[]).unwrap_err();
        assert!(e.to_string().contains("--mem-gbps is missing"), "{e}");
        let e = profile_from_args(Some("cpu"), [Some(1.0), None, None, None], &[]).unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let e = profile_from_args(None, [Some(-1.0), Some(1.0), Some(1.0), Some(1.0)], &[]).unwrap_err();
        assert!(e.to_string().contains("--tflops must be in [0.001, 1000000]"), "{e}");
        // Beyond the ranges a predicted time is infinite or zero: refused, naming the range.
        for (i, x) in [(0, 1e-308), (1, 5e-324), (2, 1e308), (3, 1e308), (3, -0.5)] {
            let mut figures = [Some(1.0); 4];
            figures[i] = Some(x);
            let e = profile_from_args(None, figures, &[]).unwrap_err().to_string();
            assert!(e.contains(&format!("{} must be in [", FIGURES[i].0)) && e.ends_with(&format!("got {x:?}")), "{e}");
        }
        let edges = [Some(1e-3), Some(1e6), Some(1e-6), Some(0.0)];
        assert!(profile_from_args(None, edges, &[]).unwrap().is_some());
    }

    #[test]
    fn uplinks_are_parsed_checked_and_sorted() {
        let u = parse_uplink("8, 1.25, 30").unwrap();
        assert_eq!((u.span, u.gbps, u.latency_us), (8, 1.25, 30.0));
        let widest = format!("{MAX_UPLINK_SPAN},1,1");
        assert_eq!(parse_uplink(&widest).unwrap().span, MAX_UPLINK_SPAN);
        let wider = format!("{},1,1", MAX_UPLINK_SPAN + 1);
        for bad in ["1,1,1", "4,0,1", "4,1,-1", "4,1", "x,1,1", "4,nan,1", "4,5e-324,1", "4,1,1e308", &wider] {
            assert!(parse_uplink(bad).unwrap_err().contains("SPAN,GBPS,US"), "{bad}");
        }
        let figures = [Some(1.0), Some(1.0), Some(1.0), Some(1.0)];
        let p = profile_from_args(None, figures, &[u.clone(), parse_uplink("2,6,10").unwrap()]).unwrap().unwrap();
        assert_eq!(p.uplinks.iter().map(|u| u.span).collect::<Vec<_>>(), vec![2, 8]);
        assert_eq!((p.node_devices, p.between_nodes().map(|u| u.span)), (8, Some(8)));
        let e = profile_from_args(None, figures, &[u.clone(), u.clone()]).unwrap_err();
        assert!(e.to_string().contains("span 8"), "{e}");
        let e = profile_from_args(Some("cpu"), [None; 4], &[u.clone()]).unwrap_err();
        assert!(e.to_string().contains("custom profile"), "{e}");
        let e = profile_from_args(None, [None; 4], &[u]).unwrap_err();
        assert!(e.to_string().contains("--tflops"), "{e}");
    }
}
