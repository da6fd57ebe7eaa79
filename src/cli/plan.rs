//! `owt plan`: the analytic communication of one training step under a parallel plan.

use clap::Args;

use owt_hybrid::Exchange;

use crate::cli::parse_scheme;
use crate::cli::ModelArgs;
use crate::error::OwtError;
use crate::parallel::{comm_plan, PlanKind};

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
    /// Print JSON: {"total_bytes":..,"total_messages":..,"layers":[..]}.
    #[arg(long)]
    pub json: bool,
}

/// Prints the plan's bytes and messages per layer, phase and collective, and the totals.
pub fn run(args: &PlanArgs) -> Result<(), OwtError> {
    if args.batch == 0 {
        return Err(OwtError::input("--batch must be at least 1, got 0"));
    }
    let arch = args.model.spec().architecture()?;
    let plan = comm_plan(&arch, &args.plan.plan(), args.devices, args.batch, args.scheme)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan).map_err(|e| OwtError::io(e.to_string()))?);
        return Ok(());
    }
    println!(
        "{} on {} devices, plan {}, scheme {}, global batch {} (f32, softmax head): one training step",
        arch.name,
        args.devices,
        args.plan.name(),
        args.scheme.letter(),
        args.batch
    );
    println!("{:<6} {:<9} {:<15} {:>15} {:>9}", "layer", "phase", "collective", "bytes", "messages");
    for t in &plan.layers {
        println!("{:<6} {:<9} {:<15} {:>15} {:>9}", t.layer, t.phase, t.collective, t.bytes, t.messages);
    }
    println!("{:<32} {:>15} {:>9}", "total", plan.total_bytes, plan.total_messages);
    Ok(())
}
