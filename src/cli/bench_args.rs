//! The arguments of `owt bench`, apart from what runs them, so that the benchmarks it
//! dispatches to (`bench`, `bench_loader`) stand on them without standing on each other.

use clap::Args;
use owt_models::Head;

use crate::cli::{parse_head, ModelArgs, ParallelArgs, WorkersArg};
use crate::data::DatasetKind;
use crate::runtime::backends::BackendKind;

/// Arguments of `owt bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The model (default alexnet-owt); with --loader, the geometry of the images prepared.
    #[command(flatten)]
    pub model: ModelArgs<false>,
    /// Global batch size.
    #[arg(long, default_value_t = 128)]
    pub batch: usize,
    /// Compute backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Flex)]
    pub backend: BackendKind,
    /// Which kernels run convolutions and matmuls on CUDA.
    #[command(flatten)]
    pub kernels: crate::cli::CudaKernelArgs,
    /// The precision the steps compute in, as `owt train --precision`.
    #[arg(long, default_value = "f32", value_parser = |s: &str| s.parse::<crate::train::precision::Precision>())]
    pub precision: crate::train::precision::Precision,
    /// One device or a mesh.
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// Single device without kernel fusion (wgpu, cuda: CubeBackend instead of Fusion); meshes
    /// never fuse, nor do builds without the `fusion` feature (on with `cuda`).
    #[arg(long)]
    pub no_fusion: bool,
    /// Output head.
    #[arg(long, default_value = "softmax", value_parser = parse_head)]
    pub head: Head,
    /// Steps run before timing (compilation and autotuning happen here).
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    /// Timed steps.
    #[arg(long, default_value_t = 10, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub steps: usize,
    /// Seed of the weights, data and dropout.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Profile one step layer by layer instead (forward and backward of every layer, the
    /// loss, the optimizer, the upload; medians over --steps runs). Single device only.
    #[arg(long)]
    pub profile: bool,
    /// Also report each parameter's gradient norm on the first batch, before any update (the
    /// synced gradients, by parameter path): where a mesh's losses part from one device's,
    /// the parameter whose norms part is where to look.
    #[arg(long, conflicts_with_all = ["profile", "compare_schemes", "loader"])]
    pub gradient_norms: bool,
    /// Keep the batches on the device: the four distinct batches the steps cycle through are
    /// uploaded once before the first step and reused, so the steps time compute alone (as
    /// PyTorch's figure with the batch on the GPU); without it each step uploads its batch, as
    /// training does.
    #[arg(long, conflicts_with_all = ["profile", "loader"])]
    pub resident: bool,
    /// Run the mesh benchmark once under each exchange scheme (a, b, c; --scheme is ignored)
    /// and print their step times side by side.
    #[arg(long, conflicts_with = "profile")]
    pub compare_schemes: bool,
    /// Image preparation threads.
    #[command(flatten)]
    pub workers: WorkersArg,
    /// Time the input pipeline alone, the loader (the training split of --dataset, prepared
    /// by --workers threads, no network): images/s and the time per stage. --steps batches
    /// are timed. (`--input` is the model's input side.)
    #[arg(long, conflicts_with_all = ["profile", "compare_schemes"])]
    pub loader: bool,
    /// The dataset of --loader.
    #[arg(long, value_enum, default_value_t = DatasetKind::Synthetic, requires = "loader")]
    pub dataset: DatasetKind,
    /// Dataset directory of --loader.
    #[arg(long, requires = "loader")]
    pub data: Option<std::path::PathBuf>,
    /// With --loader: only this many training images.
    #[arg(long, requires = "loader")]
    pub limit: Option<usize>,
}
