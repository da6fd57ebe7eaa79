//! Where Flex's convolution time goes, per AlexNetSmall conv layer at batch 64: the forward
//! kernel and the three backward ops Burn's autodiff calls (input, weight and bias gradients),
//! which Flex 0.21 takes from burn-backend's generic formulations (the weight gradient as a
//! convolution whose kernel is the output gradient, the input gradient as a transposed
//! convolution, the bias gradient through a transposed copy), and beside them owt's own
//! formulations of the three (`owt_hybrid::conv_grad`). The PyTorch side of the same
//! table is `scripts/torch_conv_backward.py`. Run: `cargo bench --bench conv_backward --profile dev`.

use std::time::Instant;

use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::ops::{ConvOptions, FloatTensor, ModuleOps};
use burn::tensor::Distribution;
use owt_hybrid::conv_grad;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type B = Flex;

fn prim(t: Tensor<B, 4>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Median ms of `f` over 9 runs after one untimed run.
fn time(f: &dyn Fn()) -> f64 {
    f();
    let mut ts: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[4]
}

fn main() {
    let device = Default::default();
    let n = 64;
    // (name, in channels, side, out channels, kernel, padding, groups): AlexNetSmall, 2 towers.
    let layers = [
        ("conv1", 1, 28, 32, 5, 2, 1),
        ("conv2", 32, 13, 64, 5, 2, 2),
        ("conv3", 64, 6, 96, 3, 1, 1),
        ("conv4", 96, 6, 96, 3, 1, 2),
        ("conv5", 96, 6, 64, 3, 1, 2),
    ];
    println!(
        "{:<6} {:>8} {:>9} {:>9} {:>9} {:>10} {:>13} {:>9} {:>9}  {}",
        "layer",
        "forward",
        "x flex",
        "x owt",
        "w flex",
        "w per-img",
        "w chan-major",
        "b flex",
        "b owt",
        "owt's weight layout"
    );
    let normal = Distribution::Normal(0.0, 1.0);
    for (name, c, side, o, k, p, g) in layers {
        let x = Tensor::<B, 4>::random([n, c, side, side], normal, &device);
        let w = Tensor::<B, 4>::random([o, c / g, k, k], normal, &device);
        let b = Tensor::<B, 1>::random([o], normal, &device);
        let opts = ConvOptions::new([1, 1], [p, p], [1, 1], g);
        let gy = Tensor::<B, 4>::random([n, o, side, side], normal, &device);
        let fwd = time(&|| {
            let _ =
                B::conv2d(prim(x.clone()), prim(w.clone()), Some(b.clone().into_primitive().tensor()), opts.clone());
        });
        let xb = time(&|| {
            let _ = B::conv2d_x_backward(prim(x.clone()), prim(w.clone()), prim(gy.clone()), opts.clone());
        });
        let wb = time(&|| {
            let _ = B::conv2d_weight_backward(prim(x.clone()), prim(w.clone()), prim(gy.clone()), opts.clone());
        });
        let bb = time(&|| {
            let _ = B::conv2d_bias_backward(prim(x.clone()), b.clone().into_primitive().tensor(), prim(gy.clone()));
        });
        // owt's formulations (owt_hybrid::conv_grad), through Flex's own tensor ops.
        let xo = time(&|| {
            let _ = conv_grad::conv2d_x_backward::<B>(prim(x.clone()), prim(w.clone()), prim(gy.clone()), opts.clone());
        });
        let geo =
            conv_grad::Geometry::of(x.dims(), w.dims(), &opts).expect("AlexNetSmall's convolutions have stride 1");
        let [wp, wc] = [conv_grad::Method::PerImage, conv_grad::Method::ChannelMajor].map(|method| {
            time(&|| {
                let _ = conv_grad::weight_grad::<B>(x.clone(), gy.clone(), &geo, method);
            })
        });
        let bo = time(&|| {
            let _ = conv_grad::conv2d_bias_backward::<B>(prim(gy.clone()));
        });
        let chosen = conv_grad::Method::for_shape(&geo).name();
        println!(
            "{name:<6} {fwd:>8.2} {xb:>9.2} {xo:>9.2} {wb:>9.2} {wp:>10.2} {wc:>13.2} {bb:>9.2} {bo:>9.2}  {chosen}"
        );
    }
    strided(&device);
}

/// The strided conv1 of AlexNetOwt (224, 11x11, stride 4, padding 2) and of the 2012 AlexNet
/// (227, stride 4, no padding), at batch 16: the weight gradient by Flex (burn-backend's
/// generic formulation) and by owt's unfolded GEMM (`conv_grad::unfolded`).
fn strided(device: &burn::tensor::Device<B>) {
    let n = 16;
    println!("\n{:<11} {:>9} {:>12}   (weight gradient, ms, batch {n})", "layer", "w flex", "w unfolded");
    let normal = Distribution::Normal(0.0, 1.0);
    for (name, side, o, p) in [("owt conv1", 224, 64, 2), ("2012 conv1", 227, 96, 0)] {
        let opts = ConvOptions::new([4, 4], [p, p], [1, 1], 1);
        let x = Tensor::<B, 4>::random([n, 3, side, side], normal, device);
        let w = Tensor::<B, 4>::random([o, 3, 11, 11], normal, device);
        let geo = conv_grad::Unfolded::of(x.dims(), w.dims(), &opts).expect("a strided convolution");
        let gy = Tensor::<B, 4>::random([n, o, geo.out[0], geo.out[1]], normal, device);
        let wb = time(&|| {
            let _ = B::conv2d_weight_backward(prim(x.clone()), prim(w.clone()), prim(gy.clone()), opts.clone());
        });
        let wu = time(&|| {
            let _ = conv_grad::unfolded::weight_grad::<B>(x.clone(), gy.clone(), &geo);
        });
        println!("{name:<11} {wb:>9.2} {wu:>12.2}");
    }
}
