//! `owt plan`: the communication of one training step under a parallel plan, from a dry run of
//! the real step on shape-only devices.

use clap::Args;

use owt_hybrid::Exchange;
use owt_models::Head;

use crate::cli::{parse_head, parse_scheme, ModelArgs};
use crate::error::OwtError;
use crate::parallel::{DeviceProfile, DryRun, PlanKind, StepPrediction};
use crate::train::FcUpdate;

/// Arguments of `owt plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Ranks of the mesh.
    #[arg(long)]
    pub devices: usize,
    /// Global batch (all ranks together), as `owt train --batch`.
    #[arg(long)]
    pub batch: usize,
    /// Parallel plan.
    #[arg(long, value_enum, default_value_t = PlanKind::WeirdTrick)]
    pub plan: PlanKind,
    /// Activity exchange scheme: a, b or c.
    #[arg(long, default_value = "a", value_parser = parse_scheme)]
    pub scheme: Exchange,
    /// Output head, as `owt train --head`.
    #[arg(long, default_value = "softmax", value_parser = parse_head)]
    pub head: Head,
    /// When FC weights are updated, as `owt train --fc-update`.
    #[arg(long, value_enum, default_value_t = FcUpdate::PerStep)]
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
    if args.devices == 0 {
        return Err(OwtError::input("--devices must be at least 1, got 0"));
    }
    let profile =
        DeviceProfile::from_args(args.profile.as_deref(), args.tflops, args.mem_gbps, args.link_gbps, args.latency_us)?;
    let arch = args.model.spec().architecture()?;
    let layout = args.plan.plan();
    let report = DryRun {
        arch: &arch,
        plan: &layout,
        ranks: args.devices,
        batch: args.batch,
        scheme: args.scheme,
        head: args.head,
        fc_update: args.fc_update,
    }
    .run()?;
    let plan = report.comm.clone();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan).map_err(|e| OwtError::io(e.to_string()))?);
        return Ok(());
    }
    println!(
        "{} on {} devices, plan {}, scheme {}, global batch {} (f32, {} head, FC update {}): one training step, from a dry run on shape-only devices ({} ms)",
        arch.name,
        args.devices,
        args.plan.name(),
        args.scheme.letter(),
        args.batch,
        args.head.name(),
        args.fc_update.name(),
        report.elapsed.as_millis()
    );
    println!("{:<6} {:<9} {:<15} {:>15} {:>9}", "layer", "phase", "collective", "bytes", "messages");
    for t in &plan.layers {
        println!("{:<6} {:<9} {:<15} {:>15} {:>9}", t.layer, t.phase, t.collective, t.bytes, t.messages);
    }
    println!("{:<32} {:>15} {:>9}", "total", plan.total_bytes, plan.total_messages);
    for (op, count) in &report.ledger.fallbacks {
        println!("fallback: {op} ran on gathered inputs {count} time(s) (no placement rule for its inputs)");
    }
    if let Some(profile) = profile {
        print_prediction(&report.predict(&profile), &profile);
        print_speedups(args, &arch, &layout, &profile)?;
    }
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
    arch: &owt_models::Architecture,
    layout: &crate::parallel::Plan,
    profile: &DeviceProfile,
) -> Result<(), OwtError> {
    let per_rank = (args.batch / args.devices).max(1);
    println!();
    println!("speedup over one device, {per_rank} images per rank (throughput ratio K x T1 / TK):");
    println!("{:>2} {:>12} {:>14} {:>9} {:>11}", "K", "step ms", "overlapped ms", "speedup", "overlapped");
    let mut one: Option<StepPrediction> = None;
    for k in [1usize, 2, 4, 8] {
        let run = DryRun {
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
