//! `owt eval`: a checkpoint's loss and accuracy on a dataset's test split.

use std::path::PathBuf;

use clap::Args;

use crate::cli::{ValLabelArgs, WorkersArg};
use crate::data::{open_ten_crop_split, open_test_split, DataRequest, DatasetKind, ImageSource};
use crate::error::OwtError;
use crate::runtime::backends::{run_on, BackendJob, BackendKind};
use crate::train::prefetch::Preparation;
use crate::train::ten_crop::evaluate_ten_crop;
use crate::train::trainer::PREFETCH;
use crate::train::{evaluate, load_model, Evaluation};

/// Arguments of `owt eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Run directory holding checkpoint.owt (the --out of `owt train`), or the checkpoint file.
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// The dataset whose test split to evaluate on.
    #[arg(long, value_enum)]
    pub dataset: DatasetKind,
    /// Dataset directory.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Compute backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Flex)]
    pub backend: BackendKind,
    /// Which kernels run convolutions and matmuls on CUDA.
    #[command(flatten)]
    pub kernels: crate::cli::CudaKernelArgs,
    /// Test as the 2012 paper did: each image's four corner and centre patches and their
    /// mirror images, the probabilities averaged over the ten (image folders only).
    #[arg(long)]
    pub ten_crop: bool,
    /// Image preparation threads.
    #[command(flatten)]
    pub workers: WorkersArg,
    /// A flat held-out folder's labels.
    #[command(flatten)]
    pub val: ValLabelArgs,
}

struct EvalJob<'a>(&'a EvalArgs);

impl BackendJob for EvalJob<'_> {
    type Output = Evaluation;
    fn run<B: burn::tensor::backend::AutodiffBackend>(self, device: B::Device) -> Result<Evaluation, OwtError> {
        let args = self.0;
        let (model, state) = load_model::<B::InnerBackend>(&args.checkpoint, &device)?;
        let arch = &model.architecture;
        let norm = &state.config.model.pixel_norm;
        let how = Preparation::new(args.workers.count(), PREFETCH);
        let request = DataRequest {
            dir: args.data.clone(),
            seed: state.config.seed,
            val_labels: args.val.spec(),
            trained_classes: state.dataset.as_ref().map(|d| d.classes.clone()),
            ..DataRequest::new(args.dataset, arch.input)
        }
        .resized_as(&state.config.model);
        if args.ten_crop {
            let test = std::sync::Arc::new(open_ten_crop_split(&request)?);
            crate::train::trainer::check_classes(
                test.classes(),
                arch,
                "evaluate a checkpoint trained on these classes",
            )?;
            return evaluate_ten_crop(&model, state.config.head, norm, test, &device, how);
        }
        let test = open_test_split(&request)?;
        same_classes_as_trained(test.class_names(), &state)?;
        let [c, h, w] = test.image_dims();
        arch.check_input([0, c, h, w])?;
        let advice = "evaluate a checkpoint trained on these classes";
        crate::train::trainer::check_classes(test.classes(), arch, advice)?;
        evaluate(&model, state.config.head, norm, &test, &device, how)
    }
}

/// Refuses a test split whose classes are not the ones the checkpoint learnt, in id order
/// (a folder's are mapped to them by name when it is opened; packed and IDX data keep theirs).
/// Checkpoints that do not keep their class names accept any.
fn same_classes_as_trained(test: Vec<String>, state: &crate::train::CheckpointState) -> Result<(), OwtError> {
    let Some(trained) = state.dataset.as_ref().map(|d| &d.classes) else { return Ok(()) };
    if &test == trained {
        return Ok(());
    }
    Err(OwtError::data(format!(
        "the test split does not hold the classes the checkpoint learnt: {}",
        crate::train::dataset_identity::class_difference(&test, trained)
    )))
}

/// Evaluates and prints accuracy and loss.
pub fn run(args: &EvalArgs) -> Result<(), OwtError> {
    args.kernels.apply(args.backend)?;
    let e = run_on(args.backend, true, EvalJob(args))?;
    if !e.loss.is_finite() {
        return Err(OwtError::checkpoint(format!(
            "the test loss of {} is {} although its weights are finite: its outputs overflow, so no accuracy is reported",
            args.checkpoint.display(),
            e.loss
        )));
    }
    let top5 = e.top5_accuracy.map(|t| format!(", top-5 {:.2}%", 100.0 * t)).unwrap_or_default();
    let how = if args.ten_crop { ", ten patches each" } else { "" };
    println!("test accuracy {:.2}%{top5} ({} images{how}), test loss {:.4}", 100.0 * e.accuracy, e.images, e.loss);
    Ok(())
}
