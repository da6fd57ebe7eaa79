//! `owt train`: train a model on a dataset with SGD.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use burn::tensor::backend::{AutodiffBackend, Backend};
use owt_hybrid::{MeshDevice, SingleDevice, StepLayout};

use crate::cli::{parse_head, ModelArgs, ParallelArgs, ValLabelArgs, WorkersArg};
use crate::data::lighting::LIGHTING_FILE;
use crate::data::{open_splits, DataRequest, DatasetKind, ImageSource, Lighting, LitImages, Splits};
use crate::error::OwtError;
use crate::runtime::backends::{run_on, run_on_mesh, BackendJob, BackendKind, MeshJob};
use crate::train::config::defaults;
use crate::train::run_dir::{self, Existing, RunDir};
use crate::train::schedule::{LrScaling, LrSchedule};
use crate::train::{train, EpochMetrics, RunOptions, TrainConfig};
use owt_models::Head;

/// Arguments of `owt train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The dataset.
    #[arg(long, value_enum)]
    pub dataset: DatasetKind,
    /// Dataset directory (Fashion-MNIST defaults to /usr/share/datasets/fashion-mnist).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Use only the first N training images.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Epochs to train (in total, when resuming).
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Batch size.
    #[arg(long, default_value_t = defaults::BATCH)]
    pub batch: usize,
    /// Learning rate.
    #[arg(long, default_value_t = defaults::LR)]
    pub lr: f64,
    /// When the learning rate is divided by 10: `constant`, `step:E1,E2,..` (after each of
    /// those epochs) or `plateau[:PATIENCE]` (when the test loss has not improved for
    /// PATIENCE epochs, default 1).
    #[arg(long, default_value = "constant", value_parser = |s: &str| s.parse::<LrSchedule>())]
    pub lr_schedule: LrSchedule,
    /// How --lr grows with --batch: `linear` (lr x batch / base-batch, the 2014 paper's
    /// choice for more workers), `sqrt`, or `none`.
    #[arg(long, value_enum, default_value_t = LrScaling::None)]
    pub lr_scaling: LrScaling,
    /// The batch size --lr is given for, with --lr-scaling.
    #[arg(long, default_value_t = crate::train::schedule::BASE_BATCH)]
    pub base_batch: usize,
    /// SGD momentum (dampening 0).
    #[arg(long, default_value_t = defaults::MOMENTUM)]
    pub momentum: f64,
    /// L2 weight decay.
    #[arg(long, default_value_t = defaults::WEIGHT_DECAY)]
    pub weight_decay: f64,
    /// Output head: softmax cross-entropy or independent logistic units.
    #[arg(long, default_value = "softmax", value_parser = parse_head)]
    pub head: Head,
    /// Compute backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Flex)]
    pub backend: BackendKind,
    /// Which kernels run convolutions and matmuls on CUDA.
    #[command(flatten)]
    pub kernels: crate::cli::CudaKernelArgs,
    /// Seed of initialisation, shuffling and dropout.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run directory for metrics.json and checkpoint.owt.
    #[arg(long, default_value = "runs/latest")]
    pub out: PathBuf,
    /// Continue the run in --out from its checkpoint (on any device count).
    #[arg(long, conflicts_with = "overwrite")]
    pub resume: bool,
    /// Replace the checkpoint --out holds (without this or --resume, a run refuses to start
    /// there).
    #[arg(long)]
    pub overwrite: bool,
    /// Lighting noise: the standard deviation of the per-image weights of the training
    /// split's RGB principal components (the 2012 paper's 0.1 is the default for colour
    /// image folders; 0 turns it off; needs 3 channels).
    #[arg(long)]
    pub lighting: Option<f64>,
    /// One device or a mesh.
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Steps between reads of the running loss and accuracy (progress lines and the
    /// divergence check); each read waits for the device, so a GPU prefers a larger value.
    #[arg(long, default_value_t = crate::train::trainer::READ_EVERY, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub read_every: usize,
    /// The precision the forward and backward passes compute in: f32, bf16 or f16 (on f32
    /// master weights and optimizer state, as torch.autocast; f16 with a dynamic loss scale).
    /// Part of the run: it changes the numbers.
    #[arg(long, default_value = "f32", value_parser = |s: &str| s.parse::<crate::train::precision::Precision>())]
    pub precision: crate::train::precision::Precision,
    /// Gradient accumulation: each step's --batch goes through the model in N equal
    /// micro-batches (one micro-batch's activations in memory), their gradients summed and
    /// synced across ranks once, then one update: the same step as one batch of them all.
    #[arg(long, default_value_t = 1)]
    pub accum_steps: usize,
    /// Image preparation threads.
    #[command(flatten)]
    pub workers: WorkersArg,
    /// A flat held-out folder's labels.
    #[command(flatten)]
    pub val: ValLabelArgs,
}

impl TrainArgs {
    /// The run these flags describe.
    pub fn config(&self) -> TrainConfig {
        TrainConfig {
            model: self.model.spec(),
            head: self.head,
            dataset: self.dataset,
            limit: self.limit,
            epochs: self.epochs,
            batch: self.batch,
            lr: self.lr,
            momentum: self.momentum,
            weight_decay: self.weight_decay,
            seed: self.seed,
            fc_update: self.parallel.fc_update,
            lr_schedule: self.lr_schedule.clone(),
            lr_scaling: self.lr_scaling,
            base_batch: self.base_batch,
            lighting: self.lighting.unwrap_or_else(|| self.default_lighting()),
            wire: self.parallel.wire,
            precision: self.precision,
            batch_stats: self.parallel.batch_stats.unwrap_or_default(),
        }
    }

    /// The paper's 0.1 for colour image folders (and their packed copies), none otherwise.
    fn default_lighting(&self) -> f64 {
        let colour = self.model.spec().architecture().is_ok_and(|a| a.input[0] == 3);
        if matches!(self.dataset, DatasetKind::Folder | DatasetKind::Packed) && colour {
            DEFAULT_LIGHTING
        } else {
            0.0
        }
    }
}

/// The 2012 paper's lighting noise, the default for colour image folders.
pub const DEFAULT_LIGHTING: f64 = 0.1;

struct TrainJob<'a> {
    args: &'a TrainArgs,
    config: TrainConfig,
    /// The run directory, made ready.
    dir: &'a RunDir,
    /// Where the nodes of a 2-D mesh run (`--mesh`), else a 1-D mesh or one device.
    grid: Option<crate::parallel::GridNodes>,
}

impl TrainJob<'_> {
    /// What the run reads its data as.
    fn request(&self) -> Result<DataRequest, OwtError> {
        let arch = self.config.model.architecture()?;
        Ok(DataRequest {
            dir: self.args.data.clone(),
            limit: self.args.limit,
            seed: self.args.seed,
            val_labels: self.args.val.spec(),
            ..DataRequest::new(self.args.dataset, arch.input)
        })
    }

    fn splits(&self) -> Result<Splits, OwtError> {
        let arch = self.config.model.architecture()?;
        let request = self.request()?;
        let splits = open_splits(&request.resized_as(&self.config.model))?;
        let [c, h, w] = splits.train.image_dims();
        arch.check_input([0, c, h, w])?;
        if self.config.lighting == 0.0 {
            return Ok(splits);
        }
        let lighting = self.lighting(&splits.train)?;
        Ok(Splits { train: Arc::new(LitImages::new(splits.train, lighting)), test: splits.test })
    }

    /// The run's principal components: read back from `--out` when resuming a run that
    /// stored them for this noise level, else computed over the training split and stored
    /// there (process 0 writes).
    fn lighting(&self, train: &Arc<dyn ImageSource>) -> Result<Lighting, OwtError> {
        let path = self.args.out.join(LIGHTING_FILE);
        if self.args.resume && path.exists() {
            // Through the bounded reader: a FIFO there would hang the resume while it holds the
            // run's lock, and a huge file would be read whole. Either is refused in one line
            // rather than replaced (the fit below writes over the path).
            let bytes =
                crate::host::bounded_read::read(&path, crate::data::lighting::MAX_LIGHTING_BYTES, "a lighting file")
                    .map_err(|e| {
                        OwtError::input(format!("--resume: {}: {e}; remove it (owt fits it again)", path.display()))
                    })?;
            // Checked as the checkpoint is: an edited file (eigenvalues of 1e308, a noise level
            // of another run) would train on other pixels than the run's.
            let refused = |why: String| {
                OwtError::checkpoint(format!(
                    "--resume: {}: {why}; restore it, or remove it and owt fits it again",
                    path.display()
                ))
            };
            let stored = Lighting::read_back(&bytes, self.config.lighting).map_err(refused)?;
            if stored.crc32.is_some() {
                return Ok(stored);
            }
            // From before files were checksummed: believed only if a fit gives the same.
            let fitted = self.fit_lighting(train, false)?;
            if !fitted.same_components(&stored) {
                return Err(refused("it holds other components than a fit of the training split gives".into()));
            }
            return Ok(stored);
        }
        let primary = crate::runtime::processes::Processes::join()?.primary();
        let lighting = self.fit_lighting(train, primary)?.sealed();
        if primary {
            let json = serde_json::to_vec_pretty(&lighting).map_err(|e| OwtError::io(e.to_string()))?;
            crate::train::atomic::write_atomic(&path, &json)?;
        }
        Ok(lighting)
    }

    /// The principal components of the training split at the run's noise level, said on
    /// stderr when `say`.
    fn fit_lighting(&self, train: &Arc<dyn ImageSource>, say: bool) -> Result<Lighting, OwtError> {
        if say {
            let images = train.len().min(crate::data::lighting::MAX_FIT_IMAGES);
            crate::err_line!(
                "lighting noise {}: the RGB principal components of {images} training images (once; stored in {})",
                self.config.lighting,
                self.args.out.join(LIGHTING_FILE).display()
            );
        }
        let how = crate::train::prefetch::Preparation::new(self.args.workers.count(), crate::train::trainer::PREFETCH);
        Lighting::fit(train.clone(), self.config.lighting, how)
    }

    fn train<B: AutodiffBackend, L: StepLayout<B>>(&self, layout: &L) -> Result<Vec<EpochMetrics>, OwtError> {
        let splits = self.splits()?;
        let data_dir = self.request()?.data_dir();
        if self.args.resume {
            // Another folder, renamed classes or grown splits: refused before the run starts
            // (the trainer checks again, for library users).
            let data = crate::train::DatasetIdentity::of(self.config.dataset, data_dir.as_deref(), &splits);
            crate::train::Checkpoint::read_state(&self.args.out)?.check_data(&data)?;
        }
        let primary = layout.primary();
        if primary {
            crate::err_line!(
                "training {} on {:?} ({} train / {} test images) with {} on {} ({}), batch {}, lr {}, FC update {}",
                self.config.model.architecture()?.name,
                self.args.dataset,
                splits.train.len(),
                splits.test.len(),
                self.config.head.name(),
                self.args.backend.name(),
                layout.describe(),
                match self.args.accum_steps {
                    1 => self.config.batch.to_string(),
                    n => format!("{} ({n} micro-batches of {})", self.config.batch, self.config.batch / n),
                },
                self.config.describe_lr(),
                self.config.fc_update.name()
            );
        }
        let opts = RunOptions {
            data_dir: data_dir.as_deref(),
            verbose: primary,
            read_every: self.args.read_every,
            workers: self.args.workers.count(),
            accum_steps: self.args.accum_steps,
        };
        train::<B, L>(&self.config, &splits, layout, self.dir, &opts)
    }
}

impl BackendJob for TrainJob<'_> {
    type Output = Vec<EpochMetrics>;
    fn run<B: AutodiffBackend>(self, device: B::Device) -> Result<Self::Output, OwtError> {
        let layout = SingleDevice::<B>::new(device);
        self.train(&layout)
    }
}

impl MeshJob for TrainJob<'_> {
    type Output = Vec<EpochMetrics>;
    fn run<IB: Backend>(self, mesh: MeshDevice<IB::Device>) -> Result<Self::Output, OwtError> {
        let parallel = &self.args.parallel;
        match &self.grid {
            Some(nodes) => {
                let plan = parallel.grid_plan()?;
                let sending = (self.config.wire, parallel.overlap_sync);
                nodes.run::<IB, _>(mesh, &plan, parallel.scheme, sending, |layout| self.train(layout))
            }
            None => self.train(&parallel.mesh_layout::<IB>(mesh, parallel.layout_plan()?)),
        }
    }
}

/// Images a run keeps decoded in host memory (IDX and synthetic sets; folders decode on
/// the fly), for the memory estimate.
pub fn host_images(config: &TrainConfig) -> u64 {
    match config.dataset {
        DatasetKind::Synthetic => {
            let n = config.limit.unwrap_or(crate::data::SYNTHETIC_TRAIN) as u64;
            n.saturating_add((n / 4).max(1))
        }
        DatasetKind::FashionMnist | DatasetKind::Mnist => {
            config.limit.map_or(60_000, |n| n.min(60_000)) as u64 + 10_000
        }
        DatasetKind::Folder | DatasetKind::Packed => 0,
    }
}

/// Refuses, before any data is read, a model or batch that cannot fit in this machine's
/// memory (the Flex backend computes in host memory).
pub fn check_memory(config: &TrainConfig, backend: BackendKind) -> Result<(), OwtError> {
    let arch = config.model.architecture()?;
    let estimate = crate::train::budget::estimate(&arch, config.batch, host_images(config))?;
    let available = if backend == BackendKind::Flex { crate::train::budget::available_memory() } else { None };
    crate::train::budget::check_fits(&arch, config.batch, estimate, available)
}

impl TrainArgs {
    /// What shapes the run, for comparing the processes of a job: the config and every flag
    /// that decides what is computed or where it is written.
    pub fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "config": self.config(),
            "parallel": self.parallel.settings(),
            "backend": self.backend.name(),
            "data": self.data,
            "val_labels": self.val.val_labels,
            "val_synsets": self.val.val_synsets,
            "out": self.out,
            "resume": self.resume,
            "overwrite": self.overwrite,
            "read_every": self.read_every,
            "accum_steps": self.accum_steps,
        })
    }
}

/// Trains and reports where results went. In a job of several processes (mpirun), every
/// process runs this with the same flags; process 0 alone prints and writes `--out`.
pub fn run(args: &TrainArgs) -> Result<(), OwtError> {
    let processes = crate::runtime::processes::Processes::join()?;
    processes.check_same(&args.settings())?;
    let mut config = args.config();
    // A plan file's batch statistics, where no flag overrides them.
    config.batch_stats = args.parallel.run_batch_stats()?;
    config.validate()?;
    // A batch that does not split into the micro-batches asked for is refused before anything.
    RunOptions { accum_steps: args.accum_steps, ..RunOptions::default() }.micro_batch(&config)?;
    let arch = config.model.architecture()?;
    // The run directory first: a bad --out must not cost an epoch.
    if let Some(data) = &args.data {
        crate::host::nested_paths::refuse_output_inside_input(&args.out, "--out", data, "--data")?;
    }
    let existing = Existing::of(args.resume, args.overwrite);
    // Held to the end: no other writer may start on this directory while this run writes.
    // Process 0 alone writes it; the others see the directory it made ready.
    let dir = if processes.primary() {
        run_dir::prepare(&args.out, existing, "train")?
    } else {
        RunDir::joined(&args.out, existing)
    };
    if args.resume {
        // Refuse a resume that would not continue the same run before anything starts.
        // The whole checkpoint is read and its checksums verified, so damage is found now.
        let saved = crate::train::Checkpoint::load(&args.out)?.state;
        // What the network expects of its input is the checkpoint's unless said otherwise.
        if args.model.input_norm.is_none() {
            config.model.pixel_norm = saved.config.model.pixel_norm;
        }
        if args.model.resize.is_none() {
            config.model.resize = saved.config.model.resize;
        }
        if args.model.resize_filter.is_none() {
            config.model.resize_filter = saved.config.model.resize_filter;
        }
        saved.check_resume(&config)?;
    }
    check_memory(&config, args.backend)?;
    args.kernels.apply(args.backend)?;
    let metrics = if args.parallel.on_mesh_of(&processes) {
        let request = args.parallel.request(&processes);
        let grid = args.parallel.grid(&processes)?;
        // Refuse an impossible plan before any data is read or backend started.
        args.parallel.check_grid_batch(config.batch)?;
        let (ranks, batch) = args.parallel.plan_mesh(&processes, config.batch);
        crate::parallel::check_run(&args.parallel.layout_plan()?, &arch, ranks, batch)?;
        run_on_mesh(args.backend, request, TrainJob { args, config, dir: &dir, grid })?
    } else {
        run_on(args.backend, true, TrainJob { args, config, dir: &dir, grid: None })?
    };
    if let Some(last) = metrics.last().filter(|_| processes.primary()) {
        crate::out_line!(
            "final test accuracy {:.2}% after {} epochs; metrics and checkpoint in {}",
            100.0 * last.test_accuracy,
            last.epoch,
            args.out.display()
        );
    }
    Ok(())
}
