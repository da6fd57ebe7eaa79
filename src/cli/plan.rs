//! `owt plan`: the communication of one training step under a parallel plan, from a dry run of
//! the real step on shape-only devices.

use clap::Args;

use owt_hybrid::{DeviceProfile, Exchange, Plan, PlanKind, StepPrediction};
use owt_models::Head;

use crate::cli::{fc_update_parser, parse_head, parse_scheme, plan_kind_parser, ModelArgs};
use crate::error::OwtError;
use crate::parallel::PlanDryRun;
use crate::train::FcUpdate;

/// Arguments of `owt plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Ranks of the mesh (N x L with --mesh).
    #[arg(long, required_unless_present = "mesh")]
    pub devices: Option<usize>,
    /// A 2-D mesh of N nodes x L local ranks ("N,L"): the plan inside each node, data-parallel
    /// across nodes; shows each parameter's placement per dimension and the bytes across nodes.
    #[arg(long, value_parser = parse_mesh)]
    pub mesh: Option<[usize; 2]>,
    /// Processes the ranks are spread over (`mpirun -np P`, --devices / P ranks each): shows
    /// which entries cross between processes.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Global batch (all ranks together), as `owt train --batch`.
    #[arg(long)]
    pub batch: usize,
    /// Parallel plan.
    #[arg(long, default_value = "weird-trick", value_parser = plan_kind_parser())]
    pub plan: PlanKind,
    /// Activity exchange scheme: a, b or c.
    #[arg(long, default_value = "a", value_parser = parse_scheme)]
    pub scheme: Exchange,
    /// Output head, as `owt train --head`.
    #[arg(long, default_value = "softmax", value_parser = parse_head)]
    pub head: Head,
    /// When FC weights are updated, as `owt train --fc-update`.
    #[arg(long, default_value = "per-step", value_parser = fc_update_parser())]
    pub fc_update: FcUpdate,
    /// Device profile for predicted times: gtx580-pcie, h200-nvlink or cpu.
    #[arg(long)]
    pub profile: Option<String>,
    /// Custom profile: sustained TFLOP/s (with --mem-gbps, --link-gbps, --latency-us).
    #[arg(long)]
    pub tflops: Option<f64>,
    /// Custom profile: memory bandwidth, GB/s.
    #[arg(long)]
    pub mem_gbps: Option<f64>,
    /// Custom profile: one rank's link bandwidth each way, GB/s.
    #[arg(long)]
    pub link_gbps: Option<f64>,
    /// Custom profile: latency of one message, microseconds.
    #[arg(long)]
    pub latency_us: Option<f64>,
    /// Print JSON: {"total_bytes":..,"total_messages":..,"layers":[..]}.
    #[arg(long)]
    pub json: bool,
}

/// Prints the plan's bytes and messages per layer, phase and collective, and the totals.
pub fn run(args: &PlanArgs) -> Result<(), OwtError> {
    if args.batch == 0 {
        return Err(OwtError::input("--batch must be at least 1, got 0"));
    }
    let devices = match (args.devices, args.mesh) {
        (Some(d), Some([n, l])) if d != n * l => {
            return Err(OwtError::input(format!("--mesh {n},{l} has {} ranks, --devices says {d}", n * l)))
        }
        (_, Some(_)) if args.processes > 1 => {
            return Err(OwtError::input("--mesh with --processes: a 2-D mesh across processes is not built yet"))
        }
        (Some(d), _) => d,
        (None, Some([n, l])) => n * l,
        (None, None) => unreachable!("clap requires --devices or --mesh"),
    };
    if devices == 0 {
        return Err(OwtError::input("--devices must be at least 1, got 0"));
    }
    if let Some(shape) = args.mesh {
        return run_grid(args, shape);
    }
    let profile =
        profile_from_args(args.profile.as_deref(), args.tflops, args.mem_gbps, args.link_gbps, args.latency_us)?;
    let arch = args.model.spec().architecture()?;
    let layout = args.plan.plan();
    let report = PlanDryRun {
        arch: &arch,
        plan: &layout,
        ranks: devices,
        batch: args.batch,
        scheme: args.scheme,
        head: args.head,
        fc_update: args.fc_update,
    }
    .run_on_processes(args.processes)?;
    let plan = report.comm.clone();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan).map_err(|e| OwtError::io(e.to_string()))?);
        return Ok(());
    }
    println!(
        "{} on {} devices, plan {}, scheme {}, global batch {} (f32, {} head, FC update {}): one training step, from a dry run on shape-only devices ({} ms)",
        arch.name,
        devices,
        args.plan.name(),
        args.scheme.letter(),
        args.batch,
        args.head.name(),
        args.fc_update.name(),
        report.elapsed.as_millis()
    );
    let across = args.processes > 1;
    if across {
        println!(
            "ranks over {} processes of {} (mpirun -np {}): the last column is what crosses between them",
            args.processes,
            devices / args.processes,
            args.processes
        );
    }
    let column = |b: u64| if across { format!(" {b:>15}") } else { String::new() };
    let head = if across { format!(" {:>15}", "across procs") } else { String::new() };
    println!("{:<6} {:<9} {:<15} {:>15} {:>9}{head}", "layer", "phase", "collective", "bytes", "messages");
    for t in &plan.layers {
        println!(
            "{:<6} {:<9} {:<15} {:>15} {:>9}{}",
            t.layer,
            t.phase,
            t.collective,
            t.bytes,
            t.messages,
            column(t.cross_process_bytes)
        );
    }
    println!(
        "{:<32} {:>15} {:>9}{}",
        "total",
        plan.total_bytes,
        plan.total_messages,
        column(plan.total_cross_process_bytes)
    );
    for (op, count) in &report.ledger.fallbacks {
        println!("fallback: {op} ran on gathered inputs {count} time(s) (no placement rule for its inputs)");
    }
    if let Some(profile) = profile {
        print_prediction(&report.predict(&profile), &profile);
        print_speedups(args, devices, &arch, &layout, &profile)?;
    }
    Ok(())
}

/// `N,L`: a 2-D mesh's shape.
fn parse_mesh(s: &str) -> Result<[usize; 2], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let dims: Vec<usize> = parts.iter().filter_map(|p| p.parse().ok()).collect();
    match (parts.len(), dims.as_slice()) {
        (2, &[n, l]) if n > 0 && l > 0 => Ok([n, l]),
        _ => Err(format!("expected N,L (nodes, local ranks, both at least 1), got {s:?}")),
    }
}

/// `owt plan --mesh N,L`: placements per dimension and the step's traffic on the 2-D mesh.
fn run_grid(args: &PlanArgs, shape: [usize; 2]) -> Result<(), OwtError> {
    let arch = args.model.spec().architecture()?;
    let plan = args.plan.plan();
    let (report, placements) = PlanDryRun {
        arch: &arch,
        plan: &plan,
        ranks: shape[0] * shape[1],
        batch: args.batch,
        scheme: args.scheme,
        head: args.head,
        fc_update: args.fc_update,
    }
    .run_on_grid(shape)?;
    if args.json {
        let placements: Vec<serde_json::Value> = placements
            .iter()
            .map(
                |(path, p)| serde_json::json!({"parameter": path, "node": p[0].to_string(), "local": p[1].to_string()}),
            )
            .collect();
        let out = serde_json::json!({"mesh": {"node": shape[0], "local": shape[1]}, "placements": placements, "traffic": report.comm});
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| OwtError::io(e.to_string()))?);
        return Ok(());
    }
    let [n, l] = shape;
    println!(
        "{} on a 2-D mesh of {n} nodes x {l} local ranks, plan {} inside each node and data-parallel across, scheme {}, global batch {} ({} per node): one training step, from a dry run ({} ms)",
        arch.name,
        args.plan.name(),
        args.scheme.letter(),
        args.batch,
        args.batch / n,
        report.elapsed.as_millis()
    );
    println!("{:<14} {}", "parameter", "placement [node, local]");
    for (path, p) in &placements {
        println!("{path:<14} {}", owt_hybrid::grid::describe(p));
    }
    println!();
    println!("{:<6} {:<9} {:<17} {:>15} {:>9}", "layer", "phase", "collective", "bytes", "messages");
    for t in &report.comm.layers {
        println!("{:<6} {:<9} {:<17} {:>15} {:>9}", t.layer, t.phase, t.collective, t.bytes, t.messages);
    }
    println!("{:<34} {:>15} {:>9}", "total", report.comm.total_bytes, report.comm.total_messages);
    println!("across nodes (the [node] entries): {} bytes", report.comm.total_cross_process_bytes);
    Ok(())
}

fn ms(s: f64) -> String {
    format!("{:.2}", s * 1e3)
}

/// Compute, communication and step time per layer phase on `profile`.
fn print_prediction(p: &StepPrediction, profile: &DeviceProfile) {
    println!();
    println!(
        "predicted on {} ({} TFLOP/s, {} GB/s memory, {} GB/s links, {} us/message), ms:",
        profile.name, profile.tflops, profile.mem_gbps, profile.link_gbps, profile.latency_us
    );
    println!("{:<16} {:>10} {:>10} {:>14}", "layer:phase", "compute", "comm", "GFLOP/rank");
    for t in &p.phases {
        println!("{:<16} {:>10} {:>10} {:>14.3}", t.label, ms(t.compute_s), ms(t.comm_s), t.flops as f64 / 1e9);
    }
    println!(
        "step: compute {} + comm {} = {} ms serial; {} ms with each phase's communication overlapped",
        ms(p.compute_s),
        ms(p.comm_s),
        ms(p.serial_s),
        ms(p.overlapped_s)
    );
}

/// Throughput over one device at the same per-rank batch, K = 1, 2, 4, 8.
fn print_speedups(
    args: &PlanArgs,
    devices: usize,
    arch: &owt_models::Architecture,
    layout: &Plan,
    profile: &DeviceProfile,
) -> Result<(), OwtError> {
    let per_rank = (args.batch / devices).max(1);
    println!();
    println!("speedup over one device, {per_rank} images per rank (throughput ratio K x T1 / TK):");
    println!("{:>2} {:>12} {:>14} {:>9} {:>11}", "K", "step ms", "overlapped ms", "speedup", "overlapped");
    let mut one: Option<StepPrediction> = None;
    for k in [1usize, 2, 4, 8] {
        let run = PlanDryRun {
            arch,
            plan: layout,
            ranks: k,
            batch: per_rank * k,
            scheme: args.scheme,
            head: args.head,
            fc_update: args.fc_update,
        }
        .run();
        match run {
            Ok(report) => {
                let p = report.predict(profile);
                if k == 1 {
                    one = Some(p.clone());
                }
                let (serial, overlapped) = match &one {
                    Some(base) => (
                        format!("{:.2}x", k as f64 * base.serial_s / p.serial_s),
                        format!("{:.2}x", k as f64 * base.overlapped_s / p.overlapped_s),
                    ),
                    None => ("-".into(), "-".into()),
                };
                println!("{k:>2} {:>12} {:>14} {serial:>9} {overlapped:>11}", ms(p.serial_s), ms(p.overlapped_s));
            }
            Err(e) => println!("{k:>2} n/a: {e}"),
        }
    }
    Ok(())
}

/// A profile from `--profile` or the four explicit figures (all of which must then be given
/// and positive).
pub fn profile_from_args(
    preset: Option<&str>,
    tflops: Option<f64>,
    mem_gbps: Option<f64>,
    link_gbps: Option<f64>,
    latency_us: Option<f64>,
) -> Result<Option<DeviceProfile>, OwtError> {
    let explicit = [tflops, mem_gbps, link_gbps, latency_us];
    match (preset, explicit.iter().any(Option::is_some)) {
        (Some(_), true) => {
            Err(OwtError::input("give either --profile or --tflops/--mem-gbps/--link-gbps/--latency-us, not both"))
        }
        (Some(name), false) => DeviceProfile::preset(name).map(Some).ok_or_else(|| {
            OwtError::input(format!(
                "unknown --profile {name:?}; expected one of {}",
                DeviceProfile::PRESETS.join(", ")
            ))
        }),
        (None, false) => Ok(None),
        (None, true) => {
            let names = ["--tflops", "--mem-gbps", "--link-gbps", "--latency-us"];
            let mut values = [0.0; 4];
            for ((v, name), out) in explicit.iter().zip(names).zip(&mut values) {
                match v {
                    Some(x) if x.is_finite() && (*x > 0.0 || (name == "--latency-us" && *x == 0.0)) => *out = *x,
                    Some(x) => return Err(OwtError::input(format!("{name} must be positive, got {x}"))),
                    None => {
                        return Err(OwtError::input(format!(
                            "{name} is missing: a custom profile needs all four figures"
                        )))
                    }
                }
            }
            let [tflops, mem_gbps, link_gbps, latency_us] = values;
            Ok(Some(DeviceProfile { name: "custom".into(), tflops, mem_gbps, link_gbps, latency_us }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_named_or_complete() {
        assert!(profile_from_args(Some("h200-nvlink"), None, None, None, None).unwrap().is_some());
        let e = profile_from_args(Some("tpu"), None, None, None, None).unwrap_err();
        assert!(e.to_string().contains("gtx580-pcie"), "{e}");
        let e = profile_from_args(None, Some(1.0), None, Some(2.0), Some(1.0)).unwrap_err();
        assert!(e.to_string().contains("--mem-gbps is missing"), "{e}");
        let e = profile_from_args(Some("cpu"), Some(1.0), None, None, None).unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let e = profile_from_args(None, Some(-1.0), Some(1.0), Some(1.0), Some(1.0)).unwrap_err();
        assert!(e.to_string().contains("--tflops must be positive"), "{e}");
    }
}
