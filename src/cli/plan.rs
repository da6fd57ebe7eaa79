//! `owt plan`: the communication of one training step under a parallel plan, from a dry run of
//! the real step on shape-only devices.

use clap::Args;

use owt_hybrid::Exchange;
use owt_models::Head;

use crate::cli::{parse_head, parse_scheme, ModelArgs};
use crate::error::OwtError;
use crate::parallel::{DryRun, PlanKind};
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
    let plan = report.comm;
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
    Ok(())
}
