//! Training-step throughput of AlexNetSmall on Flex (images/s) with the training run's own
//! optimizer (SGD, momentum 0.9, weight decay 5e-4) and dropout, at batch 64 and 128 and one
//! and two towers: the figures the README's CPU comparison with PyTorch
//! (`scripts/torch_alexnet_small_cpu.py`) uses, and the single-device baseline the
//! Hybrid<B> benchmarks compare against. `owt bench --model alexnet-small --batch 64` times the
//! same step through the trainer's own code and should agree within noise.
//! Run: `cargo bench --bench train_step --profile dev` (the dev profile shares the test build;
//! dependencies are fully optimised there).

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::prelude::*;
use burn::tensor::Distribution;
use owt::data::DatasetKind;
use owt::train::{sgd, TrainConfig};
use owt_models::{Head, ModelKind, ModelSpec};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type B = Autodiff<Flex>;

fn main() {
    let device = Default::default();
    for (towers, batch) in [(2, 64), (2, 128), (1, 64)] {
        let spec = ModelSpec { towers: Some(towers), ..ModelSpec::new(ModelKind::AlexNetSmall) };
        let config = TrainConfig { batch, ..TrainConfig::new(spec, DatasetKind::Synthetic) };
        let mut model = config.model.architecture().expect("alexnet-small builds").init::<B>(&device);
        let mut optim = sgd::<B>(&config);
        let x = Tensor::<B, 4>::random([batch, 1, 28, 28], Distribution::Normal(0.0, 1.0), &device);
        let y = Tensor::<B, 1, Int>::from_data(
            TensorData::new((0..batch as i64).map(|i| i % 10).collect::<Vec<_>>(), [batch]),
            &device,
        );
        let mut step = |model: owt_models::AlexNet<B>| {
            let loss = Head::Softmax.loss(model.forward(x.clone()), y.clone());
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            optim.step(config.lr, model, grads)
        };
        for _ in 0..3 {
            model = step(model); // warm-up: the allocator's pools fill
        }
        let steps = 20;
        let t = Instant::now();
        for _ in 0..steps {
            model = step(model);
        }
        let secs = t.elapsed().as_secs_f64();
        let _ = model.valid();
        println!(
            "alexnet-small towers={towers} batch={batch}: {:.1} ms/step, {:.0} images/s",
            1e3 * secs / steps as f64,
            (steps * batch) as f64 / secs
        );
    }
}
