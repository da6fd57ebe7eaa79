//! The `owt` command line: `info`, `train`, `eval`, `plan`, `bench`, `report`, `import`, `export`,
//! `prepare`.

pub mod bench;
pub mod bench_args;
pub mod bench_loader;
pub mod eval;
pub mod flag_modes;
pub mod import;
pub mod info;
pub mod plan;
pub mod plan_args;
pub mod plan_auto;
pub mod plan_cost;
pub mod prepare;
pub mod profile;
pub mod reference;
pub mod report;
pub mod train;

use clap::{Args, Parser, Subcommand};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use owt_hybrid::cuda_libraries::{ConvKernels, KernelChoice, Math, MatmulKernels};
use owt_hybrid::{Exchange, PlanKind, WirePrecision};
use owt_models::{AdaptivePool, Head, ModelKind, ModelSpec, PixelNorm, ResizeFilter};

use crate::runtime::backends::MeshRequest;
use crate::train::FcUpdate;

use crate::error::OwtError;

/// owt: the AlexNet family and VGG on Burn, single-device and hybrid data/model-parallel.
#[derive(Debug, Parser)]
#[command(name = "owt", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a model's layer profile: parameters, multiply-accumulates and output shape per layer.
    Info(info::InfoArgs),
    /// Train a model and write metrics.json and a checkpoint.
    Train(train::TrainArgs),
    /// Evaluate a checkpoint on a dataset's test split.
    Eval(eval::EvalArgs),
    /// Print the analytic communication of one training step under a parallel plan.
    Plan(plan::PlanArgs),
    /// Time synthetic training steps: steady-state images/s, step time, traffic per step.
    Bench(bench::BenchArgs),
    /// Read a torchvision AlexNet or VGG state dict (.pth or .safetensors) into an owt checkpoint.
    Import(import::ImportArgs),
    /// Write a checkpoint's network as a torchvision AlexNet or VGG state dict (.safetensors).
    Export(import::ExportArgs),
    /// Draw a run's loss, accuracy, learning rate and traffic per layer as a PNG or SVG.
    Report(report::ReportArgs),
    /// Pack an image folder dataset once (decoded, resized, memory-mapped shards) for the
    /// fastest input: then `--dataset packed`.
    Prepare(prepare::PrepareArgs),
}

/// Model selection flags shared by commands; `--model` is required unless `REQUIRED` is
/// false (`owt bench`, which defaults to alexnet-owt).
#[derive(Debug, Clone, Args)]
pub struct ModelArgs<const REQUIRED: bool = true> {
    /// Which network.
    #[arg(long, value_parser = parse_model, required = REQUIRED)]
    pub model: Option<ModelKind>,
    /// Input side in pixels (default: 227 for alexnet-2012, 28 for alexnet-small, 224 else).
    #[arg(long)]
    pub input: Option<usize>,
    /// Input channels (default: 1 for alexnet-small, 3 else).
    #[arg(long)]
    pub channels: Option<usize>,
    /// Output classes (default: 1000, or 10 for alexnet-small).
    #[arg(long)]
    pub classes: Option<usize>,
    /// Towers of alexnet-small: 2 (grouped, as in 2012) or 1.
    #[arg(long)]
    pub towers: Option<usize>,
    /// Width of fc6 and fc7 of a VGG (default 4096, torchvision's; 512 suits 32x32 images).
    #[arg(long)]
    pub hidden: Option<usize>,
    /// What a VGG's fc6 reads: the last maps averaged to this side (default 7, torchvision's,
    /// whatever the input) or none (the maps as they are, as VGGs for 32x32 images do: fc6
    /// reads 512 values an image instead of 25,088).
    #[arg(long, value_parser = |s: &str| s.parse::<AdaptivePool>())]
    pub adaptive_pool: Option<AdaptivePool>,
    /// How pixels become the network's input: owt (x / 127.5 - 1) or imagenet (ImageNet's
    /// mean and std, what torchvision's weights expect). Default: owt, the checkpoint's when
    /// resuming, imagenet for `owt import --from torchvision`.
    #[arg(long, value_parser = |s: &str| PixelNorm::from_name(s))]
    pub input_norm: Option<PixelNorm>,
    /// The shorter side images are resized to before the input's square is cut (default 8/7
    /// of the input side: 256 for 224; the checkpoint's when resuming).
    #[arg(long)]
    pub resize: Option<usize>,
    /// The filter images are resized with: area (exact area averaging, owt's own default) or
    /// bilinear (Pillow's antialiased bilinear, torchvision's; the default of `owt import`).
    /// The checkpoint's when resuming.
    #[arg(long, value_parser = |s: &str| ResizeFilter::from_name(s))]
    pub resize_filter: Option<ResizeFilter>,
}

/// Which kernels run convolutions and matmuls on CUDA (`--conv`, `--matmul`, `--tf32`), as
/// train, eval and bench take them.
#[derive(Debug, Clone, Args)]
pub struct CudaKernelArgs {
    /// Who runs convolutions on CUDA: auto (cuDNN where libcudnn loads, else owt), cudnn
    /// (refused where it does not load), owt (CubeCL's kernels, with the weight gradients of
    /// strided convolutions by owt's unfolded GEMM) or cubecl (CubeCL's kernels alone).
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<ConvKernels>())]
    pub conv: ConvKernels,
    /// Who runs matmuls (the FC layers) on CUDA: auto (cuBLASLt where libcublasLt loads,
    /// CubeCL's kernels otherwise), cublaslt or cubecl.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<MatmulKernels>())]
    pub matmul: MatmulKernels,
    /// TF32 tensor cores for f32 convolutions and matmuls on CUDA: on (PyTorch's TF32 figure)
    /// or off (strict f32, PyTorch's other figure; needs cuDNN and cuBLASLt).
    #[arg(long, default_value = "on", value_parser = parse_tf32)]
    pub tf32: Math,
    /// Numbers that are a function of the inputs on this machine, as PyTorch's
    /// use_deterministic_algorithms: on CUDA, cuDNN's deterministic algorithms only (chosen by
    /// its heuristics, not by timing); on CUDA and wgpu, each autotuned kernel fixed before any
    /// rank runs it and the same on every rank. Flex is deterministic without it.
    #[arg(long)]
    pub deterministic: bool,
}

impl CudaKernelArgs {
    /// The choice these flags make.
    pub fn choice(&self) -> KernelChoice {
        KernelChoice { conv: self.conv, matmul: self.matmul, math: self.tf32, deterministic: self.deterministic }
    }

    /// Records the choice for the CUDA devices this process starts, refusing a library forced
    /// on another `backend`.
    pub fn apply(&self, backend: crate::runtime::backends::BackendKind) -> Result<(), OwtError> {
        crate::runtime::cuda_kernels::choose(self.choice(), backend)
    }
}

/// `--tf32`: `on` (TF32 tensor cores allowed) or `off` (strict f32).
pub fn parse_tf32(s: &str) -> Result<Math, String> {
    match s {
        "on" => Ok(Math::Tf32),
        "off" => Ok(Math::Strict),
        other => Err(format!("expected on or off, got {other:?}")),
    }
}

/// How many threads prepare images (`--workers`), as train, eval and bench take it.
#[derive(Debug, Clone, Args)]
pub struct WorkersArg {
    /// Threads that read, decode and augment images (default: the cores available; at most
    /// 1024); the batches are byte for byte the same for any number.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_WORKERS as u64))]
    pub workers: Option<usize>,
}

/// The most image preparation threads `--workers` asks for: far beyond any machine's cores,
/// and few enough that every count derived from it (queues of batches per worker) stays small.
pub const MAX_WORKERS: usize = 1024;

impl WorkersArg {
    /// The threads asked for, or the cores available.
    pub fn count(&self) -> usize {
        self.workers.unwrap_or_else(crate::train::prefetch::available_cores)
    }
}

/// The labels of a flat held-out folder (ImageNet's validation layout), as train, eval and
/// prepare take them.
#[derive(Debug, Clone, Args)]
pub struct ValLabelArgs {
    /// Labels of a flat held-out folder (DIR/val/*.JPEG, ImageNet's validation layout): a CSV
    /// of file,class (Kaggle's LOC_val_solution.csv reads as it is) or the devkit's
    /// ILSVRC2012_validation_ground_truth.txt.
    #[arg(long)]
    pub val_labels: Option<std::path::PathBuf>,
    /// With the devkit's ground truth: the mapping of its class IDs to classes, a line per ID
    /// ('n02119789 1 kit_fox' as in map_clsloc.txt, or the WNIDs alone in ID order).
    #[arg(long, requires = "val_labels")]
    pub val_synsets: Option<std::path::PathBuf>,
}

impl ValLabelArgs {
    /// What the flags name.
    pub fn spec(&self) -> Option<crate::data::ValLabels> {
        self.val_labels.clone().map(|labels| crate::data::ValLabels { labels, synsets: self.val_synsets.clone() })
    }
}

fn parse_model(s: &str) -> Result<ModelKind, String> {
    s.parse()
}

impl<const REQUIRED: bool> ModelArgs<REQUIRED> {
    /// The network asked for (alexnet-owt where `--model` may be left out).
    pub fn kind(&self) -> ModelKind {
        self.model.unwrap_or(ModelKind::AlexNetOwt)
    }

    /// The spec these flags describe.
    pub fn spec(&self) -> ModelSpec {
        ModelSpec {
            kind: self.kind(),
            input: self.input,
            channels: self.channels,
            classes: self.classes,
            towers: self.towers,
            hidden: self.hidden,
            adaptive_pool: self.adaptive_pool,
            pixel_norm: self.input_norm.unwrap_or_default(),
            resize: self.resize,
            resize_filter: self.resize_filter.unwrap_or(ResizeFilter::Area),
            ..ModelSpec::new(self.kind())
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<(), OwtError> {
    // Commands whose only product is what they print end quietly on a closed pipe.
    if matches!(cli.command, Command::Info(_) | Command::Plan(_)) {
        crate::host::console::quiet_on_closed_pipe();
    }
    // ... and fail on a closed standard output (`>&-`), where it would be lost unseen.
    let prints = match cli.command {
        Command::Info(_) => Some("info"),
        Command::Plan(_) => Some("plan"),
        Command::Eval(_) => Some("eval"),
        Command::Bench(_) => Some("bench"),
        _ => None,
    };
    if let Some(name) = prints.filter(|_| crate::host::console::stdout_closed_at_start()) {
        return Err(OwtError::io(format!(
            "standard output is closed (Bad file descriptor): `owt {name}` prints its result there; give it a file, a pipe or /dev/null"
        )));
    }
    match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Import(args) => import::import(&args),
        Command::Export(args) => import::export(&args),
        Command::Prepare(args) => prepare::run(&args),
    }
}

/// Where a run's steps go: one device, or a mesh of ranks under a plan (the flags `owt train`
/// and `owt bench` share).
#[derive(Debug, Args)]
pub struct ParallelArgs {
    /// Ranks of the mesh (more than 1, or a --plan: Hybrid; otherwise the plain backend): with
    /// flex, virtual ranks on the CPU; with wgpu, distinct adapters where the machine has them;
    /// with cuda, GPU i for rank i.
    #[arg(long, default_value_t = 1)]
    pub devices: usize,
    /// A 2-D mesh of N nodes x L local ranks ("N,L"): the plan inside each node, data
    /// parallelism across the nodes. In one process, N x L ranks (the nodes as threads);
    /// under `mpirun -np N`, one node per process with L ranks each.
    #[arg(long, value_parser = parse_mesh, conflicts_with = "devices")]
    pub mesh: Option<[usize; 2]>,
    /// Put every rank on the first device (as Flex always does): K ranks of one GPU.
    #[arg(long)]
    pub virtual_ranks: bool,
    /// Parallel plan (default weird-trick); runs on a Hybrid mesh even with --devices 1.
    #[arg(long, value_parser = plan_kind_parser())]
    pub plan: Option<PlanKind>,
    /// A plan of your own, as JSON: an `owt_hybrid::Plan`, or with --mesh an
    /// `owt_hybrid::GridPlan` (a placement per mesh dimension, outer first; a 1-D plan runs
    /// inside each node).
    #[arg(long, conflicts_with = "plan")]
    pub plan_file: Option<std::path::PathBuf>,
    /// How batch-sharded activities meet column-split FC weights: a (all-gather), b (K
    /// broadcast rounds), c (K rounds of 1/K slices).
    #[arg(long, default_value = "a", value_parser = parse_scheme)]
    pub scheme: Exchange,
    /// When FC weights are updated: per-step (synchronous SGD) or per-chunk (after each
    /// rank's chunk, the 2014 paper's variant).
    #[arg(long, default_value = "per-step", value_parser = fc_update_parser())]
    pub fc_update: FcUpdate,
    /// The precision activities and gradients cross ranks in: f32 (as computed), bf16 or f16
    /// (half the bytes; rounded before sending, summed in f32 on arrival, as PyTorch DDP's
    /// compression hooks). Part of the run: it changes the numbers.
    #[arg(long, default_value = "f32", value_parser = wire_parser())]
    pub wire: WirePrecision,
    /// Start each layer's gradient sums as soon as the backward pass leaves the layer (as
    /// PyTorch DDP's buckets), instead of after the whole pass: the same sums and results.
    #[arg(long)]
    pub overlap_sync: bool,
    /// Whose statistics batch normalisation takes on a mesh that splits the batch: sync (the
    /// whole batch's, equal to one device; the default) or local (each rank's own, as DDP's
    /// BatchNorm2d). Overrides a --plan-file's `batch_stats`. 1-D meshes only. Part of a
    /// training run: a resume takes the same.
    #[arg(long, value_parser = |s: &str| s.parse::<owt_hybrid::BatchStats>())]
    pub batch_stats: Option<owt_hybrid::BatchStats>,
}

impl ParallelArgs {
    /// Whether the run goes on a mesh (more than one rank, or a plan asked for).
    pub fn on_mesh(&self) -> bool {
        self.devices != 1 || self.plan.is_some() || self.mesh.is_some() || self.plan_file.is_some()
    }

    /// The plan the ranks (a 2-D mesh's nodes: each node's) run: `--plan-file`'s, else the
    /// built-in `--plan`. A file is refused in one line, naming it, when it does not read or
    /// parse, or asks for what a 2-D mesh does not run.
    pub fn layout_plan(&self) -> Result<owt_hybrid::Plan, OwtError> {
        let mut plan = match &self.plan_file {
            Some(path) => read_plan_file(path, self.mesh.is_some())?,
            None => self.plan().plan(),
        };
        if let Some(stats) = self.batch_stats {
            plan.batch_stats = stats;
        }
        if self.mesh.is_some() && plan.batch_stats == owt_hybrid::BatchStats::Local {
            return Err(local_stats_on_a_grid());
        }
        Ok(plan)
    }

    /// Whose statistics the run's batch normalisation takes: `--batch-stats`, else the plan
    /// file's, else the whole batch's (a 2-D mesh takes no other).
    pub fn run_batch_stats(&self) -> Result<owt_hybrid::BatchStats, OwtError> {
        match (self.batch_stats, self.mesh) {
            (Some(stats), _) => Ok(stats),
            (None, Some(_)) => Ok(owt_hybrid::BatchStats::Sync),
            (None, None) => Ok(self.layout_plan()?.batch_stats),
        }
    }

    /// The plan per dimension `--mesh N,L` runs: `--plan-file`'s (a 1-D plan's inside each
    /// node, data-parallel across), else the built-in `--plan`'s, data-parallel across.
    pub fn grid_plan(&self) -> Result<owt_hybrid::GridPlan, OwtError> {
        if self.batch_stats == Some(owt_hybrid::BatchStats::Local) {
            return Err(local_stats_on_a_grid());
        }
        match &self.plan_file {
            Some(path) => read_grid_plan_file(path),
            None => Ok(owt_hybrid::GridPlan::data_parallel_across(&self.plan().plan())),
        }
    }

    /// Where the nodes of `--mesh N,L` run in a job of `processes` (None without --mesh).
    pub fn grid(
        &self,
        processes: &crate::runtime::processes::Processes,
    ) -> Result<Option<crate::parallel::GridNodes>, OwtError> {
        self.mesh.map(|shape| crate::parallel::GridNodes::of(shape, processes, self.fc_update)).transpose()
    }

    /// Ranks of the whole mesh in a job of `processes`.
    pub fn mesh_ranks(&self, processes: &crate::runtime::processes::Processes) -> usize {
        match self.mesh {
            Some([n, l]) => n * l,
            None => self.devices * processes.count(),
        }
    }

    /// Refuses a global batch smaller than a 2-D mesh's ranks, in the mesh's words (each
    /// node takes a block of the batch, each local rank a piece of its node's).
    pub fn check_grid_batch(&self, batch: usize) -> Result<(), OwtError> {
        match self.mesh {
            Some([n, l]) if batch < n * l => Err(OwtError::input(format!(
                "--mesh {n},{l} splits each batch over its {} ranks: --batch must be at least {}, got {batch}",
                n * l,
                n * l
            ))),
            _ => Ok(()),
        }
    }

    /// The ranks and global batch a plan's checks must hold for: the whole mesh's, or one
    /// node's local ranks and share on a 2-D mesh.
    pub fn plan_mesh(&self, processes: &crate::runtime::processes::Processes, batch: usize) -> (usize, usize) {
        match self.mesh {
            Some([n, l]) => (l, batch / n.max(1)),
            None => (self.mesh_ranks(processes), batch),
        }
    }

    /// The layout of `plan` on `mesh` these flags ask for: the scheme, the wire, the sync.
    pub fn mesh_layout<IB: burn::tensor::backend::Backend>(
        &self,
        mesh: owt_hybrid::MeshDevice<IB::Device>,
        plan: owt_hybrid::Plan,
    ) -> owt_hybrid::MeshLayout<IB> {
        let layout = owt_hybrid::MeshLayout::<IB>::new(mesh, plan, self.scheme).with_wire(self.wire);
        if self.overlap_sync {
            layout.with_overlapped_sync()
        } else {
            layout
        }
    }

    /// The plan of a mesh run.
    pub fn plan(&self) -> PlanKind {
        self.plan.unwrap_or(PlanKind::WeirdTrick)
    }

    /// The mesh these flags ask for, spanning the job's `processes` (`--devices` ranks each).
    pub fn request(&self, processes: &crate::runtime::processes::Processes) -> MeshRequest {
        match self.mesh {
            // One node per process (or all of them in one): the mesh stays in the process.
            Some([n, l]) => MeshRequest {
                ranks: if processes.count() == 1 { n * l } else { l },
                processes: processes.clone(),
                spans: false,
                ..MeshRequest::local(l, self.virtual_ranks)
            },
            None => {
                MeshRequest { processes: processes.clone(), ..MeshRequest::local(self.devices, self.virtual_ranks) }
            }
        }
    }

    /// Whether a job of `processes` runs on a mesh: always when it spans several.
    pub fn on_mesh_of(&self, processes: &crate::runtime::processes::Processes) -> bool {
        self.on_mesh() || processes.count() > 1
    }

    /// What these flags set, for comparing the processes of a job.
    pub fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "devices": self.devices,
            "mesh": self.mesh,
            "virtual_ranks": self.virtual_ranks,
            "plan": self.plan.map(|p| p.name()),
            "plan_file": self.plan_file.as_ref().map(|p| {
                let bytes = crate::host::bounded_read::read(p, MAX_PLAN_BYTES, "a plan file").unwrap_or_default();
                String::from_utf8_lossy(&bytes).into_owned()
            }),
            "scheme": self.scheme.letter().to_string(),
            "fc_update": self.fc_update.name(),
            "wire": self.wire.name(),
            "overlap_sync": self.overlap_sync,
        })
    }
}

/// `--plan`: a built-in plan, listed in the help.
pub(crate) fn plan_kind_parser() -> impl TypedValueParser<Value = PlanKind> {
    PossibleValuesParser::new(PlanKind::ALL.map(PlanKind::name)).map(|s| s.parse().expect("a listed plan"))
}

/// `--fc-update`: per-step or per-chunk, listed in the help.
pub(crate) fn fc_update_parser() -> impl TypedValueParser<Value = FcUpdate> {
    PossibleValuesParser::new(FcUpdate::ALL.map(FcUpdate::name)).map(|s| s.parse().expect("a listed schedule"))
}

/// `--wire`: f32, bf16 or f16, listed in the help.
pub(crate) fn wire_parser() -> impl TypedValueParser<Value = WirePrecision> {
    PossibleValuesParser::new(WirePrecision::ALL.map(WirePrecision::name))
        .map(|s| WirePrecision::from_name(&s).expect("a listed precision"))
}

/// `--scheme`: a, b or c.
pub(crate) fn parse_scheme(s: &str) -> Result<Exchange, String> {
    Exchange::from_letter(s).ok_or_else(|| format!("unknown scheme {s:?}: expected a, b or c"))
}

/// `--head`: softmax or logistic.
pub(crate) fn parse_head(s: &str) -> Result<Head, String> {
    s.parse()
}

/// `N,L`: a 2-D mesh's shape (`--mesh`).
pub(crate) fn parse_mesh(s: &str) -> Result<[usize; 2], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let dims: Vec<usize> = parts.iter().filter_map(|p| p.parse().ok()).collect();
    match (parts.len(), dims.as_slice()) {
        (2, &[n, l]) if n > 0 && l > 0 => match n.checked_mul(l).and_then(|k| u32::try_from(k).ok()) {
            Some(_) => Ok([n, l]),
            None => Err(format!("a mesh of {n} x {l} ranks: expected at most {} ranks in all", u32::MAX)),
        },
        _ => Err(format!("expected N,L (nodes, local ranks, both at least 1), got {s:?}")),
    }
}

/// The largest plan file read (a plan is a few rules).
const MAX_PLAN_BYTES: u64 = 1 << 20;

/// The plan in the JSON file at `path` (`--plan-file`): an `owt_hybrid::Plan`, or on a 2-D
/// mesh (`grid`) an `owt_hybrid::GridPlan` too (its plan inside each node). Refused in one
/// line, naming the file, when it does not read or parse, or asks for what a 2-D mesh does
/// not run.
pub(crate) fn read_plan_file(path: &std::path::Path, grid: bool) -> Result<owt_hybrid::Plan, OwtError> {
    match parse_plan_file(path)? {
        PlanFile::Flat(plan) => Ok(plan),
        PlanFile::PerDimension(_) if !grid => {
            Err(OwtError::input(format!("--plan-file {}: a plan per mesh dimension needs --mesh N,L", path.display())))
        }
        PlanFile::PerDimension(plan) => {
            plan.local_plan().map_err(|e| OwtError::input(format!("--plan-file {}: {e}", path.display())))
        }
    }
}

/// The plan per dimension in the JSON file at `path` for `--mesh N,L`: a `GridPlan` as
/// written, or a 1-D `Plan` inside each node and data-parallel across. Refused as
/// [`read_plan_file`] refuses.
/// Why a 2-D mesh refuses each rank's own batch statistics.
const LOCAL_STATS_ON_A_GRID: &str =
    "batch statistics \"local\" run on a 1-D mesh (--devices K): a 2-D mesh (--mesh N,L) takes the whole batch's (sync)";

/// The refusal of `local` batch statistics on a 2-D mesh.
pub(crate) fn local_stats_on_a_grid() -> OwtError {
    OwtError::input(LOCAL_STATS_ON_A_GRID)
}

pub(crate) fn read_grid_plan_file(path: &std::path::Path) -> Result<owt_hybrid::GridPlan, OwtError> {
    match parse_plan_file(path)? {
        PlanFile::Flat(plan) if plan.batch_stats == owt_hybrid::BatchStats::Local => {
            Err(OwtError::input(format!("--plan-file {}: {LOCAL_STATS_ON_A_GRID}", path.display())))
        }
        PlanFile::Flat(plan) => Ok(owt_hybrid::GridPlan::data_parallel_across(&plan)),
        PlanFile::PerDimension(plan) => {
            plan.local_plan().map_err(|e| OwtError::input(format!("--plan-file {}: {e}", path.display())))?;
            Ok(plan)
        }
    }
}

/// What a plan file holds.
enum PlanFile {
    Flat(owt_hybrid::Plan),
    PerDimension(owt_hybrid::GridPlan),
}

fn parse_plan_file(path: &std::path::Path) -> Result<PlanFile, OwtError> {
    let bytes = crate::host::bounded_read::read(path, MAX_PLAN_BYTES, "a plan file")
        .map_err(|e| OwtError::input(format!("--plan-file {}: {e}", path.display())))?;
    let parse_error =
        |e: serde_json::Error, what: &str| OwtError::input(format!("--plan-file {}: not {what}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| parse_error(e, "JSON"))?;
    // A plan per dimension has two-entry placements; a 1-D plan, one placement each.
    if value.get("default").is_some_and(serde_json::Value::is_array) {
        let grid = serde_json::from_value(value).map_err(|e| parse_error(e, "a plan per dimension (GridPlan)"))?;
        Ok(PlanFile::PerDimension(grid))
    } else {
        Ok(PlanFile::Flat(serde_json::from_value(value).map_err(|e| parse_error(e, "a plan (owt_hybrid::Plan)"))?))
    }
}
