//! The weight gradient of a stride-1 convolution as batched GEMMs of the output gradient
//! against the unfolded input, where the unfolding is a zero-copy view (Burn's `unfold`) of the
//! input in one of the flat layouts ([`super::flat`]), never materialised: per tap `(i, j)`, the
//! input shifted by the tap's offset is a strided matrix that the backend's matmul reads in
//! place. Two ways to lay the contraction out, chosen per shape by [`Method::for_shape`]:
//!
//! - [`Method::PerImage`]: each image's planes padded in place (`[n, c, rows, pitch]`); one GEMM
//!   per image, group and tap over that image's output positions, then a sum over the images.
//!   No transposition, but `n` partial gradients to add.
//! - [`Method::ChannelMajor`]: the input and the output gradient re-laid channel by channel, each
//!   channel's images one after another (`[c, n * rows * pitch]`); one GEMM per group and tap
//!   over every image's positions at once. Two transpositions (one pass each), no partial sums.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use super::flat::{self, Geometry};

/// How [`weight_grad`] lays out its GEMMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One GEMM per image, group and tap, summed over the images.
    PerImage,
    /// One GEMM per group and tap over all images, the data re-laid channel-major.
    ChannelMajor,
}

impl Method {
    /// The cheaper layout for `geo` by the data each one moves besides the GEMMs: the per-image
    /// one writes and adds `n` partial gradients; the channel-major one passes over the input
    /// and the output gradient about three times (padding and transposing). Measured on Flex
    /// (benches/conv_backward.rs, AlexNetSmall at batch 64): per-image at conv1 (1 input
    /// channel, 28x28), about even at conv2, channel-major at conv3-5 (6x6, 64-96 channels).
    pub fn for_shape(geo: &Geometry) -> Method {
        let partials = geo.n * geo.weight_len();
        let moved = 3 * geo.n * (geo.c * geo.h * geo.w + geo.o * geo.ho * geo.wo);
        if partials <= moved {
            Method::PerImage
        } else {
            Method::ChannelMajor
        }
    }

    /// The method's name, as `owt bench --profile` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            Method::PerImage => "per-image GEMM",
            Method::ChannelMajor => "channel-major GEMM",
        }
    }
}

/// The gradient of a stride-1 convolution's weight (`[o, c / groups, kh, kw]`) from its input
/// `x` (`[n, c, h, w]`) and output gradient `grad` (`[n, o, ho, wo]`), laid out by `method`.
pub fn weight_grad<B: Backend>(x: Tensor<B, 4>, grad: Tensor<B, 4>, geo: &Geometry, method: Method) -> Tensor<B, 4> {
    match method {
        Method::PerImage => per_image(x, grad, geo),
        Method::ChannelMajor => channel_major(x, grad, geo),
    }
}

fn per_image<B: Backend>(x: Tensor<B, 4>, grad: Tensor<B, 4>, geo: &Geometry) -> Tensor<B, 4> {
    let Geometry { n, h, o, groups: g, kh, kw, ph, pw, dh, dw, ho, wo, .. } = *geo;
    let (cg, og, pitch) = (geo.cg(), geo.og(), geo.pitch());
    // Output positions of one image on the wide grid, and one tap row's reach.
    let (t, span) = (ho * pitch, ho * pitch + (kw - 1) * dw);
    // Rows per plane: every tap's window inside the image's own plane.
    let rows = (kh - 1) * dh + ho + ((kw - 1) * dw).div_ceil(pitch);
    let planes = flat::padded(x, ph, rows - ph - h, pw, 0).reshape([n, g, cg, rows * pitch]);
    // [n, g, cg, kh, kw, t]: tap (i, j) of channel c is the plane from offset i dh pitch + j dw.
    let taps: Tensor<B, 5> = planes.unfold(3, span, dh * pitch);
    let taps: Tensor<B, 6> = taps.slice([0..n, 0..g, 0..cg, 0..kh]).unfold(4, t, dw);
    let grad: Tensor<B, 6> = flat::padded(grad, 0, 0, 0, pitch - wo).reshape([n, g, 1, 1, og, t]);
    // The wider of (channels, kernel columns) is the GEMMs' output width, the other a batch dim.
    let per_image = if cg >= kw {
        // [n, g, kh, kw, og, cg]
        let sum: Tensor<B, 5> = grad.matmul(taps.permute([0, 1, 3, 4, 5, 2])).sum_dim(0).reshape([g, kh, kw, og, cg]);
        sum.permute([0, 3, 4, 1, 2])
    } else {
        // [n, g, cg, kh, og, kw]
        let sum: Tensor<B, 5> = grad.matmul(taps.permute([0, 1, 2, 3, 5, 4])).sum_dim(0).reshape([g, cg, kh, og, kw]);
        sum.permute([0, 3, 1, 2, 4])
    };
    per_image.reshape([o, cg, kh, kw])
}

fn channel_major<B: Backend>(x: Tensor<B, 4>, grad: Tensor<B, 4>, geo: &Geometry) -> Tensor<B, 4> {
    let Geometry { n, c, h, o, groups: g, kh, kw, ph, pw, dh, dw, ho, wo, .. } = *geo;
    let (cg, og, pitch) = (geo.cg(), geo.og(), geo.pitch());
    let rows = h + ph;
    let image = rows * pitch;
    // Every image's output positions on the wide grid, up to the last image's last output row.
    let q = (n - 1) * image + ho * pitch;
    let reach = geo.reach();
    // Tail planes after the last channel for its last taps to read (zeros where they matter).
    let tails = (q + reach).saturating_sub(n * image).div_ceil(image);
    let x = flat::channel_major(flat::padded(x, ph, 0, pw, 0), tails);
    let grad = flat::channel_major(flat::padded(grad, 0, rows - ho, 0, pitch - wo), 0);
    // Views of x: group, channel, tap row, tap column, position ([g, cg, kh, kw, q]).
    let x: Tensor<B, 1> = x.reshape([(c * n + tails) * image]);
    let group_len = (cg - 1) * n * image + q + reach;
    let groups: Tensor<B, 2> = x.unfold(0, group_len, cg * n * image);
    let channels: Tensor<B, 3> = groups.slice([0..g]).unfold(1, q + reach, n * image);
    let tap_rows: Tensor<B, 4> = channels.slice([0..g, 0..cg]).unfold(2, q + (kw - 1) * dw, dh * pitch);
    let taps: Tensor<B, 5> = tap_rows.slice([0..g, 0..cg, 0..kh]).unfold(3, q, dw);
    let grad: Tensor<B, 5> = grad.reshape([g, 1, 1, og, n * image]).slice([0..g, 0..1, 0..1, 0..og, 0..q]);
    let sum = if cg >= kw {
        // [g, kh, kw, og, cg]
        grad.matmul(taps.permute([0, 2, 3, 4, 1])).permute([0, 3, 4, 1, 2])
    } else {
        // [g, cg, kh, og, kw]
        grad.matmul(taps.permute([0, 1, 2, 4, 3])).permute([0, 3, 1, 2, 4])
    };
    sum.reshape([o, cg, kh, kw])
}
