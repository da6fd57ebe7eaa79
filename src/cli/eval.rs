//! `owt eval`: a checkpoint's loss and accuracy on a dataset's test split.

use std::path::PathBuf;

use clap::Args;

use crate::backends::{run_on, BackendJob, BackendKind};
use crate::data::{open_test_split, DataRequest, DatasetKind};
use crate::error::OwtError;
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
}

struct EvalJob<'a>(&'a EvalArgs);

impl BackendJob for EvalJob<'_> {
    type Output = Evaluation;
    fn run<B: burn::tensor::backend::AutodiffBackend>(self, device: B::Device) -> Result<Evaluation, OwtError> {
        let args = self.0;
        let (model, state) = load_model::<B::InnerBackend>(&args.checkpoint, &device)?;
        let arch = &model.architecture;
        let test = open_test_split(&DataRequest {
            kind: args.dataset,
            dir: args.data.clone(),
            limit: None,
            model_input: arch.input,
            seed: state.config.seed,
        })?;
        let [c, h, w] = test.image_dims();
        arch.check_input([0, c, h, w])?;
        let advice = "evaluate a checkpoint trained on these classes";
        crate::train::trainer::check_classes(test.classes(), arch, advice)?;
        evaluate(&model, state.config.head, &test, &device)
    }
}

/// Evaluates and prints accuracy and loss.
pub fn run(args: &EvalArgs) -> Result<(), OwtError> {
    let e = run_on(args.backend, true, EvalJob(args))?;
    if !e.loss.is_finite() {
        return Err(OwtError::checkpoint(format!(
            "the test loss of {} is {} although its weights are finite: its outputs overflow, so no accuracy is reported",
            args.checkpoint.display(),
            e.loss
        )));
    }
    println!("test accuracy {:.2}% ({} images), test loss {:.4}", 100.0 * e.accuracy, e.images, e.loss);
    Ok(())
}
