//! The input gradient of a convolution as a forward convolution of the output gradient (spread
//! apart by the stride where it is above 1) with the kernel flipped and its in- and
//! out-channels swapped within each group: the backend's own forward kernel does the work.

use burn::tensor::backend::Backend;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Slice, Tensor};

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
