//! Pooling and resizing bodies (2d), each logged once: pooling = output elements × kernel
//! volume, adaptive pooling = input elements (its windows tile the input), resizing = output
//! elements × the taps of the interpolation; backward passes cost the same from the gradient
//! side, except max pooling's, which scatters one value per output-gradient element.

use burn::tensor::ops::{InterpolateMode, InterpolateOptions};

use crate::ops::common::{self, INDEX_DTYPE};
use crate::shapes;
use crate::tensor::MetaTensor;

type T = MetaTensor;

/// A pooling window's volume.
fn volume(kernel: [usize; 2]) -> u64 {
    (kernel[0] * kernel[1]) as u64
}

/// Average or max pooling of `x` `[N, C, H, W]`.
pub(crate) fn pool2d(
    op: &'static str,
    x: T,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil: bool,
) -> T {
    let out = x.like(shapes::pool(op, &x.shape, kernel, stride, padding, dilation, ceil), x.dtype);
    let flops = out.numel() as u64 * volume(kernel);
    MetaTensor::log(op, &[&x], out, flops)
}

/// Max pooling that also returns the argmax positions (Flex's index dtype), one log entry
/// writing both.
pub(crate) fn max_pool2d_with_indices(
    op: &'static str,
    x: T,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil: bool,
) -> (T, T) {
    let shape = shapes::pool(op, &x.shape, kernel, stride, padding, dilation, ceil);
    let flops = shape.num_elements() as u64 * volume(kernel);
    common::with_indices(op, &x, shape, INDEX_DTYPE, flops)
}

/// The input gradient of average pooling: `x`'s shape, gradient elements × kernel volume.
pub(crate) fn avg_pool2d_backward(op: &'static str, x: T, grad: T, kernel: [usize; 2]) -> T {
    let out = x.like(x.shape.clone(), x.dtype);
    let flops = grad.numel() as u64 * volume(kernel);
    MetaTensor::log(op, &[&grad], out, flops)
}

/// The input gradient of max pooling: `x`'s shape, one scatter per gradient element.
pub(crate) fn max_pool2d_backward(op: &'static str, x: T, grad: T, indices: T) -> T {
    let out = x.like(x.shape.clone(), x.dtype);
    let flops = grad.numel() as u64;
    MetaTensor::log(op, &[&grad, &indices], out, flops)
}

/// Adaptive average pooling of `x` `[N, C, H, W]` to `[N, C, size]`.
pub(crate) fn adaptive_avg_pool2d(op: &'static str, x: T, size: [usize; 2]) -> T {
    let out = x.like(shapes::spatial(op, &x.shape, size), x.dtype);
    MetaTensor::reduction(op, &[&x], out)
}

/// The input gradient of adaptive average pooling: `x`'s shape, one op per input element.
pub(crate) fn adaptive_avg_pool2d_backward(op: &'static str, x: T, grad: T) -> T {
    let out = x.like(x.shape.clone(), x.dtype);
    let flops = x.numel() as u64;
    MetaTensor::log(op, &[&grad], out, flops)
}

/// Input values one output value of `mode` combines.
fn taps(mode: &InterpolateMode) -> u64 {
    match mode {
        InterpolateMode::Nearest => 1,
        InterpolateMode::Bilinear => 4,
        InterpolateMode::Bicubic => 16,
        InterpolateMode::Lanczos3 => 36,
    }
}

/// Resizing `x` `[N, C, H, W]` to `[N, C, size]`.
pub(crate) fn interpolate(op: &'static str, x: T, size: [usize; 2], options: &InterpolateOptions) -> T {
    let out = x.like(shapes::spatial(op, &x.shape, size), x.dtype);
    let flops = out.numel() as u64 * taps(&options.mode);
    MetaTensor::log(op, &[&x], out, flops)
}

/// The input gradient of resizing: `x`'s shape, gradient elements × taps.
pub(crate) fn interpolate_backward(op: &'static str, x: T, grad: T, options: &InterpolateOptions) -> T {
    let out = x.like(x.shape.clone(), x.dtype);
    let flops = grad.numel() as u64 * taps(&options.mode);
    MetaTensor::log(op, &[&grad], out, flops)
}
