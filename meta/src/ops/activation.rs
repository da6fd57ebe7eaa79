//! Activation ops of `Meta`: the ones a real backend runs as one elementwise kernel (and that
//! Burn's autodiff calls) are logged as one elementwise op instead of Burn's default
//! compare-and-mask compositions; softmax, log-softmax, softmin and PReLU keep the defaults
//! and log the tensor ops they are built from.

use burn::tensor::ops::ActivationOps;
use burn::tensor::Scalar;

use crate::backend::Meta;
use crate::ops::common;
use crate::ops::macros::{binary_ops, unary_ops};
use crate::tensor::MetaTensor;

type T = MetaTensor;

impl ActivationOps<Self> for Meta {
    unary_ops!(relu, gelu, sigmoid, log_sigmoid);

    binary_ops!(relu_backward, gelu_backward, sigmoid_backward, log_sigmoid_backward);

    fn leaky_relu(tensor: T, _negative_slope: Scalar) -> T {
        common::unary("leaky_relu", tensor)
    }

    fn hard_sigmoid(tensor: T, _alpha: Scalar, _beta: Scalar) -> T {
        common::unary("hard_sigmoid", tensor)
    }
}
