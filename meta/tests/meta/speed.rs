//! How long `Autodiff<Meta>` takes for an AlexNet-sized training step at batch 1024 (224x224):
//! printed, not asserted (run with `--nocapture` to see it). Flex would need minutes and
//! tens of gigabytes for the same step; Meta allocates nothing proportional to the batch.

use std::time::Instant;

use burn::backend::Autodiff;
use burn::prelude::*;
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::module::{adaptive_avg_pool2d, conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use burn::tensor::Distribution;
use owt_meta::{Meta, MetaDevice};

type B = Autodiff<Meta>;

fn param<const D: usize>(shape: [usize; D], d: &MetaDevice) -> Tensor<B, D> {
    Tensor::random(shape, Distribution::Normal(0.0, 0.01), d).require_grad()
}

#[test]
fn alexnet_sized_step_at_batch_1024_takes_milliseconds() {
    let d = MetaDevice::new();
    let n = 1024;
    let convs = [
        (param([64, 3, 11, 11], &d), ConvOptions::new([4, 4], [2, 2], [1, 1], 1), true),
        (param([192, 64, 5, 5], &d), ConvOptions::new([1, 1], [2, 2], [1, 1], 1), true),
        (param([384, 192, 3, 3], &d), ConvOptions::new([1, 1], [1, 1], [1, 1], 1), false),
        (param([256, 384, 3, 3], &d), ConvOptions::new([1, 1], [1, 1], [1, 1], 1), false),
        (param([256, 256, 3, 3], &d), ConvOptions::new([1, 1], [1, 1], [1, 1], 1), true),
    ];
    let fcs = [param([256 * 6 * 6, 4096], &d), param([4096, 4096], &d), param([4096, 1000], &d)];
    let x = Tensor::<B, 4>::random([n, 3, 224, 224], Distribution::Default, &d);
    let y = Tensor::<B, 1, Int>::zeros([n], &d);

    d.reset_costs();
    let start = Instant::now();
    let mut h = x;
    for (w, options, pool) in &convs {
        h = relu(conv2d(h, w.clone(), None, options.clone()));
        if *pool {
            h = max_pool2d(h, [3, 3], [2, 2], [0, 0], [1, 1], false);
        }
    }
    let mut h: Tensor<B, 2> = adaptive_avg_pool2d(h, [6, 6]).reshape([n, 256 * 6 * 6]);
    for (i, w) in fcs.iter().enumerate() {
        h = h.matmul(w.clone());
        if i + 1 < fcs.len() {
            h = relu(h);
        }
    }
    let loss = log_softmax(h, 1).gather(1, y.reshape([n, 1])).neg().mean();
    let grads = loss.backward();
    let elapsed = start.elapsed();

    let g = convs[0].0.grad(&grads).expect("the first conv has a gradient");
    assert_eq!(g.dims(), [64, 3, 11, 11]);
    let totals = d.totals();
    println!(
        "Autodiff<Meta> AlexNet step, batch {n} at 224x224: {:.2} ms, {} ops, {:.1} TFLOP, {:.1} GB moved",
        elapsed.as_secs_f64() * 1e3,
        totals.ops,
        totals.flops as f64 / 1e12,
        totals.bytes() as f64 / 1e9
    );
}
