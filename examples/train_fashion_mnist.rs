//! Train AlexNetSmall on Fashion-MNIST with the library API (what `owt train` does), then
//! evaluate the saved checkpoint. Run: `cargo run --example train_fashion_mnist -- [EPOCHS]`.
//! Needs Debian's `dataset-fashion-mnist`.

use burn::backend::{Autodiff, Flex};
use owt::data::{open_splits, DataRequest, DatasetKind};
use owt::train::{evaluate, load_model, prepare_run_dir, train, Existing, RunOptions, TrainConfig};
use owt_hybrid::SingleDevice;
use owt_models::{ModelKind, ModelSpec};

fn main() -> Result<(), owt::OwtError> {
    let epochs = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let config =
        TrainConfig { epochs, ..TrainConfig::new(ModelSpec::new(ModelKind::AlexNetSmall), DatasetKind::FashionMnist) };
    let arch = config.model.architecture()?;
    let splits = open_splits(&DataRequest::new(config.dataset, arch.input))?;
    let out = std::path::Path::new("runs/example-fashion-mnist");
    let device: burn::backend::flex::FlexDevice = Default::default();
    train(
        &config,
        &splits,
        &SingleDevice::<Autodiff<Flex>>::new(device.clone()),
        &prepare_run_dir(out, Existing::Overwrite, "train")?,
        &RunOptions { verbose: true, ..RunOptions::default() },
    )?;
    let (model, state) = load_model::<Flex>(out, &device)?;
    let e = evaluate(
        &model,
        state.config.head,
        &state.config.model.pixel_norm,
        &splits.test,
        &device,
        owt::train::input::Preparation::all_cores(2),
    )?;
    println!("reloaded checkpoint: test accuracy {:.2}%", 100.0 * e.accuracy);
    Ok(())
}
