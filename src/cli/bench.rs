//! `owt bench`: synthetic training steps on any backend and layout, timed after warmup steps
//! (which absorb kernel compilation and autotuning). Reports steady-state images/s, the
//! median step time, the traffic between ranks per step, fallbacks and empty pieces, and the
//! loss of every step (so two layouts can be compared on the same steps).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Transaction;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use owt_hybrid::{Exchange, MeshDevice, MeshLayout, SingleDevice, StepLayout};
use owt_models::{ConvNet, DropoutKey};

pub use crate::cli::bench_args::BenchArgs;
use crate::cli::profile::{median, profile_step, StepProfile};
use crate::data::{synthetic_images, ImageSource};
use crate::error::OwtError;
use crate::parallel::check_run;
use crate::runtime::backends::{run_on, run_on_mesh, BackendJob, BackendKind, MeshJob};
use crate::train::input::{Prefetch, Preparation, UploadAhead};
use crate::train::metrics::TrafficPerStep;
use crate::train::trainer::PREFETCH;
use crate::train::{sgd, train_step, upload_batch, AccumulatedStep, TrainConfig};

/// The most steps (warmup and timed) one benchmark runs: the image order, losses and times of
/// every step are held from the start (a day of AlexNet steps on 2 CPU cores).
pub const MAX_BENCH_STEPS: usize = 100_000;

/// What a benchmark measured (the JSON of `owt bench --json`).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Model name.
    pub model: String,
    /// Backend name.
    pub backend: String,
    /// Whether the single-device backend fused kernels.
    pub fusion: bool,
    /// Where the steps ran.
    pub layout: String,
    /// Devices the steps ran on: the mesh's ranks, or 1 for the plain backend.
    pub devices: usize,
    /// Whether the steps ran on a Hybrid mesh (false: the plain single-device backend).
    pub mesh: bool,
    /// Global batch.
    pub batch: usize,
    /// Untimed steps.
    pub warmup: usize,
    /// Timed steps.
    pub steps: usize,
    /// Steady-state training images per second over the timed steps.
    pub images_per_s: f64,
    /// Median wall time of a timed step (upload, forward, backward, update, device sync).
    pub median_step_ms: f64,
    /// Wall time of the first step: kernel compilation and autotuning on GPUs (the cold start).
    pub first_step_ms: f64,
    /// When the timed steps began and ended, in seconds since the Unix epoch (a GPU's
    /// utilisation sampled elsewhere is read over this window only).
    pub timed_window_unix_s: [f64; 2],
    /// Bytes moved between ranks per timed step.
    pub bytes_per_step: f64,
    /// Messages between ranks per timed step.
    pub messages_per_step: f64,
    /// Per collective, bytes and messages per timed step.
    pub by_collective: BTreeMap<String, TrafficPerStep>,
    /// Of `bytes_per_step`, those between ranks of different processes (a job under mpirun).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_process_bytes_per_step: Option<f64>,
    /// Bytes process 0 handed MPI per timed step (the pieces for other processes with their
    /// headers; against its own ranks' share of `cross_process_bytes_per_step`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpi_bytes_per_step: Option<f64>,
    /// Ops that ran gathered for want of a rule, over the timed steps.
    pub fallbacks: u64,
    /// Zero-element pieces over the timed steps (0 on a correct mesh).
    pub empty_ops: u64,
    /// Whether the batches stayed on the device (`--resident`) instead of being uploaded each
    /// step.
    pub resident: bool,
    /// Mean loss of every step, warmup included (before each update).
    pub losses: Vec<f64>,
    /// With `--gradient-norms`: each parameter's gradient norm on the first batch (f32 passes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gradient_norms: Option<BTreeMap<String, f64>>,
    /// On CUDA, the GPU, the driver's CUDA version, the NVRTC library and its version, and
    /// how f32 matmuls round (what a figure is compared against depends on all four).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda: Option<crate::runtime::cuda_preflight::CudaVersions>,
    /// On CUDA, who ran convolutions and matmuls (cuDNN, cuBLASLt or CubeCL's kernels), in
    /// which math, and the calls each took over the timed steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_kernels: Option<crate::runtime::cuda_kernels::CudaKernelReport>,
    /// Whether the run was deterministic (`--deterministic`).
    pub deterministic: bool,
    /// On CubeCL's backends (wgpu, CUDA), what autotuning did in this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autotune: Option<AutotuneCounts>,
}

/// What CubeCL's autotuning did in a process: how often a thread found a shape being tuned by
/// another and ran a candidate of its own choosing (upstream's fallback, which can give two
/// ranks two kernels) or waited for the tuning (`--deterministic`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct AutotuneCounts {
    /// Tuned executions that ran a fallback candidate.
    pub fallback_runs: u64,
    /// Tuned executions that waited for another thread's tuning.
    pub waits: u64,
}

impl AutotuneCounts {
    /// The counts so far in this process.
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    pub fn now() -> AutotuneCounts {
        AutotuneCounts { fallback_runs: cubecl_runtime::tune::fallback_runs(), waits: cubecl_runtime::tune::waits() }
    }
}

impl BenchReport {
    /// The report as one line of text.
    pub fn summary(&self) -> String {
        format!(
            "{} on {} ({}), batch {}: {:.1} images/s, median step {:.2} ms, first step {:.0} ms, {:.0} bytes and {:.0} messages per step, {} fallbacks, {} empty ops, loss {:.4} -> {:.4}",
            self.model,
            self.backend,
            self.layout,
            self.batch,
            self.images_per_s,
            self.median_step_ms,
            self.first_step_ms,
            self.bytes_per_step,
            self.messages_per_step,
            self.fallbacks,
            self.empty_ops,
            self.losses.first().copied().unwrap_or(f64::NAN),
            self.losses.last().copied().unwrap_or(f64::NAN),
        ) + &match (self.cross_process_bytes_per_step, self.mpi_bytes_per_step) {
            (Some(across), Some(mpi)) => {
                format!("; {across:.0} bytes per step across processes, process 0 handed MPI {mpi:.0}")
            }
            (Some(across), None) => format!("; {across:.0} bytes per step across processes"),
            _ => String::new(),
        }
    }
}

/// Reports of the same benchmark under schemes a, b and c, side by side (step time relative
/// to scheme a's: the three move the same bytes, so the ratio is what the scheme's rounds
/// and overlap cost or save on this backend).
fn scheme_table(reports: &[BenchReport]) -> String {
    let mut out = String::new();
    if let Some(first) = reports.first() {
        out += &format!("{} on {}, batch {}, {} ranks\n", first.model, first.backend, first.batch, first.devices);
    }
    out += "layout                                      median step ms  images/s  bytes/step  messages/step  vs a\n";
    let base = reports.first().map(|r| r.median_step_ms).unwrap_or(f64::NAN);
    for r in reports {
        out += &format!(
            "{:<43} {:>14.1} {:>9.1} {:>11.0} {:>14.0} {:>5.2}\n",
            r.layout,
            r.median_step_ms,
            r.images_per_s,
            r.bytes_per_step,
            r.messages_per_step,
            r.median_step_ms / base
        );
    }
    out
}

/// Seconds since the Unix epoch, now.
fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

struct BenchJob<'a> {
    args: &'a BenchArgs,
    /// The exchange scheme of a mesh run.
    scheme: Exchange,
    /// Where the nodes of a 2-D mesh run (`--mesh`).
    grid: Option<crate::parallel::GridNodes>,
}

/// The training settings of a benchmark's synthetic steps.
fn bench_config(args: &BenchArgs) -> TrainConfig {
    TrainConfig {
        batch: args.batch,
        seed: args.seed,
        head: args.head,
        fc_update: args.parallel.fc_update,
        wire: args.parallel.wire,
        precision: args.precision,
        ..TrainConfig::new(args.model.spec(), crate::data::DatasetKind::Synthetic)
    }
}

/// Prints `value` as pretty JSON, or `text()` (with its own line ends).
fn print_report<T: Serialize>(value: &T, json: bool, text: impl FnOnce() -> String) -> Result<(), OwtError> {
    if json {
        println!("{}", serde_json::to_string_pretty(value).map_err(|e| OwtError::io(e.to_string()))?);
    } else {
        print!("{}", text());
    }
    Ok(())
}

impl BenchJob<'_> {
    fn run_layout<B: AutodiffBackend, L: StepLayout<B>>(
        &self,
        layout: &L,
        devices: Option<usize>,
    ) -> Result<BenchReport, OwtError> {
        let args = self.args;
        let config = bench_config(args);
        let arch = config.model.architecture()?;
        if let Some(plan) = layout.plan() {
            let (ranks, batch) = layout.plan_mesh(config.batch);
            check_run(plan, &arch, ranks, batch)?;
        }
        let device = layout.device();
        config.validate()?;
        config.precision.check::<B>(device)?;
        let mut scaler = config.precision.scales_loss().then(crate::train::precision::LossScale::default);
        let norm = &config.model.pixel_norm;
        let model: ConvNet<B> = crate::train::trainer::init_model(&arch, device, config.seed)?;
        let mut model = layout.place_module(model)?;
        let mut optim = sgd::<B>(&config);
        // Four batches of distinct images, cycled.
        let source: Arc<dyn ImageSource> =
            Arc::new(synthetic_images(arch.input, arch.classes, 4 * config.batch, config.seed));
        let total = args.warmup + args.steps;
        let order: Vec<usize> =
            (0..total).flat_map(|s| (0..config.batch).map(move |i| (s % 4) * config.batch + i)).collect();
        let mut batches = Prefetch::start_rows(
            source,
            order,
            config.batch,
            false,
            StdRng::seed_from_u64(config.seed),
            Preparation::new(args.workers.count(), PREFETCH),
            layout.row_split(),
        );
        // With --resident, the (at most) four distinct batches uploaded once, before any step.
        let mut resident = Vec::new();
        if args.resident {
            for _ in 0..total.min(4) {
                let batch = batches.next_batch()?.ok_or_else(|| OwtError::input("the benchmark ran out of batches"))?;
                resident.push(upload_batch(layout, &batch, norm));
            }
        }
        let mut uploads = UploadAhead::new(layout, norm);
        let mut first_upload = None;
        let mut losses = Vec::with_capacity(total);
        let mut times = Vec::with_capacity(args.steps);
        let mut first_step_ms = 0.0;
        let mut gradient_norms = None;
        let started = Instant::now();
        let mut timed_from = started;
        let mut timed_from_unix = unix_now();
        let mut mpi_from = crate::runtime::processes::mpi_bytes_sent();
        let mut kernels_from = owt_hybrid::cuda_libraries::Usage::now();
        for step in 0..total {
            if step == args.warmup {
                if let Some(line) = crate::runtime::cuda_kernels::not_strict_line() {
                    crate::err_line!("{line}");
                }
                layout.reset_traffic();
                mpi_from = crate::runtime::processes::mpi_bytes_sent();
                kernels_from = owt_hybrid::cuda_libraries::Usage::now();
                timed_from = Instant::now();
                timed_from_unix = unix_now();
            }
            let ran_out = || OwtError::input("the benchmark ran out of batches");
            if step == 0 && args.gradient_norms {
                let (images, labels) = match resident.first() {
                    Some(first) => first.clone(),
                    None => uploads.take(&mut batches)?.ok_or_else(ran_out)?,
                };
                // The same tensors go on to the first step.
                first_upload = Some((images.clone(), labels.clone()));
                let key = DropoutKey::new(config.seed, 0);
                gradient_norms = Some(crate::train::gradient_norms(layout, &model, config.head, key, images, labels));
            }
            let t0 = Instant::now();
            // Each step's batch was uploaded while the step before it ran (as training does).
            let (images, labels) = match (first_upload.take(), resident.is_empty()) {
                (Some(first), _) => first,
                (None, true) => uploads.take(&mut batches)?.ok_or_else(ran_out)?,
                (None, false) => resident[step % resident.len()].clone(),
            };
            let key = DropoutKey::new(config.seed, step as u64);
            let (next, outcome) = if config.precision == crate::train::precision::Precision::F32 {
                train_step(layout, model, &mut optim, config.lr, config.head, config.fc_update, key, images, labels)
            } else {
                let scale = scaler.map_or(1.0, |s| s.scale);
                let mut one =
                    AccumulatedStep::new(config.batch, config.head, key).in_precision(config.precision, scale);
                one.micro_batch(layout, &model, images, labels);
                one.finish_with(layout, model, &mut optim, config.lr, scaler.as_mut())
            };
            model = next;
            losses.push(outcome.loss);
            if resident.is_empty() && step + 1 < total {
                uploads.refill(&mut batches)?;
            }
            B::sync(device).map_err(|e| OwtError::backend(format!("the device failed during step {step}: {e:?}")))?;
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            if step == 0 {
                first_step_ms = ms;
            }
            if step >= args.warmup {
                times.push(ms);
            }
        }
        let timed_s = timed_from.elapsed().as_secs_f64();
        let timed_to_unix = unix_now();
        let mpi_bytes_per_step = crate::runtime::processes::mpi_bytes_sent()
            .zip(mpi_from)
            .map(|(now, from)| (now - from) as f64 / args.steps.max(1) as f64);
        let ledger = layout.traffic().unwrap_or_default();
        let losses = losses
            .into_iter()
            .fold(Transaction::default(), |t, l| t.register(l))
            .execute()
            .iter()
            .map(|d| d.iter::<f64>().next().unwrap_or(f64::NAN))
            .collect();
        let communication = crate::train::Communication::per_step(&ledger, args.steps);
        let kernels =
            (args.backend == BackendKind::Cuda).then(|| crate::runtime::cuda_kernels::report(&kernels_from)).flatten();
        Ok(BenchReport {
            model: arch.name.to_string(),
            backend: args.backend.name().to_string(),
            fusion: devices.is_none() && !args.no_fusion && crate::runtime::backends::fusion_built(args.backend),
            layout: layout.describe(),
            devices: devices.unwrap_or(1),
            mesh: devices.is_some(),
            batch: config.batch,
            warmup: args.warmup,
            steps: args.steps,
            images_per_s: (args.steps * config.batch) as f64 / timed_s,
            median_step_ms: median(times),
            first_step_ms,
            timed_window_unix_s: [timed_from_unix, timed_to_unix],
            bytes_per_step: communication.bytes_per_step,
            messages_per_step: communication.messages_per_step,
            cross_process_bytes_per_step: communication.cross_process_bytes_per_step,
            mpi_bytes_per_step,
            by_collective: communication.by_collective,
            fallbacks: ledger.total_fallbacks(),
            empty_ops: ledger.total_empty_ops(),
            resident: args.resident,
            losses,
            gradient_norms,
            cuda: (args.backend == BackendKind::Cuda).then(|| {
                use crate::runtime::cuda_preflight::{versions, HostSystem};
                let mut v = versions(&HostSystem, HostSystem.gpu_name(0));
                if let Some(k) = &kernels {
                    v.f32_matmul = crate::runtime::cuda_kernels::f32_matmul(&k.installed);
                }
                v
            }),
            cuda_kernels: kernels,
            deterministic: args.kernels.deterministic,
            #[cfg(any(feature = "wgpu", feature = "cuda"))]
            autotune: (args.backend != BackendKind::Flex).then(AutotuneCounts::now),
            #[cfg(not(any(feature = "wgpu", feature = "cuda")))]
            autotune: None,
        })
    }
}

impl BackendJob for BenchJob<'_> {
    type Output = BenchReport;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<BenchReport, OwtError> {
        let layout = SingleDevice::<B>::new(device);
        self.run_layout(&layout, None)
    }
}

struct ProfileJob<'a> {
    args: &'a BenchArgs,
}

impl BackendJob for ProfileJob<'_> {
    type Output = StepProfile;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<StepProfile, OwtError> {
        let args = self.args;
        let config = bench_config(args);
        let arch = config.model.architecture()?;
        let layout = SingleDevice::<B>::new(device.clone());
        B::seed(&device, config.seed);
        let model: ConvNet<B> = arch.try_init(&device)?;
        let mut optim = sgd::<B>(&config);
        let source: Arc<dyn ImageSource> =
            Arc::new(synthetic_images(arch.input, arch.classes, config.batch, config.seed));
        let order: Vec<usize> = (0..config.batch).collect();
        let how = Preparation::new(args.workers.count(), 1);
        let mut batches = Prefetch::start(source, order, config.batch, false, StdRng::seed_from_u64(config.seed), how);
        let batch = batches.next_batch()?.ok_or_else(|| OwtError::input("the profile got no batch"))?;
        let norm = &config.model.pixel_norm;
        let (images, labels) = upload_batch(&layout, &batch, norm);
        let upload = || upload_batch(&layout, &batch, norm);
        let kind = args.backend.name();
        profile_step(model, &mut optim, config.lr, config.head, images, labels, &upload, args.steps, kind)
    }
}

impl MeshJob for BenchJob<'_> {
    type Output = BenchReport;
    fn run<IB: Backend>(self, mesh: MeshDevice<IB::Device>) -> Result<BenchReport, OwtError> {
        match &self.grid {
            Some(nodes) => {
                let plan = self.args.parallel.grid_plan()?;
                let devices = self.args.parallel.mesh.map(|[n, l]| n * l);
                let sending = (self.args.parallel.wire, self.args.parallel.overlap_sync);
                nodes.run::<IB, _>(mesh, &plan, self.scheme, sending, |layout| self.run_layout(layout, devices))
            }
            None => {
                let devices = mesh.size();
                let plan = self.args.parallel.layout_plan()?;
                let layout = MeshLayout::<IB>::new(mesh, plan, self.scheme).with_wire(self.args.parallel.wire);
                let layout = if self.args.parallel.overlap_sync { layout.with_overlapped_sync() } else { layout };
                self.run_layout(&layout, Some(devices))
            }
        }
    }
}

/// Runs the benchmark and prints its report.
pub fn run(args: &BenchArgs) -> Result<(), OwtError> {
    if args.batch == 0 {
        return Err(OwtError::input("--batch must be at least 1, got 0"));
    }
    let too_many = || {
        OwtError::input(format!(
            "--warmup {} and --steps {}: a benchmark runs at most {MAX_BENCH_STEPS} steps in all",
            args.warmup, args.steps
        ))
    };
    let total = args.warmup.checked_add(args.steps).filter(|&t| t <= MAX_BENCH_STEPS).ok_or_else(too_many)?;
    if args.loader {
        let report = crate::cli::bench_loader::run(args)?;
        return print_report(&report, args.json, || report.table());
    }
    // Under mpirun every process runs the same benchmark on its ranks of one mesh; process 0
    // prints the report (the job's traffic: every process's ledger summed).
    let processes = crate::runtime::processes::Processes::join()?;
    processes.check_same(&serde_json::json!({ "flags": format!("{args:?}") }))?;
    args.kernels.apply(args.backend)?;
    let arch = args.model.spec().architecture()?;
    let grid = args.parallel.grid(&processes)?;
    let job = BenchJob { args, scheme: args.parallel.scheme, grid: grid.clone() };
    let mut config = bench_config(args);
    let images = args.batch.checked_mul(4).ok_or_else(|| {
        OwtError::input(format!(
            "--batch {}: too large to hold the four batches of images a benchmark cycles",
            args.batch
        ))
    })?;
    config.limit = Some(images);
    crate::cli::train::check_memory(&config, args.backend)?;
    // The image order of every step is made up front: at most this many indices.
    total.checked_mul(args.batch).ok_or_else(too_many)?;
    if args.profile {
        if args.parallel.on_mesh_of(&processes) {
            return Err(OwtError::input("--profile times one device: leave out --devices and --plan (and mpirun)"));
        }
        let profile = run_on(args.backend, !args.no_fusion, ProfileJob { args })?;
        return print_report(&profile, args.json, || profile.table());
    }
    if args.compare_schemes && (!args.parallel.on_mesh() || args.parallel.plan_mesh(&processes, args.batch).0 < 2) {
        return Err(OwtError::input(format!(
            "--compare-schemes compares how ranks exchange activities: give --devices 2 or more (or --mesh N,L with L 2 or more), got {}",
            match args.parallel.mesh {
                Some([n, l]) => format!("--mesh {n},{l}"),
                None => format!("--devices {}", args.parallel.devices),
            }
        )));
    }
    if args.parallel.on_mesh_of(&processes) {
        args.parallel.check_grid_batch(args.batch)?;
        let (ranks, batch) = args.parallel.plan_mesh(&processes, args.batch);
        check_run(&args.parallel.layout_plan()?, &arch, ranks, batch)?;
    }
    if args.compare_schemes {
        let mut reports = Vec::new();
        for scheme in [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices] {
            let job = BenchJob { args, scheme, grid: grid.clone() };
            reports.push(run_on_mesh(args.backend, args.parallel.request(&processes), job)?);
        }
        if !processes.primary() {
            return Ok(());
        }
        return print_report(&reports, args.json, || scheme_table(&reports));
    }
    let report = if args.parallel.on_mesh_of(&processes) {
        run_on_mesh(args.backend, args.parallel.request(&processes), job)?
    } else {
        run_on(args.backend, !args.no_fusion, job)?
    };
    if !processes.primary() {
        return Ok(());
    }
    print_report(&report, args.json, || format!("{}\n", report.summary()))
}
