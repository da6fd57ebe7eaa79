//! A checkpoint whose two towers' first-layer filters are made to differ as the 2012 paper's
//! figure 3 shows them: tower 1 colour-agnostic (the same weights in R, G and B), tower 2
//! colour-specific (red alone), from a two-tower AlexNetSmall's initial filters; then
//! `owt report DIR --filters` draws and measures them (0.000 and 0.816).
//! Run: `cargo run --locked --example grey_and_colour_filters -- DIR`.

use burn::backend::Flex;
use burn::module::{Module, Param};
use burn::prelude::*;
use owt::train::checkpoint::record_to_bytes;
use owt::train::{sgd, Checkpoint, CheckpointState, TrainConfig};
use owt_models::{AlexNet, ModelKind, ModelSpec};

fn main() -> Result<(), owt::OwtError> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "runs/grey-and-colour".into());
    let dir = std::path::Path::new(&dir);
    std::fs::create_dir_all(dir).map_err(|e| owt::OwtError::io(e.to_string()))?;
    let spec = ModelSpec { towers: Some(2), channels: Some(3), ..ModelSpec::new(ModelKind::AlexNetSmall) };
    let config = TrainConfig::new(spec, owt::data::DatasetKind::Synthetic);
    let device = Default::default();
    <Flex as Backend>::seed(&device, 1);
    let mut model: AlexNet<Flex> = config.model.architecture()?.try_init(&device)?;
    let w = model.conv(1).weight.val();
    let [n, c, k, _] = w.dims();
    let mut v: Vec<f32> = w.into_data().to_vec().map_err(|e| owt::OwtError::io(format!("{e:?}")))?;
    let plane = k * k;
    for f in 0..n {
        for p in 0..plane {
            let red = v[f * c * plane + p];
            let other = if f < n / 2 { red } else { 0.0 };
            v[(f * c + 1) * plane + p] = other;
            v[(f * c + 2) * plane + p] = other;
        }
    }
    model.conv1.as_mut().expect("an AlexNet has conv1").weight =
        Param::from_tensor(Tensor::from_data(TensorData::new(v, [n, c, k, k]), &device));
    type A = burn::backend::Autodiff<Flex>;
    let optim = sgd::<A>(&config);
    let state = CheckpointState { config, epochs_done: 0, metrics: Vec::new(), imported_from: None, dataset: None };
    let model_bytes = record_to_bytes::<Flex, _>(model.into_record())?;
    let optim_bytes = record_to_bytes::<A, _>(burn::optim::Optimizer::<AlexNet<A>, A>::to_record(&optim))?;
    Checkpoint::save(dir, &state, &model_bytes, &optim_bytes)?;
    println!("wrote {}: owt report {} --filters", dir.display(), dir.display());
    Ok(())
}
