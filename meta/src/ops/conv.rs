//! Convolution bodies for any spatial rank (1d, 2d, 3d; plain and transposed; forward and the
//! three backward passes), each logged once with the flops of [`crate::cost`].

use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::Shape;

use crate::cost::{conv_flops, conv_transpose_flops};
use crate::shapes;
use crate::tensor::MetaTensor;

type T = MetaTensor;

/// `x` `[N, Cin, ..]` convolved with `weight` `[Cout, Cin/groups, k..]` (+ `bias` `[Cout]`).
pub(crate) fn conv<const D: usize>(op: &'static str, x: T, weight: T, bias: Option<T>, o: &ConvOptions<D>) -> T {
    let shape = shapes::conv(op, &x.shape, &weight.shape, o);
    let out = x.like(shape, x.dtype);
    let flops = conv_flops(&weight.shape, &out.shape);
    match &bias {
        Some(b) => MetaTensor::log(op, &[&x, &weight, b], out, flops),
        None => MetaTensor::log(op, &[&x, &weight], out, flops),
    }
}

/// The input gradient of a convolution, shaped as Burn's default computes it (a transposed
/// convolution of the output gradient): the output gradient's batch, `weight`'s input
/// channels times `groups`, `x`'s spatial size; the forward's flops. The channels come from
/// the weight, not from `x`, as on Flex (a rank whose `x` holds a slice of the channels and
/// whose filters see all of them gets a gradient for all of them).
pub(crate) fn conv_x_backward(op: &'static str, x: T, weight: T, output_grad: T, groups: usize) -> T {
    let mut shape = x.shape.clone();
    shape[0] = output_grad.shape[0];
    shape[1] = weight.shape[1] * groups;
    let out = x.like(shape, x.dtype);
    let flops = conv_flops(&weight.shape, &output_grad.shape);
    MetaTensor::log(op, &[&weight, &output_grad], out, flops)
}

/// The weight gradient of a convolution: `weight`'s shape, the forward's flops.
pub(crate) fn conv_weight_backward(op: &'static str, x: T, weight: T, output_grad: T) -> T {
    let out = weight.like(weight.shape.clone(), weight.dtype);
    let flops = conv_flops(&weight.shape, &output_grad.shape);
    MetaTensor::log(op, &[&x, &output_grad], out, flops)
}

/// The bias gradient of a (transposed) convolution: `bias`'s shape, a sum over the output
/// gradient.
pub(crate) fn bias_backward(op: &'static str, bias: T, output_grad: T) -> T {
    let out = bias.like(bias.shape.clone(), bias.dtype);
    MetaTensor::reduction(op, &[&output_grad], out)
}

/// `x` `[N, Cin, ..]` transposed-convolved with `weight` `[Cin, Cout/groups, k..]`.
pub(crate) fn conv_transpose<const D: usize>(
    op: &'static str,
    x: T,
    weight: T,
    bias: Option<T>,
    o: &ConvTransposeOptions<D>,
) -> T {
    let shape = shapes::conv_transpose(op, &x.shape, &weight.shape, o);
    let out = x.like(shape, x.dtype);
    let flops = conv_transpose_flops(&x.shape, &weight.shape);
    match &bias {
        Some(b) => MetaTensor::log(op, &[&x, &weight, b], out, flops),
        None => MetaTensor::log(op, &[&x, &weight], out, flops),
    }
}

/// The input gradient of a transposed convolution, `[N, Cin, in-spatial]` recovered from the
/// output gradient as Burn's default does (the forward size formula solved for the input).
pub(crate) fn conv_transpose_x_backward<const D: usize>(
    op: &'static str,
    weight: T,
    output_grad: T,
    o: &ConvTransposeOptions<D>,
) -> T {
    let g = &output_grad.shape;
    assert_eq!(g.num_dims(), D + 2, "{op}: expected a rank {} output gradient", D + 2);
    let mut dims = vec![g[0], weight.shape[0]];
    for i in 0..D {
        let span = o.dilation[i] * (weight.shape[2 + i] - 1);
        dims.push((g[2 + i] + 2 * o.padding[i] - span - o.padding_out[i] - 1) / o.stride[i] + 1);
    }
    let out = output_grad.like(Shape::from(dims), output_grad.dtype);
    let flops = conv_transpose_flops(&out.shape, &weight.shape);
    MetaTensor::log(op, &[&weight, &output_grad], out, flops)
}

/// The weight gradient of a transposed convolution: `weight`'s shape, the forward's flops.
pub(crate) fn conv_transpose_weight_backward(op: &'static str, x: T, weight: T, output_grad: T) -> T {
    let out = weight.like(weight.shape.clone(), weight.dtype);
    let flops = conv_transpose_flops(&x.shape, &weight.shape);
    MetaTensor::log(op, &[&x, &output_grad], out, flops)
}
