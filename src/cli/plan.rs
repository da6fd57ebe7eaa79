//! `owt plan`: the communication of one training step under a parallel plan, from a dry run of
//! the real step on shape-only devices.

use owt_hybrid::{DeviceProfile, Plan};

pub use crate::cli::plan_args::PlanArgs;
use crate::cli::plan_cost::{self, profile_from_args, CostReport, StepShape};
use crate::error::OwtError;
use crate::parallel::PlanDryRun;

/// Prints the plan's bytes and messages per layer, phase and collective, and the totals.
pub fn run(args: &PlanArgs) -> Result<(), OwtError> {
    if args.batch == 0 {
        return Err(OwtError::input("--batch must be at least 1, got 0"));
    }
    let devices = match (args.devices, args.mesh) {
        (Some(d), Some([n, l])) if d != n * l => {
            return Err(OwtError::input(format!("--mesh {n},{l} has {} ranks, --devices says {d}", n * l)))
        }
        (_, Some([n, l])) if args.processes != 1 && args.processes != n => {
            return Err(OwtError::input(format!(
                "--mesh {n},{l} over {} processes: a 2-D mesh runs in one process or in {n} (one node each)",
                args.processes
            )))
        }
        (Some(d), _) => d,
        (None, Some([n, l])) => n * l,
        (None, None) => unreachable!("clap requires --devices or --mesh"),
    };
    if devices == 0 {
        return Err(OwtError::input("--devices must be at least 1, got 0"));
    }
    let what = match args.mesh {
        Some([n, l]) => format!("--mesh {n},{l}"),
        None => format!("--devices {devices}"),
    };
    crate::train::budget::check_dry_run_fits(devices, &what, crate::train::budget::available_memory())?;
    let profile = profile_from_args(
        args.profile.as_deref(),
        [args.tflops, args.mem_gbps, args.link_gbps, args.latency_us],
        &args.uplink,
    )?;
    if args.mesh.is_some() && args.batch_stats == Some(owt_hybrid::BatchStats::Local) {
        return Err(crate::cli::local_stats_on_a_grid());
    }
    if args.auto {
        let profile = profile.ok_or_else(|| {
            OwtError::input("--auto prices every candidate on a device profile: give --profile P (or --tflops, --mem-gbps, --link-gbps and --latency-us)")
        })?;
        return crate::cli::plan_auto::run(args, devices, &profile);
    }
    if let Some(shape) = args.mesh {
        return run_grid(args, shape, profile.as_ref());
    }
    let arch = args.model.spec().architecture()?;
    let layout = plan_of(args)?;
    let report = PlanDryRun {
        arch: &arch,
        plan: &layout,
        ranks: devices,
        batch: args.batch,
        scheme: args.scheme,
        head: args.head,
        fc_update: args.fc_update,
        wire: args.wire,
    }
    .run_on_processes(args.processes)?;
    let plan = report.comm.clone();
    let shape = step_shape(args, &arch, devices);
    if args.json {
        let mut out = serde_json::to_value(&plan).map_err(|e| OwtError::io(e.to_string()))?;
        if let Some(profile) = &profile {
            let local = profile.node_devices;
            let cost = CostReport {
                profile: profile.clone(),
                prediction: report.predict(profile),
                speedups: plan_cost::device_speedups(&shape, &layout, profile),
                node_devices: local,
                nodes: plan_cost::node_speedups(&shape, local, profile),
            };
            out["cost"] = serde_json::to_value(&cost).map_err(|e| OwtError::io(e.to_string()))?;
        }
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| OwtError::io(e.to_string()))?);
        return Ok(());
    }
    println!(
        "{} on {} devices, plan {}, scheme {}, global batch {} (f32, {} on the wire, {} head, FC update {}): one training step, from a dry run on shape-only devices ({} ms)",
        arch.name,
        devices,
        layout.name,
        args.scheme.letter(),
        args.batch,
        args.wire.name(),
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
        plan_cost::print_prediction(&report.predict(&profile), &profile);
        plan_cost::print_device_speedups(&plan_cost::device_speedups(&shape, &layout, &profile), shape.per_rank);
        print_nodes(&shape, &profile);
    }
    Ok(())
}

/// What the speedup tables' dry runs share with the step asked for: its images per rank over
/// `ranks` ranks, scheme, head and FC schedule.
fn step_shape<'a>(args: &PlanArgs, arch: &'a owt_models::Architecture, ranks: usize) -> StepShape<'a> {
    StepShape {
        arch,
        per_rank: (args.batch / ranks.max(1)).max(1),
        scheme: args.scheme,
        head: args.head,
        fc_update: args.fc_update,
        wire: args.wire,
    }
}

/// The 1..8 nodes table on `profile`.
fn print_nodes(shape: &StepShape, profile: &DeviceProfile) {
    let local = profile.node_devices;
    if profile.between_nodes().is_none() {
        let with: Vec<&str> = DeviceProfile::PRESETS
            .into_iter()
            .filter(|p| DeviceProfile::preset(p).is_some_and(|d| d.between_nodes().is_some()))
            .collect();
        println!(
            "\n{} is one server of {local} devices with no link between nodes; for 1..8 nodes, a profile with one: {}",
            profile.name,
            with.join(", ")
        );
        return;
    }
    plan_cost::print_node_speedups(
        &plan_cost::node_speedups(shape, local, profile),
        local,
        shape.per_rank,
        shape.scheme,
        shape.wire,
    );
}

/// `owt plan --mesh N,L`: placements per dimension and the step's traffic on the 2-D mesh.
fn run_grid(args: &PlanArgs, shape: [usize; 2], profile: Option<&DeviceProfile>) -> Result<(), OwtError> {
    let arch = args.model.spec().architecture()?;
    let grid = match &args.plan_file {
        Some(path) => crate::cli::read_grid_plan_file(path)?,
        None => owt_hybrid::GridPlan::data_parallel_across(&args.plan.plan()),
    };
    let plan = grid.local_plan().map_err(|e| OwtError::input(e.0))?;
    let (report, placements) = PlanDryRun {
        arch: &arch,
        plan: &plan,
        ranks: shape[0] * shape[1],
        batch: args.batch,
        scheme: args.scheme,
        head: args.head,
        fc_update: args.fc_update,
        wire: args.wire,
    }
    .run_on_grid_plan(shape, &grid)?;
    if args.json {
        let placements: Vec<serde_json::Value> = placements
            .iter()
            .map(
                |(path, p)| serde_json::json!({"parameter": path, "node": p[0].to_string(), "local": p[1].to_string()}),
            )
            .collect();
        let mut out = serde_json::json!({"mesh": {"node": shape[0], "local": shape[1]}, "placements": placements, "traffic": report.comm});
        if let Some(profile) = profile {
            let step = step_shape(args, &arch, shape[0] * shape[1]);
            let local = profile.node_devices;
            out["cost"] = serde_json::json!({
                "profile": profile,
                "prediction": report.predict_on_mesh(profile, shape),
                "node_devices": local,
                "nodes": plan_cost::node_speedups(&step, local, profile),
            });
        }
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| OwtError::io(e.to_string()))?);
        return Ok(());
    }
    let [n, l] = shape;
    println!(
        "{} on a 2-D mesh of {n} nodes x {l} local ranks, plan {} inside each node and {}, scheme {}, {} on the wire, global batch {} ({} per node): one training step, from a dry run ({} ms)",
        arch.name,
        plan.name,
        grid.across(),
        args.scheme.letter(),
        args.wire.name(),
        args.batch,
        if grid.input[0] == owt_hybrid::Placement::Replicate { args.batch } else { args.batch / n },
        report.elapsed.as_millis()
    );
    println!("{:<14} {}", "parameter", "placement [node, local]");
    for (path, p) in &placements {
        println!("{path:<14} {}", owt_hybrid::grid::describe(p));
    }
    println!();
    println!("{:<6} {:<9} {:<20} {:>15} {:>9}", "layer", "phase", "collective", "bytes", "messages");
    for t in &report.comm.layers {
        println!("{:<6} {:<9} {:<20} {:>15} {:>9}", t.layer, t.phase, t.collective, t.bytes, t.messages);
    }
    println!("{:<37} {:>15} {:>9}", "total", report.comm.total_bytes, report.comm.total_messages);
    let tier = if args.processes > 1 { "across nodes, each a process of its own" } else { "across nodes" };
    println!("{tier} (the [node] entries): {} bytes", report.comm.total_cross_process_bytes);
    if let Some(profile) = profile {
        plan_cost::print_prediction(&report.predict_on_mesh(profile, shape), profile);
        print_nodes(&step_shape(args, &arch, n * l), profile);
    }
    Ok(())
}

/// `--plan-file`'s plan, else the built-in `--plan`.
fn plan_of(args: &PlanArgs) -> Result<Plan, OwtError> {
    let mut plan = match &args.plan_file {
        Some(path) => crate::cli::read_plan_file(path, args.mesh.is_some())?,
        None => args.plan.plan(),
    };
    if let Some(stats) = args.batch_stats {
        plan.batch_stats = stats;
    }
    Ok(plan)
}
