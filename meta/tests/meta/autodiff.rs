//! `Autodiff<Meta>` runs forward and backward passes: every parameter's gradient has the shape
//! and dtype it has on `Autodiff<Flex>` (which computes real values).

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::module::{
    adaptive_avg_pool2d, avg_pool2d, conv1d, conv2d, conv_transpose2d, embedding, interpolate, max_pool2d,
};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions, InterpolateMode, InterpolateOptions};
use burn::tensor::{DType, Distribution};
use owt_meta::{Meta, MetaDevice};

/// A gradient's parameter name, shape and dtype.
type Grad = (&'static str, Vec<usize>, DType);

fn param<B: AutodiffBackend, const D: usize>(shape: [usize; D], d: &B::Device) -> Tensor<B, D> {
    Tensor::random(shape, Distribution::Normal(0.0, 0.3), d).require_grad()
}

fn grad_of<B: AutodiffBackend, const D: usize>(name: &'static str, t: &Tensor<B, D>, grads: &B::Gradients) -> Grad {
    let g = t.grad(grads).unwrap_or_else(|| panic!("{name} has no gradient"));
    (name, g.shape().to_vec(), g.dtype())
}

/// conv 3->6 (5x5/2, pad 2) -> relu -> 3x3/2 max pool -> flatten -> linear 96->10 ->
/// log-softmax -> NLL, mean over the batch.
fn conv_net<B: AutodiffBackend>(d: &B::Device) -> Vec<Grad> {
    let n = 4;
    let (w1, b1, w2, b2) =
        (param::<B, 4>([6, 3, 5, 5], d), param::<B, 1>([6], d), param::<B, 2>([96, 10], d), param::<B, 1>([10], d));
    let x = Tensor::<B, 4>::random([n, 3, 16, 16], Distribution::Normal(0.0, 1.0), d);
    let y = Tensor::<B, 1, Int>::from_data(TensorData::new((0..n as i64).map(|i| i % 10).collect::<Vec<_>>(), [n]), d);
    let h = conv2d(x, w1.clone(), Some(b1.clone()), ConvOptions::new([2, 2], [2, 2], [1, 1], 1));
    let h = max_pool2d(relu(h), [3, 3], [2, 2], [1, 1], [1, 1], false);
    let h: Tensor<B, 2> = h.reshape([n as i32, -1]);
    let logits = h.matmul(w2.clone()) + b2.clone().unsqueeze::<2>();
    let loss = log_softmax(logits, 1).gather(1, y.reshape([n, 1])).neg().mean();
    let grads = loss.backward();
    vec![grad_of("w1", &w1, &grads), grad_of("b1", &b1, &grads), grad_of("w2", &w2, &grads), grad_of("b2", &b2, &grads)]
}

/// The other differentiable module ops Meta overrides: grouped conv with dilation, transposed
/// conv with output padding, average and adaptive pooling, bilinear resizing, conv1d and an
/// embedding.
fn other_ops_net<B: AutodiffBackend>(d: &B::Device) -> Vec<Grad> {
    let (wg, wt, bt, w1d, table) = (
        param::<B, 4>([6, 2, 3, 3], d),
        param::<B, 4>([6, 2, 3, 3], d),
        param::<B, 1>([4], d),
        param::<B, 3>([5, 4, 3], d),
        param::<B, 2>([11, 7], d),
    );
    let x = param::<B, 4>([2, 4, 9, 10], d);
    let h = conv2d(x.clone(), wg.clone(), None, ConvOptions::new([1, 2], [2, 1], [2, 1], 2));
    let h =
        conv_transpose2d(h, wt.clone(), Some(bt.clone()), ConvTransposeOptions::new([2, 2], [1, 0], [1, 1], [1, 1], 2));
    let h = avg_pool2d(h, [3, 2], [2, 1], [1, 0], true, true);
    let h = interpolate(h, [7, 5], InterpolateOptions::new(InterpolateMode::Bilinear));
    let pooled = adaptive_avg_pool2d(h, [3, 2]);
    let seq: Tensor<B, 3> = pooled.reshape([2, 4, 6]);
    let s = conv1d(seq, w1d.clone(), None, ConvOptions::new([1], [1], [1], 1));
    let idx = Tensor::<B, 2, Int>::from_data(TensorData::new(vec![0i64, 3, 10, 2, 2, 5], [2, 3]), d);
    let e = embedding(table.clone(), idx);
    let loss = s.sum() + e.powi_scalar(2).sum();
    let grads = loss.backward();
    vec![
        grad_of("x", &x, &grads),
        grad_of("wg", &wg, &grads),
        grad_of("wt", &wt, &grads),
        grad_of("bt", &bt, &grads),
        grad_of("w1d", &w1d, &grads),
        grad_of("table", &table, &grads),
    ]
}

#[test]
fn conv_net_gradients_have_flex_shapes() {
    let flex = conv_net::<Autodiff<Flex>>(&FlexDevice);
    let meta = conv_net::<Autodiff<Meta>>(&MetaDevice::new());
    assert_eq!(meta, flex);
}

#[test]
fn other_module_op_gradients_have_flex_shapes() {
    let flex = other_ops_net::<Autodiff<Flex>>(&FlexDevice);
    let meta = other_ops_net::<Autodiff<Meta>>(&MetaDevice::new());
    assert_eq!(meta, flex);
}
