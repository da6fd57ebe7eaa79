//! Response normalisation formulations on Flex, forward and backward, at AlexNetSmall's lrn1
//! shape (batch 64, 32 channels in 2 towers, 28x28). Run: `cargo bench --bench lrn --profile dev`.

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::Distribution;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type B = Autodiff<Flex>;

fn band(c: usize, reach: usize, device: &burn::tensor::Device<B>) -> Tensor<B, 2> {
    let values: Vec<f32> = (0..c * c).map(|k| ((k / c).abs_diff(k % c) <= reach) as u8 as f32).collect();
    Tensor::from_data(TensorData::new(values, [c, c]), device)
}

fn window_band(sq: Tensor<B, 4>, towers: usize) -> Tensor<B, 4> {
    let [n, c, h, w] = sq.dims();
    let pt = c / towers;
    let b = band(pt, 2, &sq.device()).reshape([1, 1, pt, pt]).expand([n, towers, pt, pt]);
    b.matmul(sq.reshape([n, towers, pt, h * w])).reshape([n, c, h, w])
}

fn window_slices(sq: Tensor<B, 4>, towers: usize) -> Tensor<B, 4> {
    let [n, c, h, w] = sq.dims();
    let pt = c / towers;
    let t = sq.reshape([n * towers, pt, h * w]);
    let padded = Tensor::cat(
        vec![
            Tensor::zeros([n * towers, 2, h * w], &t.device()),
            t,
            Tensor::zeros([n * towers, 2, h * w], &Default::default()),
        ],
        1,
    );
    let mut acc = padded.clone().slice([0..n * towers, 0..pt]);
    for s in 1..5 {
        acc = acc + padded.clone().slice([0..n * towers, s..s + pt]);
    }
    acc.reshape([n, c, h, w])
}

fn window_pool(sq: Tensor<B, 4>, towers: usize) -> Tensor<B, 4> {
    let [n, c, h, w] = sq.dims();
    let pt = c / towers;
    let t = sq.reshape([n * towers, 1, pt, h * w]);
    burn::tensor::module::avg_pool2d(t, [5, 1], [1, 1], [2, 0], true, false).mul_scalar(5.0).reshape([n, c, h, w])
}

fn power_powf(d: Tensor<B, 4>, x: Tensor<B, 4>) -> Tensor<B, 4> {
    x / d.powf_scalar(0.75)
}

fn power_sqrt(d: Tensor<B, 4>, x: Tensor<B, 4>) -> Tensor<B, 4> {
    let r = d.clone().sqrt().sqrt();
    x * r / d
}

/// `x * d^-0.75` with the power computed untracked by two square roots and the gradient
/// carried by a zero-valued linear term: `x * p + (d - d') * q` where `p`, `q = -0.75 x p / d`
/// and `d'` (= `d`) are constants to autodiff.
fn power_surrogate(d: Tensor<B, 4>, x: Tensor<B, 4>) -> Tensor<B, 4> {
    let dd = d.clone().detach();
    let r = dd.clone().sqrt().sqrt();
    let p = r / dd.clone(); // d^-0.75
    let q = (x.clone().detach() * p.clone() / dd.clone()).mul_scalar(-0.75);
    x * p + (d - dd) * q
}

fn main() {
    let device = Default::default();
    let x0 = Tensor::<B, 4>::random([64, 32, 28, 28], Distribution::Normal(0.0, 1.0), &device);
    let g = Tensor::<B, 4>::random([64, 32, 28, 28], Distribution::Normal(0.0, 1.0), &device);
    type W = fn(Tensor<B, 4>, usize) -> Tensor<B, 4>;
    type P = fn(Tensor<B, 4>, Tensor<B, 4>) -> Tensor<B, 4>;
    let windows: [(&str, W); 3] =
        [("band matmul", window_band), ("5 slices", window_slices), ("avg pool", window_pool)];
    let powers: [(&str, P); 3] = [("powf", power_powf), ("sqrt", power_sqrt), ("surrogate", power_surrogate)];
    let reference = {
        let x = x0.clone();
        power_powf(window_band(x.clone() * x.clone(), 2).mul_scalar(1e-4).add_scalar(2.0), x).into_data()
    };
    let mut ref_grad: Option<TensorData> = None;
    for (wn, wf) in windows {
        for (pn, pf) in powers {
            let mut fwd = Vec::new();
            let mut bwd = Vec::new();
            let mut out = None;
            let mut grads = Vec::new();
            for _ in 0..11 {
                let x = x0.clone().detach().require_grad();
                let t = Instant::now();
                let y = pf(wf(x.clone() * x.clone(), 2).mul_scalar(1e-4).add_scalar(2.0), x.clone());
                fwd.push(t.elapsed().as_secs_f64() * 1e3);
                let t = Instant::now();
                let gr = (y.clone() * g.clone()).sum().backward();
                bwd.push(t.elapsed().as_secs_f64() * 1e3);
                out = Some(y);
                grads.push(x.grad(&gr).unwrap().into_data());
            }
            fwd.sort_by(f64::total_cmp);
            bwd.sort_by(f64::total_cmp);
            let diff = out
                .unwrap()
                .into_data()
                .iter::<f32>()
                .zip(reference.iter::<f32>())
                .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            let gref = ref_grad.get_or_insert_with(|| grads[0].clone());
            let gdiff = grads[0].iter::<f32>().zip(gref.iter::<f32>()).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            println!("{wn:>12} + {pn:<9}: forward {:6.2} ms, backward {:6.2} ms, max diff {diff:.1e}, gradient diff {gdiff:.1e}", fwd[5], bwd[5]);
        }
    }
}
