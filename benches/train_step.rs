//! Training-step throughput of AlexNetSmall on Flex (images/s), the single-device baseline
//! the Hybrid<B> benchmarks compare against. Run: `cargo bench --bench train_step --profile dev`
//! (the dev profile shares the test build; dependencies are fully optimised there).

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_models::{AlexNetSmallConfig, Head};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type B = Autodiff<Flex>;

fn main() {
    let device = Default::default();
    for towers in [1, 2] {
        let mut model = AlexNetSmallConfig::new().with_towers(towers).init::<B>(&device);
        let mut optim = SgdConfig::new().init::<B, owt_models::AlexNet<B>>();
        let batch = 128;
        let x = Tensor::<B, 4>::random([batch, 1, 28, 28], Distribution::Normal(0.0, 1.0), &device);
        let y = Tensor::<B, 1, Int>::from_data(
            TensorData::new((0..batch as i64).map(|i| i % 10).collect::<Vec<_>>(), [batch]),
            &device,
        );
        let mut step = |model: owt_models::AlexNet<B>| {
            let loss = Head::Softmax.loss(model.forward(x.clone()), y.clone());
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            optim.step(0.01, model, grads)
        };
        model = step(model); // warm-up
        let steps = 10;
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
