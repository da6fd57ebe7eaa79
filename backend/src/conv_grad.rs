//! The three gradients of a 2-D convolution as owt formulates them, through the tensor ops of
//! any backend (no kernel of its own), for the wrapper to run where a backend's own backward ops
//! are slower (Flex 0.21 takes all three from burn-backend's generic formulations).
//!
//! - Weight gradient: one batched GEMM per group of the output gradient against the unfolded
//!   (im2col) input, the unfolding made of `kh x kw` strided slices of the padded input.
//! - Input gradient: a forward convolution of the output gradient (its rows and columns spread
//!   apart by the stride, where it is above 1) with the kernel flipped and its in- and
//!   out-channels swapped within each group: the backend's own forward kernel does it.
//! - Bias gradient: a plain sum over positions (contiguous), then over the batch.
//!
//! Each agrees with the generic formulation to rounding (tests/hybrid/conv_grad.rs: every conv
//! layer of the three AlexNets, f32 within 1.3e-6 and f64 within 3.1e-15 measured, and 200
//! random convolutions over kernel, stride, padding, dilation, groups and odd sizes).
//!
//! Which formulation runs where is [`Choice::for_backend`]'s; the wrapper's module ops ask it.
//!
//! Measured on Flex, AlexNetSmall at batch 64 (`benches/conv_backward.rs`, 2026-12-01): the bias
//! gradient takes 0.05-0.21 ms against the generic 1-12 ms; the input gradient 20.8 / 6.2 / 5.3 /
//! 3.5 ms at conv2-5 against 28.2 / 9.0 / 8.8 / 5.0 (conv1's, 16.9 against 2.9, is never asked
//! for: images take no gradient); the weight gradient is slower (37-174 ms against 8-25): Flex
//! copies a strided view at about 8 ns an element, and the im2col of conv2 is 8.6 M of them
//! (70-85 ms however it is made: slices stacked, or Flex's zero-copy `unfold` made contiguous).

use burn::tensor::backend::Backend;
use burn::tensor::ops::{ConvOptions, FloatTensor};
use burn::tensor::{Slice, Tensor, TensorPrimitive};

/// Where a convolution gradient comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formulation {
    /// The backend's own op.
    Backend,
    /// owt's, from this module.
    Owt,
}

/// The formulation of each of the three gradients on one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The input gradient's.
    pub input: Formulation,
    /// The weight gradient's.
    pub weight: Formulation,
    /// The bias gradient's.
    pub bias: Formulation,
}

impl Choice {
    /// The choice for the backend `Backend::name` calls `name`, by measurement (the module's
    /// doc): on Flex, owt's input and bias gradients and Flex's own weight gradient; on every
    /// other backend (CubeCL on CUDA and wgpu has backward kernels of its own) the backend's.
    pub fn for_backend(name: &str) -> Choice {
        use Formulation::*;
        if name == "flex" {
            Choice { input: Owt, weight: Backend, bias: Owt }
        } else {
            Choice { input: Backend, weight: Backend, bias: Backend }
        }
    }

    /// The choice for the backend that holds `x`.
    pub fn of<B: Backend>(x: &FloatTensor<B>) -> Choice {
        Choice::for_backend(&B::name(&B::float_device(x)))
    }
}

fn tensor<B: Backend, const D: usize>(x: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(x))
}

fn primitive<B: Backend, const D: usize>(x: Tensor<B, D>) -> FloatTensor<B> {
    x.into_primitive().tensor()
}

/// `x` (`[n, c, h, w]`) unfolded for a `kernel` convolution with `options` whose output is
/// `out` (`[ho, wo]`): `[n, c * kh * kw, ho * wo]`, rows in the order of a flattened weight
/// `[c, kh, kw]`.
pub fn unfold<B: Backend>(x: Tensor<B, 4>, kernel: [usize; 2], options: &ConvOptions<2>, out: [usize; 2]) -> Tensor<B, 3> {
    let [n, c, _, _] = x.dims();
    let ([kh, kw], [ho, wo]) = (kernel, out);
    let ([ph, pw], [sh, sw], [dh, dw]) = (options.padding, options.stride, options.dilation);
    let x = zero_padded(x, [ph, pw]);
    let mut parts = Vec::with_capacity(kh * kw);
    for ki in 0..kh {
        for kj in 0..kw {
            let (r, q) = (ki * dh, kj * dw);
            let rows = Slice::new(r as isize, Some((r + (ho - 1) * sh + 1) as isize), sh as isize);
            let cols = Slice::new(q as isize, Some((q + (wo - 1) * sw + 1) as isize), sw as isize);
            parts.push(x.clone().slice([Slice::from(0..n), Slice::from(0..c), rows, cols]));
        }
    }
    Tensor::<B, 4>::stack::<5>(parts, 2).reshape([n, c * kh * kw, ho * wo])
}

/// `x` with `padding` zeros around its last two dimensions, in its own dtype (Burn 0.21's
/// `pad` makes its border in the default float dtype, which fails on an f64 tensor).
fn zero_padded<B: Backend>(x: Tensor<B, 4>, padding: [usize; 2]) -> Tensor<B, 4> {
    let [ph, pw] = padding;
    if ph == 0 && pw == 0 {
        return x;
    }
    let [n, c, h, w] = x.dims();
    let padded = Tensor::<B, 4>::zeros([n, c, h + 2 * ph, w + 2 * pw], (&x.device(), x.dtype()));
    padded.slice_assign([0..n, 0..c, ph..ph + h, pw..pw + w], x)
}

/// The gradient of a convolution's weight (`weight_dims`, `[o, c / groups, kh, kw]`) from its
/// input `x` and output gradient `grad` (`[n, o, ho, wo]`).
pub fn weight_grad<B: Backend>(
    x: Tensor<B, 4>,
    weight_dims: [usize; 4],
    grad: Tensor<B, 4>,
    options: &ConvOptions<2>,
) -> Tensor<B, 4> {
    let [o, cg, kh, kw] = weight_dims;
    let [n, _, ho, wo] = grad.dims();
    let g = options.groups;
    let (og, l, rows) = (o / g, ho * wo, cg * kh * kw);
    // [n, g * rows, l] -> [g, rows, n * l]: per group, the columns of every image side by side.
    let cols = unfold(x, [kh, kw], options, [ho, wo]).reshape([n, g, rows, l]).permute([1, 2, 0, 3]).reshape([g, rows, n * l]);
    // [n, o, ho, wo] -> [g, og, n * l].
    let grad = grad.reshape([n, g, og, l]).permute([1, 2, 0, 3]).reshape([g, og, n * l]);
    grad.matmul(cols.swap_dims(1, 2)).reshape([o, cg, kh, kw])
}

/// The gradient of a convolution's input (`x_dims`, `[n, c, h, w]`) from its `weight` and
/// output gradient `grad`, as a forward convolution; `None` where that does not apply (a
/// padding wider than the dilated kernel's reach), for the caller to use another way.
pub fn input_grad<B: Backend>(
    x_dims: [usize; 4],
    weight: Tensor<B, 4>,
    grad: Tensor<B, 4>,
    options: &ConvOptions<2>,
) -> Option<Tensor<B, 4>> {
    let [_, _, h, w] = x_dims;
    let [o, cg, kh, kw] = weight.dims();
    // The input's channels as the weight says (as the generic op takes them).
    let c = options.groups * cg;
    let [n, _, ho, wo] = grad.dims();
    let g = options.groups;
    let ([ph, pw], [sh, sw], [dh, dw]) = (options.padding, options.stride, options.dilation);
    let (reach_h, reach_w) = (dh * (kh - 1), dw * (kw - 1));
    if ph > reach_h || pw > reach_w {
        return None;
    }
    // Rows and columns the forward pass never reached (its last window stopped short).
    let (rest_h, rest_w) = ((h + 2 * ph - reach_h - 1) % sh, (w + 2 * pw - reach_w - 1) % sw);
    let grad = if sh > 1 || sw > 1 || rest_h > 0 || rest_w > 0 {
        let (hs, ws) = ((ho - 1) * sh + 1 + rest_h, (wo - 1) * sw + 1 + rest_w);
        let spread = Tensor::<B, 4>::zeros([n, o, hs, ws], (&grad.device(), grad.dtype()));
        let rows = Slice::new(0, Some(((ho - 1) * sh + 1) as isize), sh as isize);
        let cols = Slice::new(0, Some(((wo - 1) * sw + 1) as isize), sw as isize);
        spread.slice_assign([Slice::from(0..n), Slice::from(0..o), rows, cols], grad)
    } else {
        grad
    };
    // [o, cg, kh, kw] -> [c, og, kh, kw], flipped: within each group, in and out swap.
    let og = o / g;
    let kernel = weight.reshape([g, og, cg, kh * kw]).swap_dims(1, 2).reshape([c, og, kh, kw]).flip([2, 3]);
    let opts = ConvOptions::new([1, 1], [reach_h - ph, reach_w - pw], [dh, dw], g);
    Some(burn::tensor::module::conv2d(grad, kernel, None, opts))
}

/// The gradient of a convolution's bias from its output gradient `grad` (`[n, o, ho, wo]`).
pub fn bias_grad<B: Backend>(grad: Tensor<B, 4>) -> Tensor<B, 1> {
    let [n, o, ho, wo] = grad.dims();
    grad.reshape([n, o, ho * wo]).sum_dim(2).sum_dim(0).reshape([o])
}

/// [`weight_grad`] on primitives, as `ModuleOps::conv2d_weight_backward` takes them.
pub fn conv2d_weight_backward<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    output_grad: FloatTensor<B>,
    options: ConvOptions<2>,
) -> FloatTensor<B> {
    let dims: [usize; 4] = tensor::<B, 4>(weight).dims();
    primitive(weight_grad::<B>(tensor::<B, 4>(x), dims, tensor::<B, 4>(output_grad), &options))
}

/// [`input_grad`] on primitives, as `ModuleOps::conv2d_x_backward` takes them; the backend's
/// own op where the formulation does not apply.
pub fn conv2d_x_backward<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    output_grad: FloatTensor<B>,
    options: ConvOptions<2>,
) -> FloatTensor<B> {
    let dims: [usize; 4] = tensor::<B, 4>(x.clone()).dims();
    match input_grad::<B>(dims, tensor::<B, 4>(weight.clone()), tensor::<B, 4>(output_grad.clone()), &options) {
        Some(grad) => primitive(grad),
        None => B::conv2d_x_backward(x, weight, output_grad, options),
    }
}

/// [`bias_grad`] on primitives, as `ModuleOps::conv2d_bias_backward` takes them.
pub fn conv2d_bias_backward<B: Backend>(output_grad: FloatTensor<B>) -> FloatTensor<B> {
    primitive(bias_grad(tensor::<B, 4>(output_grad)))
}
