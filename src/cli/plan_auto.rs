//! `owt plan --auto`: the plan the cost model predicts fastest for a model, a batch, a mesh
//! (1-D or `--mesh N,L`) and a device profile ([`owt_hybrid::auto_plan::search`] over the
//! model's conv and FC layers and the three schemes, each candidate a dry run priced on the
//! profile), printed as the JSON `--plan-file` takes, beside its predicted speedup over data
//! parallelism and the built-in weird trick.

use serde::Serialize;

use owt_hybrid::auto_plan::{search, splittable_layers, AutoPlan};
use owt_hybrid::{DeviceProfile, Exchange, GridPlan, Plan, PlanKind};

use crate::cli::plan_args::PlanArgs;
use crate::error::OwtError;
use crate::parallel::PlanDryRun;

/// What `owt plan --auto --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct AutoReport {
    /// The search's outcome: the plan, its scheme, its predicted step and how it was found.
    #[serde(flatten)]
    pub found: AutoPlan,
    /// The device profile the candidates were priced on.
    pub profile: String,
    /// Predicted step of data parallelism, seconds (none where it cannot run).
    pub data_parallel_s: Option<f64>,
    /// Predicted step of the built-in weird trick under `--scheme`, seconds.
    pub weird_trick_s: Option<f64>,
    /// Data parallelism's step over the chosen plan's.
    pub speedup_vs_data_parallel: Option<f64>,
    /// The weird trick's step over the chosen plan's.
    pub speedup_vs_weird_trick: Option<f64>,
}

/// Searches and prints: the plan's JSON on stdout (or the whole report with `--json`), the
/// prediction and the search in words on stderr.
pub fn run(args: &PlanArgs, ranks: usize, profile: &DeviceProfile) -> Result<(), OwtError> {
    let arch = args.model.spec().architecture()?;
    let layers = splittable_layers(arch.parameters()?);
    let predict = |plan: &Plan, scheme: Exchange| -> Result<f64, OwtError> {
        let mut plan = plan.clone();
        if let Some(stats) = args.batch_stats {
            plan.batch_stats = stats;
        }
        let dry = PlanDryRun {
            arch: &arch,
            plan: &plan,
            ranks,
            batch: args.batch,
            scheme,
            head: args.head,
            fc_update: args.fc_update,
            wire: args.wire,
        };
        Ok(match args.mesh {
            Some(shape) => {
                let (report, _) = dry.run_on_grid_plan(shape, &GridPlan::data_parallel_across(&plan))?;
                report.predict_on_mesh(profile, shape).serial_s
            }
            None => dry.run_on_processes(args.processes)?.predict(profile).serial_s,
        })
    };
    let schemes = [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices];
    let mut first_error = None;
    let found = search(&layers, &schemes, |plan, scheme| match predict(plan, scheme) {
        Ok(s) => Some(s),
        Err(e) => {
            first_error.get_or_insert(e);
            None
        }
    })
    .ok_or_else(|| match first_error.take() {
        Some(e) => OwtError::input(format!("--auto: no candidate plan runs ({e})")),
        None => OwtError::input("--auto: the model has no conv or FC layer to place"),
    })?;
    let data_parallel_s = predict(&PlanKind::DataParallel.plan(), args.scheme).ok();
    let weird_trick_s = predict(&PlanKind::WeirdTrick.plan(), args.scheme).ok();
    let report = AutoReport {
        speedup_vs_data_parallel: data_parallel_s.map(|s| s / found.step_s),
        speedup_vs_weird_trick: weird_trick_s.map(|s| s / found.step_s),
        data_parallel_s,
        weird_trick_s,
        profile: profile.name.clone(),
        found,
    };
    if args.json {
        println!("{}", pretty(&report)?);
    } else {
        println!("{}", pretty(&report.found.plan)?);
    }
    eprintln!("{}", summary(&report, &arch.name, ranks, args));
    Ok(())
}

/// The report in words (one paragraph).
fn summary(report: &AutoReport, model: &str, ranks: usize, args: &PlanArgs) -> String {
    let found = &report.found;
    let split = if found.split.is_empty() { "none (data parallelism)".to_string() } else { found.split.join(", ") };
    let mesh = match args.mesh {
        Some([n, l]) => format!("a {n}x{l} mesh (the plan inside each node, data-parallel across)"),
        None => format!("{ranks} ranks"),
    };
    let ratio = |s: Option<f64>| s.map_or("cannot run".to_string(), |s| format!("{s:.2}x"));
    format!(
        "owt plan --auto: {model} on {mesh}, batch {}, profile {}: split {split}, scheme {}; predicted step {:.2} ms, {} faster than data parallelism, {} than the weird trick (scheme {}). {} candidates priced in {:.1} s ({}). Run it with --plan-file FILE --scheme {}.",
        args.batch,
        report.profile,
        found.scheme.letter(),
        found.step_s * 1e3,
        ratio(report.speedup_vs_data_parallel),
        ratio(report.speedup_vs_weird_trick),
        args.scheme.letter(),
        found.evaluated,
        found.seconds,
        if found.exhaustive {
            "every candidate"
        } else {
            "heuristic: coordinate descent from data parallelism and the weird trick, one layer flipped at a time"
        },
        found.scheme.letter(),
    )
}

/// `value` as pretty JSON.
fn pretty<T: Serialize>(value: &T) -> Result<String, OwtError> {
    serde_json::to_string_pretty(value).map_err(|e| OwtError::io(e.to_string()))
}
