//! Gradients: each differentiable op of Burn's tensor API on `Autodiff<Hybrid<Flex>>` against
//! `Autodiff<Flex>`, in the same configurations as the forward cases: the output and the
//! gradient of every input, the output weighted by a pattern before the sum (so no gradient is
//! all ones). Gradients of split inputs are sums over the ranks: within rounding.

use burn::backend::{Autodiff, Flex};
use burn::tensor::activation;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::module;
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::{DType, Int, Tensor, TensorData};

use super::{check, finite, float_data, floats_of, Case, Input, Match, H};

/// 2-D inputs of odd, even and single-row shapes, finite and not, f32 and f16 (`count` per set).
fn inputs(count: usize) -> Vec<Input> {
    floats_of(count, &[&[5, 3], &[4, 6], &[1, 7]], true)
}

fn one() -> Vec<Input> {
    inputs(1)
}

fn two() -> Vec<Input> {
    inputs(2)
}

/// Finite values only (ops whose gradient at a NaN picks among equal candidates).
fn one_finite() -> Vec<Input> {
    floats_of(1, &[&[5, 3], &[4, 6], &[1, 7]], false)
}

/// `[m, k]` and `[k, n]` operands.
fn matmul_pair() -> Vec<Input> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for (a, b) in [([5usize, 3], [3usize, 4]), ([4, 6], [6, 2])] {
            out.push(Input {
                what: format!("{dtype:?} {a:?} x {b:?}"),
                data: vec![
                    float_data(finite(a[0] * a[1], 0), &a, dtype),
                    float_data(finite(b[0] * b[1], 1), &b, dtype),
                ],
            });
        }
    }
    out
}

/// Images `[n, 4, 6, 5]` and filters `[6, 2, 3, 3]` (two groups), flattened to 2-D for the
/// harness and reshaped back in the case.
fn conv_pair() -> Vec<Input> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for n in [3usize, 4] {
            out.push(Input {
                what: format!("{dtype:?} images [{n}, 4, 6, 5], filters [6, 2, 3, 3]"),
                data: vec![
                    float_data(finite(n * 120, 0), &[n, 120], dtype),
                    float_data(finite(108, 1), &[6, 18], dtype),
                ],
            });
        }
    }
    out
}

/// Images `[n, 120]`, filters `[6, 36]` and a bias `[1, 6]`, reshaped in each case to the
/// shapes of a 1-D, 2-D, 3-D or transposed convolution with four input and six output channels.
fn conv_triple() -> Vec<Input> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for n in [3usize, 4] {
            out.push(Input {
                what: format!("{dtype:?} images [{n}, 4 x 30], filters [6, 4 x 9], bias [6]"),
                data: vec![
                    float_data(finite(n * 120, 0), &[n, 120], dtype),
                    float_data(finite(216, 1), &[6, 36], dtype),
                    float_data(finite(6, 2), &[1, 6], dtype),
                ],
            });
        }
    }
    out
}

/// `grad_case!(name, inputs, |xs| y)`: `y` (a `Tensor<B, 1>`) from the 2-D inputs `xs`, generic
/// over `B: AutodiffBackend`; the case returns `y` and the gradient of each input.
macro_rules! grad_case {
    ($name:literal, $inputs:expr, |$xs:ident| $body:expr) => {{
        fn run<B: AutodiffBackend>(dev: &B::Device, data: &[TensorData]) -> Vec<TensorData> {
            let $xs: Vec<Tensor<B, 2>> =
                data.iter().map(|d| Tensor::<B, 2>::from_data(d.clone(), dev).require_grad()).collect();
            let y: Tensor<B, 1> = $body;
            let n = y.dims()[0];
            let w: Vec<f32> = (0..n).map(|i| 0.5 + (i % 5) as f32 * 0.25).collect();
            let w = Tensor::<B, 1>::from_data(TensorData::new(w, [n]), dev).cast(y.dtype());
            let grads = (y.clone() * w).sum().backward();
            let mut out = vec![y.into_data()];
            out.extend($xs.iter().map(|x| {
                x.grad(&grads).map(|g| g.into_data()).unwrap_or_else(|| TensorData::new(Vec::<f32>::new(), [0]))
            }));
            out
        }
        Case {
            op: concat!("gradient of ", $name),
            inputs: $inputs,
            matching: Match::Rounding,
            flex: run::<Autodiff<Flex>>,
            hybrid: run::<Autodiff<H>>,
        }
    }};
}

/// A tensor flattened to one dimension.
fn flat<B: AutodiffBackend, const D: usize>(t: Tensor<B, D>) -> Tensor<B, 1> {
    t.flatten::<1>(0, D - 1)
}

fn cases() -> Vec<Case> {
    vec![
        grad_case!("neg", one, |x| flat(-x[0].clone())),
        grad_case!("exp", one, |x| flat(x[0].clone().exp())),
        grad_case!("log", one, |x| flat(x[0].clone().abs().add_scalar(0.5).log())),
        grad_case!("sqrt", one, |x| flat(x[0].clone().abs().add_scalar(0.25).sqrt())),
        grad_case!("abs", one, |x| flat(x[0].clone().abs())),
        grad_case!("sin, cos", one, |x| flat(x[0].clone().sin() + x[0].clone().cos())),
        grad_case!("tanh", one, |x| flat(x[0].clone().tanh())),
        grad_case!("erf", one, |x| flat(x[0].clone().erf())),
        grad_case!("recip", one, |x| flat(x[0].clone().abs().add_scalar(1.0).recip())),
        grad_case!("powf_scalar", one, |x| flat(x[0].clone().abs().powf_scalar(1.5))),
        grad_case!("clamp", one, |x| flat(x[0].clone().clamp(-1.0, 2.0))),
        grad_case!("add, sub, mul, div", two, |x| flat(
            (x[0].clone() + x[1].clone()) * x[0].clone() - x[1].clone() / x[0].clone().abs().add_scalar(1.0)
        )),
        grad_case!("atan2", two, |x| flat(x[0].clone().atan2(x[1].clone()))),
        grad_case!("powf", two, |x| flat(x[0].clone().abs().add_scalar(0.5).powf(x[1].clone().clamp(-2.0, 2.0)))),
        grad_case!("matmul", matmul_pair, |x| flat(x[0].clone().matmul(x[1].clone()))),
        grad_case!("transpose, swap_dims", one, |x| flat(x[0].clone().transpose().swap_dims(0, 1).mul_scalar(2.0))),
        grad_case!("reshape", one, |x| flat(x[0].clone().reshape([-1, 1]))),
        grad_case!("flip", one, |x| flat(x[0].clone().flip([0, 1]))),
        grad_case!("sum, mean", one, |x| x[0].clone().sum().reshape([1]) + x[0].clone().mean().reshape([1])),
        grad_case!("sum_dim, mean_dim", one, |x| flat(x[0].clone().sum_dim(0)) + flat(x[0].clone().mean_dim(0))),
        grad_case!("sum_dim along 1", one, |x| flat(x[0].clone().sum_dim(1))),
        grad_case!("prod_dim", one_finite, |x| flat(x[0].clone().prod_dim(1))),
        grad_case!("max_dim, min_dim", one_finite, |x| flat(x[0].clone().max_dim(1)) + flat(x[0].clone().min_dim(1))),
        grad_case!("max_dim along 0", one_finite, |x| flat(x[0].clone().max_dim(0))),
        grad_case!("cumsum", one, |x| flat(x[0].clone().cumsum(0))),
        grad_case!("cumprod", one_finite, |x| flat(x[0].clone().cumprod(1))),
        grad_case!("softmax", one, |x| flat(activation::softmax(x[0].clone(), 1))),
        grad_case!("log_softmax along 0", one, |x| flat(activation::log_softmax(x[0].clone(), 0))),
        grad_case!("relu, sigmoid, gelu", one, |x| flat(
            activation::relu(x[0].clone()) + activation::sigmoid(x[0].clone()) + activation::gelu(x[0].clone())
        )),
        grad_case!("leaky_relu, log_sigmoid", one, |x| flat(
            activation::leaky_relu(x[0].clone(), 0.1) + activation::log_sigmoid(x[0].clone())
        )),
        grad_case!("slice", one, |x| {
            let [r, c] = x[0].dims();
            flat(x[0].clone().slice([r / 2..r, 0..c.min(2)]))
        }),
        grad_case!("slice_assign", two, |x| {
            let [r, c] = x[0].dims();
            let part = x[1].clone().slice([0..r.div_ceil(2), 0..c]);
            flat(x[0].clone().slice_assign([r / 2..r, 0..c], part))
        }),
        grad_case!("cat", two, |x| flat(Tensor::cat(vec![x[0].clone(), x[1].clone()], 0))),
        grad_case!("cat along 1", two, |x| flat(Tensor::cat(vec![x[0].clone(), x[1].clone()], 1))),
        grad_case!("gather", one, |x| {
            let [r, c] = x[0].dims();
            let dev = x[0].device();
            let idx: Vec<i64> = (0..r * c).map(|i| ((i * 7 + 1) % c) as i64).collect();
            flat(x[0].clone().gather(1, Tensor::<B, 2, Int>::from_data(TensorData::new(idx, [r, c]), &dev)))
        }),
        grad_case!("select", one, |x| {
            let [r, _] = x[0].dims();
            let dev = x[0].device();
            let idx = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![r as i64 - 1, 0, r as i64 - 1], [3]), &dev);
            flat(x[0].clone().select(0, idx))
        }),
        grad_case!("expand, repeat", one, |x| {
            let [r, c] = x[0].dims();
            flat(x[0].clone().unsqueeze::<3>().expand([2, r, c]))
                + flat(x[0].clone().repeat_dim(0, 2)).sum().reshape([1])
        }),
        grad_case!("mask_where", two, |x| {
            let mask = x[0].clone().greater_elem(0.0);
            flat(x[0].clone().mask_where(mask, x[1].clone()))
        }),
        // topk has no gradient in Burn's autodiff ("not implemented for autodiff").
        grad_case!("sort", one_finite, |x| flat(x[0].clone().sort(1))),
        grad_case!("max, min", one_finite, |x| x[0].clone().max().reshape([1]) + x[0].clone().min().reshape([1])),
        grad_case!("conv2d", conv_pair, |x| {
            let n = x[0].dims()[0];
            let images = x[0].clone().reshape([n, 4, 6, 5]);
            let filters = x[1].clone().reshape([6, 2, 3, 3]);
            flat(module::conv2d(images, filters, None, ConvOptions::new([2, 2], [1, 1], [1, 1], 2)))
        }),
        grad_case!("max_pool2d, avg_pool2d", conv_pair, |x| {
            let n = x[0].dims()[0];
            let images = x[0].clone().reshape([n, 4, 6, 5]);
            flat(module::max_pool2d(images.clone(), [2, 2], [2, 2], [0, 0], [1, 1], false))
                + flat(module::avg_pool2d(images, [2, 2], [2, 2], [0, 0], true, false))
        }),
        grad_case!("conv2d with a bias", conv_triple, |x| {
            let n = x[0].dims()[0];
            let (images, filters) = (x[0].clone().reshape([n, 4, 6, 5]), x[1].clone().reshape([6, 4, 3, 3]));
            let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
            flat(module::conv2d(images, filters, Some(x[2].clone().reshape([6])), options))
        }),
        grad_case!("conv1d", conv_triple, |x| {
            let n = x[0].dims()[0];
            let (images, filters) = (x[0].clone().reshape([n, 4, 30]), x[1].clone().reshape([6, 4, 9]));
            let options = ConvOptions::new([2], [3], [1], 1);
            flat(module::conv1d(images, filters, Some(x[2].clone().reshape([6])), options))
        }),
        grad_case!("conv3d", conv_triple, |x| {
            let n = x[0].dims()[0];
            let (images, filters) = (x[0].clone().reshape([n, 4, 2, 3, 5]), x[1].clone().reshape([6, 4, 3, 3, 1]));
            let options = ConvOptions::new([1, 1, 1], [1, 1, 0], [1, 1, 1], 1);
            flat(module::conv3d(images, filters, Some(x[2].clone().reshape([6])), options))
        }),
        grad_case!("conv_transpose1d, conv_transpose2d", conv_triple, |x| {
            let n = x[0].dims()[0];
            let bias = Some(x[2].clone().reshape([6]));
            let one = module::conv_transpose1d(
                x[0].clone().reshape([n, 4, 30]),
                x[1].clone().reshape([4, 6, 9]),
                bias.clone(),
                ConvTransposeOptions::new([2], [3], [1], [1], 1),
            );
            let two = module::conv_transpose2d(
                x[0].clone().reshape([n, 4, 6, 5]),
                x[1].clone().reshape([4, 6, 3, 3]),
                bias,
                ConvTransposeOptions::new([1, 2], [1, 0], [0, 1], [1, 1], 1),
            );
            flat(one) + flat(two).sum().reshape([1])
        }),
        grad_case!("linear", matmul_pair, |x| flat(module::linear(x[0].clone(), x[1].clone(), None))),
    ]
}

/// The gradient cases (not trait methods: the coverage check reads the forward cases).
#[allow(dead_code)]
pub(crate) fn all() -> Vec<Case> {
    cases()
}

#[test]
fn every_gradient_is_what_flex_computes() {
    let counts = check(&cases());
    counts.report("gradients");
}
