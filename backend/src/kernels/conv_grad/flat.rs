//! The flat, zero-padded layouts through which a stride-1 convolution becomes plain GEMMs over
//! strided views: each image row is stored after `pw` zeros (row pitch `w + pw`), each image's
//! rows after `ph` zero rows, so an output position `t` on the "wide" grid (every row `w + pw`
//! long) reads its tap `(i, j)` at `t + i * dh * pitch + j * dw`, one offset per tap. Zeros a row
//! or an image shares with its neighbour serve as the padding on both sides, and the positions
//! of the wide grid past the output's columns or rows are garbage that a zero output gradient
//! cancels.

use burn::tensor::backend::Backend;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Int, Tensor, TensorData};

/// The shape of a stride-1 convolution in the terms of the flat layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Images.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Input rows and columns.
    pub h: usize,
    /// Input columns.
    pub w: usize,
    /// Output channels.
    pub o: usize,
    /// Groups.
    pub groups: usize,
    /// Kernel rows.
    pub kh: usize,
    /// Kernel columns.
    pub kw: usize,
    /// Zero rows above and below the input.
    pub ph: usize,
    /// Zero columns left and right of the input.
    pub pw: usize,
    /// Row dilation.
    pub dh: usize,
    /// Column dilation.
    pub dw: usize,
    /// Output rows.
    pub ho: usize,
    /// Output columns.
    pub wo: usize,
}

impl Geometry {
    /// The geometry of a convolution of `x_dims` (`[n, c, h, w]`) by `weight_dims`
    /// (`[o, c / groups, kh, kw]`), or `None` where the flat layouts do not apply: a stride
    /// above 1, a padding wider than the dilated kernel's reach (the wide grid would not hold
    /// every output), or no output at all.
    pub fn of(x_dims: [usize; 4], weight_dims: [usize; 4], options: &ConvOptions<2>) -> Option<Geometry> {
        let [n, c, h, w] = x_dims;
        let [o, cg, kh, kw] = weight_dims;
        let ([ph, pw], [dh, dw]) = (options.padding, options.dilation);
        let groups = options.groups;
        if c != groups * cg || o % groups != 0 || options.stride != [1, 1] || ph > dh * (kh - 1) || pw > dw * (kw - 1) {
            return None;
        }
        let (reach_h, reach_w) = (dh * (kh - 1), dw * (kw - 1));
        if h + 2 * ph <= reach_h || w + 2 * pw <= reach_w || n == 0 {
            return None;
        }
        let (ho, wo) = (h + 2 * ph - reach_h, w + 2 * pw - reach_w);
        Some(Geometry { n, c, h, w, o, groups, kh, kw, ph, pw, dh, dw, ho, wo })
    }

    /// The row pitch of the flat layouts: `pw` zeros, then the row.
    pub fn pitch(&self) -> usize {
        self.w + self.pw
    }

    /// How far past an output position its last tap reads.
    pub fn reach(&self) -> usize {
        (self.kh - 1) * self.dh * self.pitch() + (self.kw - 1) * self.dw
    }

    /// Input channels per group.
    pub fn cg(&self) -> usize {
        self.c / self.groups
    }

    /// Output channels per group.
    pub fn og(&self) -> usize {
        self.o / self.groups
    }

    /// Elements of the weight (and of its gradient).
    pub fn weight_len(&self) -> usize {
        self.o * self.cg() * self.kh * self.kw
    }
}

/// `x` (`[n, c, h, w]`) with zero rows `top` and `bottom` and zero columns `left` and `right`,
/// in its own dtype: two concatenations (columns, then rows), each one pass over the data.
pub fn padded<B: Backend>(x: Tensor<B, 4>, top: usize, bottom: usize, left: usize, right: usize) -> Tensor<B, 4> {
    zeros_around(zeros_around(x, 3, left, right), 2, top, bottom)
}

/// `x` with `before` and `after` zero slices along `dim`, in its own dtype.
fn zeros_around<B: Backend>(x: Tensor<B, 4>, dim: usize, before: usize, after: usize) -> Tensor<B, 4> {
    if before == 0 && after == 0 {
        return x;
    }
    let zeros = |len: usize| {
        let mut shape = x.dims();
        shape[dim] = len;
        (len > 0).then(|| Tensor::<B, 4>::zeros(shape, (&x.device(), x.dtype())))
    };
    let (head, tail) = (zeros(before), zeros(after));
    Tensor::cat(head.into_iter().chain([x]).chain(tail).collect(), dim)
}

/// The planes of `x` (`[n, c, rows, cols]`) channel by channel, each channel's images one after
/// another, then `tails` copies of the first plane: `[c * n + tails, rows * cols]`, in one
/// pass (a selection of whole planes). A tail gives the views of the last channel room to read
/// past its end; the first plane's leading zero rows are what those reads need.
pub fn channel_major<B: Backend>(x: Tensor<B, 4>, tails: usize) -> Tensor<B, 2> {
    let [n, c, rows, cols] = x.dims();
    let order: Vec<i64> =
        (0..c).flat_map(|ci| (0..n).map(move |k| (k * c + ci) as i64)).chain((0..tails).map(|_| 0)).collect();
    let len = order.len();
    let order = Tensor::<B, 1, Int>::from_data(TensorData::new(order, [len]), &x.device());
    x.reshape([n * c, rows * cols]).select(0, order)
}
