//! Output-shape rules, as Burn's Flex backend computes them (broadcasting, reductions,
//! slicing, convolution and pooling sizes, windows). Mismatched inputs panic with the op's
//! name, as a real backend would fail.

use burn::tensor::ops::conv::{calculate_conv_output_size, calculate_conv_transpose_output_size};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::{Shape, Slice};

/// The broadcast shape of `a` and `b` (same rank; each pair of sizes equal or one of them 1).
pub(crate) fn broadcast(op: &str, a: &Shape, b: &Shape) -> Shape {
    a.broadcast(b).unwrap_or_else(|e| panic!("{op}: shapes {a:?} and {b:?} do not broadcast: {e:?}"))
}

/// `shape` with dimension `dim` reduced to 1 (what Burn's `*_dim` reductions keep).
pub(crate) fn reduce_dim(op: &str, shape: &Shape, dim: usize) -> Shape {
    check_dim(op, shape, dim);
    let mut out = shape.clone();
    out[dim] = 1;
    out
}

/// `shape` with dimension `dim` set to `size`.
pub(crate) fn with_dim(op: &str, shape: &Shape, dim: usize, size: usize) -> Shape {
    check_dim(op, shape, dim);
    let mut out = shape.clone();
    out[dim] = size;
    out
}

/// Panics unless `dim` is a dimension of `shape`.
pub(crate) fn check_dim(op: &str, shape: &Shape, dim: usize) {
    assert!(dim < shape.num_dims(), "{op}: dim {dim} out of range for shape {shape:?}");
}

/// The shape of a full reduction (Flex returns a rank-1 tensor of one element).
pub(crate) fn scalar() -> Shape {
    Shape::new([1])
}

/// The shape `slices` (one per leading dimension, the rest whole) cut out of `shape`.
pub(crate) fn slice(op: &str, shape: &Shape, slices: &[Slice]) -> Shape {
    assert!(slices.len() <= shape.num_dims(), "{op}: {} slices for shape {shape:?}", slices.len());
    let mut out = shape.clone();
    for (d, s) in slices.iter().enumerate() {
        out[d] = s.output_size(shape[d]);
    }
    out
}

/// The shape of `shapes` concatenated along `dim`.
pub(crate) fn cat<'a>(op: &str, mut shapes: impl Iterator<Item = &'a Shape>, dim: usize) -> Shape {
    let first = shapes.next().unwrap_or_else(|| panic!("{op}: nothing to concatenate"));
    check_dim(op, first, dim);
    let mut out = first.clone();
    for s in shapes {
        assert_eq!(s.num_dims(), out.num_dims(), "{op}: ranks differ ({first:?} and {s:?})");
        for d in 0..s.num_dims() {
            if d == dim {
                out[d] += s[d];
            } else {
                assert_eq!(s[d], out[d], "{op}: shapes {first:?} and {s:?} differ outside dim {dim}");
            }
        }
    }
    out
}

/// `[.., m, n]` from `lhs` `[.., m, k]` and `rhs` `[.., k, n]`, batch dimensions broadcast.
pub(crate) fn matmul(op: &str, lhs: &Shape, rhs: &Shape) -> Shape {
    let r = lhs.num_dims();
    assert!(r >= 2 && rhs.num_dims() == r, "{op}: shapes {lhs:?} and {rhs:?} are not matrices of one rank");
    assert_eq!(lhs[r - 1], rhs[r - 2], "{op}: inner sizes differ ({lhs:?} x {rhs:?})");
    let batch_l = Shape::from(lhs[..r - 2].to_vec());
    let batch_r = Shape::from(rhs[..r - 2].to_vec());
    let mut out = if r > 2 { broadcast(op, &batch_l, &batch_r) } else { Shape::from(Vec::<usize>::new()) };
    out.push(lhs[r - 2]);
    out.push(rhs[r - 1]);
    out
}

/// `shape` permuted by `axes`.
pub(crate) fn permute(op: &str, shape: &Shape, axes: &[usize]) -> Shape {
    shape.clone().permuted(axes).unwrap_or_else(|e| panic!("{op}: cannot permute {shape:?} by {axes:?}: {e:?}"))
}

/// `shape` with `dim1` and `dim2` swapped.
pub(crate) fn swap_dims(op: &str, shape: &Shape, dim1: usize, dim2: usize) -> Shape {
    shape.clone().swapped(dim1, dim2).unwrap_or_else(|e| panic!("{op}: cannot swap {dim1}, {dim2} of {shape:?}: {e:?}"))
}

/// `target` after checking `shape` broadcasts to it.
pub(crate) fn expand(op: &str, shape: &Shape, target: Shape) -> Shape {
    shape.expand(target.clone()).unwrap_or_else(|e| panic!("{op}: cannot expand {shape:?} to {target:?}: {e:?}"))
}

/// `target` after checking it holds as many elements as `shape`.
pub(crate) fn reshape(op: &str, shape: &Shape, target: Shape) -> Shape {
    assert_eq!(
        shape.num_elements(),
        target.num_elements(),
        "{op}: cannot reshape {shape:?} ({} elements) to {target:?}",
        shape.num_elements()
    );
    target
}

/// Flex's `unfold`: dimension `dim` becomes the number of whole windows of `size` advanced by
/// `step`, and a last dimension of `size` is appended.
pub(crate) fn unfold(op: &str, shape: &Shape, dim: usize, size: usize, step: usize) -> Shape {
    check_dim(op, shape, dim);
    assert!(size > 0 && step > 0, "{op}: window size and step must be positive");
    assert!(shape[dim] >= size, "{op}: dimension {dim} of {shape:?} is smaller than the window {size}");
    let windows = (shape[dim] + step - size) / step;
    let mut out = with_dim(op, shape, dim, windows);
    out.push(size);
    out
}

/// `shape` with dimension `dim` repeated `times` times.
pub(crate) fn repeat_dim(op: &str, shape: &Shape, dim: usize, times: usize) -> Shape {
    check_dim(op, shape, dim);
    with_dim(op, shape, dim, shape[dim] * times)
}

/// Convolution output `[N, Cout, ..]` for `x` `[N, Cin, ..]` and weight `[Cout, Cin/groups, k..]`.
pub(crate) fn conv<const D: usize>(op: &str, x: &Shape, weight: &Shape, o: &ConvOptions<D>) -> Shape {
    assert!(x.num_dims() == D + 2 && weight.num_dims() == D + 2, "{op}: expected rank {} input and weight", D + 2);
    assert_eq!(
        x[1],
        weight[1] * o.groups,
        "{op}: input channels {} != weight's {} per group x {} groups",
        x[1],
        weight[1],
        o.groups
    );
    let mut out = x.clone();
    out[1] = weight[0];
    for i in 0..D {
        let padded = x[2 + i] + 2 * o.padding[i];
        let span = o.dilation[i] * (weight[2 + i] - 1) + 1;
        assert!(padded >= span, "{op}: kernel span {span} exceeds padded input {padded} in spatial dim {i}");
        out[2 + i] = calculate_conv_output_size(weight[2 + i], o.stride[i], o.padding[i], o.dilation[i], x[2 + i]);
    }
    out
}

/// Transposed-convolution output `[N, Cout/groups·groups, ..]` for `x` `[N, Cin, ..]` and
/// weight `[Cin, Cout/groups, k..]`.
pub(crate) fn conv_transpose<const D: usize>(
    op: &str,
    x: &Shape,
    weight: &Shape,
    o: &ConvTransposeOptions<D>,
) -> Shape {
    assert!(x.num_dims() == D + 2 && weight.num_dims() == D + 2, "{op}: expected rank {} input and weight", D + 2);
    assert_eq!(x[1], weight[0], "{op}: input channels {} != weight's {}", x[1], weight[0]);
    let mut out = x.clone();
    out[1] = weight[1] * o.groups;
    for i in 0..D {
        let k = weight[2 + i];
        out[2 + i] = calculate_conv_transpose_output_size(
            k,
            o.stride[i],
            o.padding[i],
            o.padding_out[i],
            o.dilation[i],
            x[2 + i],
        );
    }
    out
}

/// Flex's pooling output size along one dimension (floor, or ceil with `ceil_mode`; a window
/// wider than the padded input gives 0, or 1 with `ceil_mode`).
pub(crate) fn pool_size(
    input: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    ceil: bool,
) -> usize {
    assert!(kernel > 0 && stride > 0, "pool: kernel size and stride must be > 0");
    let span = dilation * (kernel - 1) + 1;
    let padded = input + 2 * padding;
    if padded < span {
        return usize::from(ceil);
    }
    let numerator = padded - span;
    if ceil {
        numerator.div_ceil(stride) + 1
    } else {
        numerator / stride + 1
    }
}

/// Pooling output `[N, C, ..]` of `x` `[N, C, ..]`.
pub(crate) fn pool<const D: usize>(
    op: &str,
    x: &Shape,
    kernel: [usize; D],
    stride: [usize; D],
    padding: [usize; D],
    dilation: [usize; D],
    ceil: bool,
) -> Shape {
    assert_eq!(x.num_dims(), D + 2, "{op}: expected a rank {} input, got {x:?}", D + 2);
    let mut out = x.clone();
    for i in 0..D {
        out[2 + i] = pool_size(x[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil);
    }
    out
}

/// `x` `[N, C, ..]` with its spatial dimensions replaced by `size`.
pub(crate) fn spatial<const D: usize>(op: &str, x: &Shape, size: [usize; D]) -> Shape {
    assert_eq!(x.num_dims(), D + 2, "{op}: expected a rank {} input, got {x:?}", D + 2);
    let mut out = x.clone();
    for i in 0..D {
        out[2 + i] = size[i];
    }
    out
}
