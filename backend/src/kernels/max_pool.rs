//! Max pooling as owt formulates it, through the tensor ops of any backend (no kernel of its
//! own), for the wrapper to run where the backend's own pooling is slower: Flex 0.21's is a
//! scalar loop per output (AlexNetSmall's pool1 at batch 64: 15-19 ms; this one 6.3 ms). Only
//! the values: with the indices autodiff keeps (tracked by masks too, in integer tensors or
//! exact float ones) it took 17-30 ms, no better, so training's pooling stays the backend's
//! and this one serves the passes without autodiff (evaluation, inference).
//!
//! Each image plane's rows are taken `stride` at a time as one long row of a 2-D matrix
//! (`[planes * rows / stride, stride * width]`, the planes one after another), so every tap
//! `(i, j)` of the window is a 2-D strided view of the input: output row `u` reads matrix row
//! `u + i / stride` from column `(i % stride) * width + j` in steps of the column stride.
//! Taps are compared one after another in the backend's order (row-major, a later tap wins
//! only when strictly greater), so the values are exactly the backend's, NaN included. Rows
//! of the matrix that straddle two planes compute garbage, left out at the end. Padding,
//! dilation and ceil mode stay with the backend's op.

use burn::tensor::backend::Backend;
use burn::tensor::{Slice, Tensor};

use crate::conv_grad::Formulation;

/// The formulation of max pooling on backend `B`, by its type and by measurement: owt's on
/// Flex ([`super::computes_on_flex`]), the backend's elsewhere (CubeCL has pooling kernels)
/// and under [`crate::conv_grad::set_backend_only`].
pub fn formulation_for<B: Backend>() -> Formulation {
    if super::computes_on_flex::<B>() && !crate::conv_grad::backend_only() {
        Formulation::Owt
    } else {
        Formulation::Backend
    }
}

/// Whether owt's formulation takes a pooling with these settings: no padding, no dilation,
/// no ceil mode, and a window that fits the input.
pub fn applies(
    x_dims: [usize; 4],
    kernel: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
) -> bool {
    let [_, _, h, w] = x_dims;
    let fits = kernel[0] <= h && kernel[1] <= w && kernel[0] * kernel[1] > 0;
    padding == [0, 0] && dilation == [1, 1] && !ceil_mode && fits
}

/// Max pooling of `x` (`[n, c, h, w]`) over `kernel` windows every `stride`, with no padding.
pub fn max_pool2d<B: Backend>(x: Tensor<B, 4>, kernel: [usize; 2], stride: [usize; 2]) -> Tensor<B, 4> {
    let [n, c, h, w] = x.dims();
    let ([kh, kw], [sh, sw]) = (kernel, stride);
    let (ho, wo) = ((h - kh) / sh + 1, (w - kw) / sw + 1);
    // Rows per plane as matrix rows of `sh` input rows each; a partial last one is filled
    // with zero rows that only garbage outputs read.
    let rows = h.div_ceil(sh);
    let x = if rows * sh > h {
        let fill = Tensor::<B, 4>::zeros([n, c, rows * sh - h, w], (&x.device(), x.dtype()));
        Tensor::cat(vec![x, fill], 2)
    } else {
        x
    };
    let planes = n * c;
    let matrix: Tensor<B, 2> = x.reshape([planes * rows, sh * w]);
    // Output rows computed: every matrix row that the window's last tap row can still read.
    let computed = planes * rows - (kh - 1) / sh;
    // Tap (i, j) of every computed output, as a contiguous matrix (the reshape of a strided
    // view is one 2-D copy).
    let tap = |i: usize, j: usize| -> Tensor<B, 2> {
        let (down, col) = (i / sh, (i % sh) * w + j);
        let view = matrix.clone().slice([
            Slice::from(down..down + computed),
            Slice::new(col as isize, Some((col + (wo - 1) * sw + 1) as isize), sw as isize),
        ]);
        view.reshape([computed * wo]).reshape([computed, wo])
    };
    // Taps one at a time (each dropped once compared: the working set stays two matrices).
    let mut max = tap(0, 0);
    for t in 1..kh * kw {
        let value = tap(t / kw, t % kw);
        max = max.clone().mask_where(value.clone().greater(max), value);
    }
    // The outputs of each plane are its first `ho` computed rows (a window every `rows`).
    let windows: Tensor<B, 3> = max.unfold(0, ho, rows);
    windows.swap_dims(1, 2).reshape([n, c, ho, wo])
}
