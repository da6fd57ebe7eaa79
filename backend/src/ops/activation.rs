//! Activation ops of `Hybrid<B>`: the ones Burn's autodiff calls on the inner backend run rank
//! by rank on the inner backend's own kernels (one fused pass where the inner backend has
//! one, instead of Burn's default compare + mask compositions), as do `prelu` and `softmax`
//! (over class-split logits softmax keeps Burn's composition of Hybrid's ops). The rest keep
//! Burn's default compositions (the inner backend has no op of its own for them either), which
//! run through the placement rules.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{ActivationOps, FloatTensorOps};
use burn::tensor::Scalar;

use crate::backend::{Hybrid, HybridFloat};
use crate::ops::common;
use crate::rules::Linearity;
use crate::tensor::kind::FloatKind;

type F<B> = HybridFloat<B>;

/// A backward op `f(x, grad)` that is linear in `grad` for a whole `x`: a `Partial` gradient
/// stays a summand (as with the compositions it replaces), everything else aligns as for any
/// elementwise binary.
fn linear_in_grad<B: Backend>(
    op: &str,
    x: F<B>,
    grad: F<B>,
    f: impl Fn(B::FloatTensorPrimitive, B::FloatTensorPrimitive) -> B::FloatTensorPrimitive + Sync,
) -> F<B> {
    common::binary::<B, FloatKind, FloatKind, FloatKind>(op, grad, x, Linearity::LeftScaling, |g, x| f(x, g))
}

/// A non-linear activation (pending sums made whole first).
fn unary<B: Backend>(op: &str, t: F<B>, f: impl Fn(B::FloatTensorPrimitive) -> B::FloatTensorPrimitive + Sync) -> F<B> {
    common::unary::<B, FloatKind, FloatKind>(op, t, Linearity::None, f)
}

impl<B: Backend> ActivationOps<Self> for Hybrid<B> {
    fn relu(tensor: F<B>) -> F<B> {
        unary("relu", tensor, B::relu)
    }

    fn relu_backward(output: F<B>, grad: F<B>) -> F<B> {
        linear_in_grad("relu_backward", output, grad, B::relu_backward)
    }

    fn leaky_relu(tensor: F<B>, negative_slope: Scalar) -> F<B> {
        unary("leaky_relu", tensor, |p| B::leaky_relu(p, negative_slope))
    }

    fn gelu(tensor: F<B>) -> F<B> {
        unary("gelu", tensor, B::gelu)
    }

    fn gelu_backward(x: F<B>, grad: F<B>) -> F<B> {
        linear_in_grad("gelu_backward", x, grad, B::gelu_backward)
    }

    fn sigmoid(tensor: F<B>) -> F<B> {
        unary("sigmoid", tensor, B::sigmoid)
    }

    fn sigmoid_backward(output: F<B>, grad: F<B>) -> F<B> {
        linear_in_grad("sigmoid_backward", output, grad, B::sigmoid_backward)
    }

    fn hard_sigmoid(tensor: F<B>, alpha: Scalar, beta: Scalar) -> F<B> {
        unary("hard_sigmoid", tensor, |p| B::hard_sigmoid(p, alpha, beta))
    }

    fn log_sigmoid(tensor: F<B>) -> F<B> {
        unary("log_sigmoid", tensor, B::log_sigmoid)
    }

    fn log_sigmoid_backward(x: F<B>, grad: F<B>) -> F<B> {
        linear_in_grad("log_sigmoid_backward", x, grad, B::log_sigmoid_backward)
    }

    fn prelu(tensor: F<B>, alpha: F<B>) -> F<B> {
        common::binary::<B, FloatKind, FloatKind, FloatKind>("prelu", tensor, alpha, Linearity::None, |t, a| {
            B::prelu(t, a)
        })
    }

    /// The inner softmax wherever `dim` is whole on each rank; over class-split logits
    /// (`Shard(dim)`), Burn's own composition of Hybrid's ops (a max and a sum over the split
    /// dimension, each with its rule), as `log_softmax` keeps them.
    fn softmax(tensor: F<B>, dim: usize) -> F<B> {
        if tensor.placement == crate::spec::placement::Placement::Shard(dim) {
            let max = Self::float_max_dim(Self::float_detach(tensor.clone()), dim);
            let shifted = Self::float_sub(tensor, max);
            let exp = Self::float_exp(shifted);
            let sum = Self::float_sum_dim(exp.clone(), dim);
            return Self::float_div(exp, sum);
        }
        common::along_dim::<B, FloatKind, FloatKind>("softmax", tensor, dim, |p| B::softmax(p, dim))
    }
}
