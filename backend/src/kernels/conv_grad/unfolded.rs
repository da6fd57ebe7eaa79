//! The weight gradient of a convolution with a stride above 1 (the big AlexNets' conv1: 11x11
//! windows 4 pixels apart) as an unfolded GEMM: for each tap `(i, j)` of the kernel, the input
//! pixels it reads at every output position are a strided slice of the padded input; the taps'
//! slices, side by side, are the input unfolded (`[n, groups, c / groups * kh * kw, ho * wo]`),
//! and the gradient is one batched GEMM of the output gradient against it, a partial gradient
//! per image, summed over the images. The batch is taken a few images at a time so the unfolded
//! input stays small; each image's GEMM has every output position to reduce over, so the work
//! splits over the images instead of over a long reduction (conv1 of AlexNetOwt reduces over
//! 387,200 positions at batch 128, which CubeCL 0.10's kernel runs on a few of a GPU's cores).

use burn::tensor::backend::Backend;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Slice, Tensor};

use super::flat;

/// The most elements the unfolded input of one chunk of images holds (64 MiB of f32).
pub const UNFOLDED_BUDGET: usize = 1 << 24;

/// The shape of a convolution as the unfolded GEMM takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unfolded {
    /// Images.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Output channels.
    pub o: usize,
    /// Groups.
    pub groups: usize,
    /// Kernel rows and columns.
    pub kernel: [usize; 2],
    /// Zero rows and columns on each side.
    pub padding: [usize; 2],
    /// Rows and columns between windows.
    pub stride: [usize; 2],
    /// Rows and columns between taps.
    pub dilation: [usize; 2],
    /// Output rows and columns.
    pub out: [usize; 2],
}

impl Unfolded {
    /// The convolution of `x_dims` (`[n, c, h, w]`) by `weight_dims` (`[o, c / groups, kh,
    /// kw]`), or `None` where it has no output (or no images) or its channels do not split into
    /// its groups.
    pub fn of(x_dims: [usize; 4], weight_dims: [usize; 4], options: &ConvOptions<2>) -> Option<Unfolded> {
        let [n, c, h, w] = x_dims;
        let [o, cg, kh, kw] = weight_dims;
        let g = options.groups;
        if n == 0 || g == 0 || c != cg * g || o % g != 0 || options.stride.contains(&0) || options.dilation.contains(&0)
        {
            return None;
        }
        let side = |input: usize, k: usize, i: usize| {
            let padded = input + 2 * options.padding[i];
            let reach = options.dilation[i] * (k - 1) + 1;
            (padded >= reach).then(|| (padded - reach) / options.stride[i] + 1)
        };
        let out = [side(h, kh, 0)?, side(w, kw, 1)?];
        Some(Unfolded {
            n,
            c,
            o,
            groups: g,
            kernel: [kh, kw],
            padding: options.padding,
            stride: options.stride,
            dilation: options.dilation,
            out,
        })
    }

    /// Elements of one image's unfolded input.
    pub fn unfolded_per_image(&self) -> usize {
        self.c * self.kernel[0] * self.kernel[1] * self.out[0] * self.out[1]
    }

    /// Images per GEMM: as many as keep the unfolded input within [`UNFOLDED_BUDGET`], at
    /// least one.
    pub fn images_per_chunk(&self) -> usize {
        (UNFOLDED_BUDGET / self.unfolded_per_image().max(1)).clamp(1, self.n)
    }
}

/// The gradient of the weight (`[o, c / groups, kh, kw]`) of the convolution `geo` from its
/// input `x` (`[n, c, h, w]`) and output gradient `grad` (`[n, o, ho, wo]`).
pub fn weight_grad<B: Backend>(x: Tensor<B, 4>, grad: Tensor<B, 4>, geo: &Unfolded) -> Tensor<B, 4> {
    let chunk = geo.images_per_chunk();
    let mut sum: Option<Tensor<B, 3>> = None;
    let mut first = 0;
    while first < geo.n {
        let last = (first + chunk).min(geo.n);
        let part = chunk_grad(x.clone().slice([first..last]), grad.clone().slice([first..last]), geo);
        sum = Some(match sum {
            Some(s) => s + part,
            None => part,
        });
        first = last;
    }
    let [kh, kw] = geo.kernel;
    sum.expect("at least one image").reshape([geo.o, geo.c / geo.groups, kh, kw])
}

/// The summed partial gradients of a chunk of images, `[groups, o / groups, c / groups * kh * kw]`.
fn chunk_grad<B: Backend>(x: Tensor<B, 4>, grad: Tensor<B, 4>, geo: &Unfolded) -> Tensor<B, 3> {
    let [m, c, _, _] = x.dims();
    let (g, [kh, kw], [ph, pw], [sh, sw], [dh, dw], [ho, wo]) =
        (geo.groups, geo.kernel, geo.padding, geo.stride, geo.dilation, geo.out);
    let (cg, og, positions) = (c / g, geo.o / g, ho * wo);
    let x = flat::padded(x, ph, ph, pw, pw);
    // Tap (i, j) reads rows i dh, i dh + sh, ... and columns j dw, j dw + sw, ...
    let taps: Vec<Tensor<B, 5>> = (0..kh)
        .flat_map(|i| (0..kw).map(move |j| (i, j)))
        .map(|(i, j)| {
            let rows = Slice::new((i * dh) as isize, Some((i * dh + (ho - 1) * sh + 1) as isize), sh as isize);
            let cols = Slice::new((j * dw) as isize, Some((j * dw + (wo - 1) * sw + 1) as isize), sw as isize);
            x.clone().slice([Slice::from(0..m), Slice::from(0..c), rows, cols]).reshape([m, g, cg, 1, positions])
        })
        .collect();
    // [m, g, cg, kh * kw, positions]: channel-major, then tap, as the weight's own layout.
    let unfolded: Tensor<B, 4> = Tensor::cat(taps, 3).reshape([m, g, cg * kh * kw, positions]);
    let grad: Tensor<B, 4> = grad.reshape([m, g, og, positions]);
    let per_image = grad.matmul(unfolded.swap_dims(2, 3));
    per_image.sum_dim(0).reshape([g, og, cg * kh * kw])
}
