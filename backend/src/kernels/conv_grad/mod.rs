//! The three gradients of a 2-D convolution as owt formulates them, through the tensor ops of
//! any backend (no kernel of its own), for the wrapper to run where a backend's own backward ops
//! are slower (Flex 0.21 takes all three from burn-backend's generic formulations).
//!
//! - Weight gradient ([`weight`]): batched GEMMs of the output gradient against the input
//!   unfolded by zero-copy views of a flat padded layout ([`flat`]), one per tap; stride 1
//!   (every AlexNet layer but the big nets' conv1), the backend's own op otherwise. Any stride
//!   ([`unfolded`]): the input unfolded into columns a few images at a time, one GEMM per
//!   image, summed; what CUDA's strided weight gradients take without cuDNN
//!   ([`crate::cuda_libraries`]), slower than Flex's own on the CPU.
//! - Input gradient ([`input`]): a forward convolution of the output gradient (its rows and
//!   columns spread apart by the stride, where it is above 1) with the kernel flipped and its
//!   in- and out-channels swapped within each group: the backend's own forward kernel does it.
//! - Bias gradient ([`bias`]): a plain sum over positions (contiguous), then over the batch.
//!
//! Each agrees with the generic formulation to rounding (tests/hybrid/conv_grad.rs: every conv
//! layer of the three AlexNets in f32 and f64, and random convolutions over kernel, stride,
//! padding, dilation, groups and odd sizes).
//!
//! Which formulation runs where is [`Choice::for_backend`]'s; the wrapper's module ops ask it.

pub mod bias;
pub mod flat;
pub mod input;
pub mod unfolded;
pub mod weight;

use std::sync::atomic::{AtomicBool, Ordering};

use burn::tensor::backend::Backend;
use burn::tensor::ops::{ConvOptions, FloatTensor};
use burn::tensor::{Tensor, TensorPrimitive};

pub use bias::bias_grad;
pub use flat::Geometry;
pub use input::input_grad;
pub use unfolded::Unfolded;
pub use weight::{weight_grad, Method};

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

static BACKEND_ONLY: AtomicBool = AtomicBool::new(false);

/// Makes every backend's choice its own ops from now on (`true`) or owt's measured choice again
/// (`false`), for this process: convolution gradients and max pooling alike. For measurements
/// that separate the wrapper's own cost from the formulations' gains (benches/hybrid_overhead.rs);
/// training never sets it.
pub fn set_backend_only(on: bool) {
    BACKEND_ONLY.store(on, Ordering::SeqCst);
}

/// Whether [`set_backend_only`] holds every choice to the backend's own ops.
pub fn backend_only() -> bool {
    BACKEND_ONLY.load(Ordering::SeqCst)
}

impl Choice {
    /// The choice for backend `B`, by its type and by measurement (the module's doc): on Flex
    /// ([`super::computes_on_flex`]), owt's three; on every other backend (CubeCL on CUDA and
    /// wgpu has backward kernels of its own) the backend's; the backend's everywhere under
    /// [`set_backend_only`].
    pub fn for_backend<B: Backend>() -> Choice {
        use Formulation::*;
        if super::computes_on_flex::<B>() && !backend_only() {
            Choice { input: Owt, weight: Owt, bias: Owt }
        } else {
            Choice { input: Backend, weight: Backend, bias: Backend }
        }
    }

    /// The choice for the backend that holds `x`.
    pub fn of<B: Backend>(_x: &FloatTensor<B>) -> Choice {
        Choice::for_backend::<B>()
    }
}

/// The layout owt's weight gradient takes for a convolution of `x_dims` by `weight_dims`, or
/// `None` where it leaves the gradient to the backend's own op (a padding wider than the
/// kernel's reach; a stride above 1: [`unfolded`] computes those, but on Flex, the one backend
/// these formulations are chosen for, burn-backend's generic formulation measured faster:
/// AlexNetOwt's conv1 at batch 16, 76 ms against 122, benches/conv_backward.rs).
pub fn weight_method(x_dims: [usize; 4], weight_dims: [usize; 4], options: &ConvOptions<2>) -> Option<Method> {
    Geometry::of(x_dims, weight_dims, options).map(|geo| Method::for_shape(&geo))
}

fn tensor<B: Backend, const D: usize>(x: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(x))
}

fn primitive<B: Backend, const D: usize>(x: Tensor<B, D>) -> FloatTensor<B> {
    x.into_primitive().tensor()
}

/// owt's weight gradient on primitives, as `ModuleOps::conv2d_weight_backward` takes them: by
/// the layout [`weight_method`] picks, or the backend's own op where none applies.
pub fn conv2d_weight_backward<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    output_grad: FloatTensor<B>,
    options: ConvOptions<2>,
) -> FloatTensor<B> {
    let x_dims: [usize; 4] = tensor::<B, 4>(x.clone()).dims();
    let weight_dims: [usize; 4] = tensor::<B, 4>(weight.clone()).dims();
    match Geometry::of(x_dims, weight_dims, &options) {
        Some(geo) => primitive(weight_grad::<B>(tensor(x), tensor(output_grad), &geo, Method::for_shape(&geo))),
        None => B::conv2d_weight_backward(x, weight, output_grad, options),
    }
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
