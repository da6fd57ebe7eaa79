//! `ActivationOps`: every method, forward (the backward ops on given gradients).

use burn::tensor::{DType, Scalar, TensorData};

use super::{case, check, finite, fl, float_data, floats, rf, Case, Input, Match};

fn one() -> Vec<Input> {
    floats(1)
}

/// A tensor and a gradient of its shape.
fn with_grad() -> Vec<Input> {
    floats(2)
}

/// `[n, c, 4]` inputs and per-channel slopes `[1, c, 1]` (prelu's broadcast).
fn with_slopes() -> Vec<Input> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for n in [3usize, 4] {
            out.push(Input {
                what: format!("{dtype:?} [{n}, 3, 4] with slopes [1, 3, 1]"),
                data: vec![
                    float_data(finite(n * 12, 0), &[n, 3, 4], dtype),
                    float_data(vec![0.25, -0.5, 2.0], &[1, 3, 1], dtype),
                ],
            });
        }
    }
    out
}

fn dims(d: &TensorData) -> std::ops::Range<usize> {
    0..d.shape.len()
}

macro_rules! unary {
    ($($op:ident),* $(,)?) => { vec![$(case!($op, one, Match::Bits, |d, x| vec![rf::<B>(B::$op(fl::<B>(&x[0], d)))])),*] };
}

macro_rules! backward {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, with_grad, Match::Bits, |d, x| vec![rf::<B>(B::$op(fl::<B>(&x[0], d), fl::<B>(&x[1], d)))])),*]
    };
}

macro_rules! along {
    ($m:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, one, $m, |d, x| dims(&x[0]).map(|k| rf::<B>(B::$op(fl::<B>(&x[0], d), k))).collect())),*]
    };
}

fn cases() -> Vec<Case> {
    let mut all: Vec<Case> = Vec::new();
    all.extend(unary!(relu, gelu, sigmoid, log_sigmoid));
    all.extend(backward!(relu_backward, gelu_backward, sigmoid_backward, log_sigmoid_backward));
    all.extend(along!(Match::Rounding; softmax, log_softmax, softmin));
    all.extend(vec![
        case!(leaky_relu, one, Match::Bits, |d, x| vec![rf::<B>(B::leaky_relu(fl::<B>(&x[0], d), Scalar::Float(0.1)))]),
        case!(hard_sigmoid, one, Match::Bits, |d, x| vec![rf::<B>(B::hard_sigmoid(
            fl::<B>(&x[0], d),
            Scalar::Float(0.2),
            Scalar::Float(0.5)
        ))]),
        case!(prelu, with_slopes, Match::Bits, |d, x| vec![rf::<B>(B::prelu(fl::<B>(&x[0], d), fl::<B>(&x[1], d)))]),
    ]);
    all
}

/// The activation cases, for the coverage check.
pub(crate) fn all() -> Vec<Case> {
    cases()
}

#[test]
fn every_activation_computes_what_flex_does() {
    let counts = check(&cases());
    counts.report("activations");
}
