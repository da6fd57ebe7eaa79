//! The arguments of `owt plan`, apart from what runs them, so that the plan it prints and the
//! plan `--auto` searches for (`plan`, `plan_auto`) stand on them without standing on each
//! other.

use clap::Args;
use owt_hybrid::{Exchange, PlanKind, Uplink, WirePrecision};
use owt_models::Head;

use crate::cli::plan_cost::parse_uplink;
use crate::cli::{fc_update_parser, parse_head, parse_mesh, parse_scheme, plan_kind_parser, wire_parser, ModelArgs};
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
    /// which entries cross between processes. With --mesh N,L: 1, or N (a node per process).
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Global batch (all ranks together), as `owt train --batch`.
    #[arg(long)]
    pub batch: usize,
    /// Parallel plan.
    #[arg(long, default_value = "weird-trick", value_parser = plan_kind_parser())]
    pub plan: PlanKind,
    /// A plan of your own, as JSON (as `owt train --plan-file`), instead of --plan.
    #[arg(long)]
    pub plan_file: Option<std::path::PathBuf>,
    /// Activity exchange scheme: a, b or c.
    #[arg(long, default_value = "a", value_parser = parse_scheme)]
    pub scheme: Exchange,
    /// Output head, as `owt train --head`.
    #[arg(long, default_value = "softmax", value_parser = parse_head)]
    pub head: Head,
    /// When FC weights are updated, as `owt train --fc-update`.
    #[arg(long, default_value = "per-step", value_parser = fc_update_parser())]
    pub fc_update: FcUpdate,
    /// The precision activities and gradients cross ranks in, as `owt train --wire`: bf16 and
    /// f16 halve the bytes.
    #[arg(long, default_value = "f32", value_parser = wire_parser())]
    pub wire: WirePrecision,
    /// Whose statistics batch normalisation takes, as `owt train --batch-stats`: sync or local.
    #[arg(long, value_parser = |s: &str| s.parse::<owt_hybrid::BatchStats>())]
    pub batch_stats: Option<owt_hybrid::BatchStats>,
    /// Device profile for predicted times: gtx580-pcie, gtx580-pcie-10gbe, h200-nvlink,
    /// h200-nvlink-ib or cpu.
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
    /// Custom profile: a link shared by each block of SPAN consecutive ranks ("SPAN,GBPS,US",
    /// e.g. "8,1.25,30" for a node's 10 GbE card); repeat for more tiers.
    #[arg(long, value_parser = parse_uplink)]
    pub uplink: Vec<Uplink>,
    /// Print JSON: {"total_bytes":..,"total_messages":..,"layers":[..]}, with --profile also
    /// "cost" (the profile, the prediction per layer phase and the speedup tables); with
    /// --auto, the search's report.
    #[arg(long)]
    pub json: bool,
    /// Choose the plan instead: per conv and FC layer replicated or split by outputs, and the
    /// scheme, minimising the step predicted on the profile (every candidate where they are
    /// few, else coordinate descent from data parallelism and the weird trick). Prints the
    /// plan as JSON for --plan-file, the prediction and speedups on stderr.
    #[arg(long, conflicts_with_all = ["plan", "plan_file"])]
    pub auto: bool,
}
