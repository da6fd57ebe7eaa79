//! `FloatTensorOps`: every method, forward.

use burn::tensor::ops::GridSampleOptions;
use burn::tensor::{BoolDType, DType, FloatDType, IndexingUpdateOp, IntDType, Scalar, Shape, Slice, TensorData};

use super::{bl, case, check, finite, fl, float_data, floats, floats_of, it, rb, rf, ri, shape_of, Case, Input, Match};

const BOOL: BoolDType = BoolDType::Native;
const I64: IntDType = IntDType::I64;

fn one() -> Vec<Input> {
    floats(1)
}

fn two() -> Vec<Input> {
    floats(2)
}

/// Finite values only (ops whose arguments must be, or whose NaN order is unspecified).
fn one_finite() -> Vec<Input> {
    floats_of(1, &super::SHAPES, false)
}

/// Pairs of shapes that broadcast against each other, and equal ones.
fn broadcast_pairs() -> Vec<Input> {
    let mut out = two();
    for (a, b) in [(&[5usize, 3][..], &[1usize, 3][..]), (&[4, 1], &[4, 6]), (&[2, 3, 5], &[3, 1])] {
        for dtype in [DType::F32, DType::F16] {
            let (na, nb) = (a.iter().product(), b.iter().product());
            out.push(Input {
                what: format!("{dtype:?} {a:?} and {b:?}"),
                data: vec![float_data(finite(na, 0), a, dtype), float_data(finite(nb, 1), b, dtype)],
            });
        }
    }
    out
}

/// A float tensor and a mask of its shape.
fn with_mask() -> Vec<Input> {
    one()
        .into_iter()
        .map(|mut i| {
            let shape = i.data[0].shape.clone();
            let n: usize = shape.iter().product();
            i.data.push(TensorData::new((0..n).map(|k| k % 3 == 1).collect::<Vec<_>>(), shape));
            i
        })
        .collect()
}

/// A float tensor, a mask and a value tensor of its shape.
fn with_mask_and_value() -> Vec<Input> {
    with_mask()
        .into_iter()
        .map(|mut i| {
            let d = &i.data[0];
            let n: usize = d.shape.iter().product();
            i.data.push(float_data(finite(n, 5), &d.shape.clone(), d.dtype));
            i
        })
        .collect()
}

/// A float tensor and int exponents of its shape.
fn with_int_exponents() -> Vec<Input> {
    one()
        .into_iter()
        .map(|mut i| {
            let shape = i.data[0].shape.clone();
            let n: usize = shape.iter().product();
            i.data.push(TensorData::new((0..n).map(|k| (k % 5) as i64 - 2).collect::<Vec<_>>(), shape));
            i
        })
        .collect()
}

/// 2-D float tensors and index tensors into their dimension `dim` (in range, with repeats).
fn with_indices_along(dim: usize, index_shape: fn(&[usize]) -> Vec<usize>) -> Vec<Input> {
    floats_of(1, &[&[5, 3], &[4, 6], &[1, 7]], true)
        .into_iter()
        .map(|mut i| {
            let shape = i.data[0].shape.clone();
            let len = shape[dim] as i64;
            let ishape = index_shape(&shape);
            let n: usize = ishape.iter().product();
            i.data.push(TensorData::new((0..n as i64).map(|k| (k * 7 + 1) % len).collect::<Vec<_>>(), ishape));
            i.what = format!("{} with indices along {dim}", i.what);
            i
        })
        .collect()
}

/// Two tensors whose matrix product is defined: `[.., m, k] x [.., k, n]`.
fn matmul_pairs() -> Vec<Input> {
    let mut out = Vec::new();
    for (a, b) in
        [(&[5usize, 3][..], &[3usize, 4][..]), (&[4, 6], &[6, 2]), (&[2, 3, 5], &[2, 5, 4]), (&[0, 3], &[3, 2])]
    {
        for dtype in [DType::F32, DType::F16] {
            let (na, nb) = (a.iter().product(), b.iter().product());
            out.push(Input {
                what: format!("{dtype:?} {a:?} x {b:?}"),
                data: vec![float_data(finite(na, 0), a, dtype), float_data(finite(nb, 2), b, dtype)],
            });
        }
    }
    out
}

/// 3-vectors along the last dimension (cross products).
fn cross_pairs() -> Vec<Input> {
    floats_of(2, &[&[5, 3], &[2, 4, 3]], true)
}

/// Every dimension of the input's rank, as a case body's loop runs them.
fn dims(d: &TensorData) -> std::ops::Range<usize> {
    0..d.shape.len()
}

/// The whole tensor as a list of slices, with dimension `dim` cut to `range` (step 1).
fn cut(shape: &[usize], dim: usize, start: usize, end: usize) -> Vec<Slice> {
    (0..shape.len())
        .map(|k| match k == dim {
            true => Slice::new(start as isize, Some(end as isize), 1),
            false => Slice::new(0, None, 1),
        })
        .collect()
}

macro_rules! unary {
    ($inputs:expr, $m:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, $inputs, $m, |d, x| vec![rf::<B>(B::$op(fl::<B>(&x[0], d)))])),*]
    };
}

macro_rules! with_scalar {
    ($s:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, one, Match::Bits, |d, x| vec![rf::<B>(B::$op(fl::<B>(&x[0], d), $s))])),*]
    };
}

macro_rules! binary {
    ($m:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, broadcast_pairs, $m, |d, x| vec![rf::<B>(B::$op(fl::<B>(&x[0], d), fl::<B>(&x[1], d)))])),*]
    };
}

macro_rules! compare_ops {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, broadcast_pairs, Match::Bits, |d, x| vec![rb::<B>(B::$op(fl::<B>(&x[0], d), fl::<B>(&x[1], d), BOOL))])),*]
    };
}

macro_rules! compare_elem {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, one, Match::Bits, |d, x| vec![rb::<B>(B::$op(fl::<B>(&x[0], d), Scalar::Float(1.0), BOOL))])),*]
    };
}

/// An op along each dimension of the input in turn.
macro_rules! along {
    ($inputs:expr, $m:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, $inputs, $m, |d, x| dims(&x[0]).map(|k| rf::<B>(B::$op(fl::<B>(&x[0], d), k))).collect())),*]
    };
}

/// An op over all elements.
macro_rules! whole {
    ($m:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, one, $m, |d, x| vec![rf::<B>(B::$op(fl::<B>(&x[0], d)))])),*]
    };
}

fn cases() -> Vec<Case> {
    let mut all: Vec<Case> = Vec::new();
    all.extend(unary!(one, Match::Bits;
        float_neg, float_recip, float_exp, float_log, float_log1p, float_sqrt, float_abs, float_cos, float_sin,
        float_tan, float_cosh, float_sinh, float_tanh, float_acos, float_acosh, float_asin, float_asinh, float_atan,
        float_atanh, float_round, float_floor, float_ceil, float_trunc, float_erf, float_sign, float_transpose,
        float_detach,
    ));
    all.extend(with_scalar!(Scalar::Float(0.75);
        float_add_scalar, float_sub_scalar, float_mul_scalar, float_div_scalar, float_remainder_scalar,
        float_powf_scalar, float_powf_scalar_impl, float_clamp_min, float_clamp_max,
    ));
    all.extend(with_scalar!(Scalar::Int(3); float_powi_scalar, float_powi_scalar_impl));
    all.extend(binary!(Match::Bits;
        float_add, float_sub, float_mul, float_div, float_remainder, float_powf, float_atan2,
    ));
    all.extend(compare_ops!(
        float_equal,
        float_not_equal,
        float_greater,
        float_greater_equal,
        float_lower,
        float_lower_equal,
    ));
    all.extend(compare_elem!(
        float_equal_elem,
        float_not_equal_elem,
        float_greater_elem,
        float_greater_equal_elem,
        float_lower_elem,
        float_lower_equal_elem,
    ));
    all.extend(whole!(Match::Rounding; float_sum, float_mean));
    all.extend(whole!(Match::Bits; float_prod, float_max, float_min, float_max_abs));
    all.extend(along!(one, Match::Rounding; float_sum_dim, float_mean_dim));
    all.extend(along!(one, Match::Bits;
        float_prod_dim, float_max_dim, float_min_dim, float_max_abs_dim, float_cumsum, float_cumprod, float_cummin,
        float_cummax,
    ));
    all.extend(vec![
        case!(float_clamp, one, Match::Bits, |d, x| vec![rf::<B>(B::float_clamp(
            fl::<B>(&x[0], d),
            Scalar::Float(-1.0),
            Scalar::Float(2.0)
        ))]),
        case!(float_powi, with_int_exponents, Match::Bits, |d, x| vec![rf::<B>(B::float_powi(
            fl::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(float_mask_where, with_mask_and_value, Match::Bits, |d, x| vec![rf::<B>(B::float_mask_where(
            fl::<B>(&x[0], d),
            bl::<B>(&x[1], d),
            fl::<B>(&x[2], d)
        ))]),
        case!(float_mask_fill, with_mask, Match::Bits, |d, x| vec![rf::<B>(B::float_mask_fill(
            fl::<B>(&x[0], d),
            bl::<B>(&x[1], d),
            Scalar::Float(-4.5)
        ))]),
        case!(float_matmul, matmul_pairs, Match::Rounding, |d, x| vec![rf::<B>(B::float_matmul(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d)
        ))]),
        case!(float_cross, cross_pairs, Match::Bits, |d, x| {
            let last = x[0].shape.len() - 1;
            vec![rf::<B>(B::float_cross(fl::<B>(&x[0], d), fl::<B>(&x[1], d), last))]
        }),
        case!(float_into_int, one_finite, Match::Bits, |d, x| vec![ri::<B>(B::float_into_int(fl::<B>(&x[0], d), I64))]),
        case!(float_cast, one, Match::Bits, |d, x| vec![
            rf::<B>(B::float_cast(fl::<B>(&x[0], d), FloatDType::F16)),
            rf::<B>(B::float_cast(fl::<B>(&x[0], d), FloatDType::F32))
        ]),
        case!(float_to_device, one, Match::Bits, |d, x| vec![rf::<B>(B::float_to_device(fl::<B>(&x[0], d), d))]),
        case!(float_zeros, one, Match::Bits, |d, x| vec![rf::<B>(B::float_zeros(shape_of(&x[0]), d, dtype(&x[0])))]),
        case!(float_ones, one, Match::Bits, |d, x| vec![rf::<B>(B::float_ones(shape_of(&x[0]), d, dtype(&x[0])))]),
        case!(float_full, one, Match::Bits, |d, x| vec![rf::<B>(B::float_full(
            shape_of(&x[0]),
            Scalar::Float(2.5),
            d,
            dtype(&x[0])
        ))]),
        case!(float_empty, one, Match::Shape, |d, x| vec![rf::<B>(B::float_empty(shape_of(&x[0]), d, dtype(&x[0])))]),
        case!(float_swap_dims, one, Match::Bits, |d, x| {
            let n = x[0].shape.len();
            vec![rf::<B>(B::float_swap_dims(fl::<B>(&x[0], d), 0, n - 1))]
        }),
        case!(float_permute, one, Match::Bits, |d, x| {
            let axes: Vec<usize> = (0..x[0].shape.len()).rev().collect();
            vec![rf::<B>(B::float_permute(fl::<B>(&x[0], d), &axes))]
        }),
        case!(float_flip, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rf::<B>(B::float_flip(fl::<B>(&x[0], d), &[k])))
            .collect()),
        case!(float_reshape, one, Match::Bits, |d, x| {
            let n: usize = x[0].shape.iter().product();
            vec![
                rf::<B>(B::float_reshape(fl::<B>(&x[0], d), Shape::new([n]))),
                rf::<B>(B::float_reshape(fl::<B>(&x[0], d), Shape::new([x[0].shape[0], n / x[0].shape[0].max(1)]))),
            ]
        }),
        case!(float_expand, one, Match::Bits, |d, x| {
            let mut shape = vec![2];
            shape.extend(x[0].shape.iter());
            vec![rf::<B>(B::float_expand(fl::<B>(&x[0], d), Shape::from(shape)))]
        }),
        case!(float_repeat_dim, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rf::<B>(B::float_repeat_dim(fl::<B>(&x[0], d), k, 3)))
            .collect()),
        case!(float_slice, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .flat_map(|k| {
                let len = x[0].shape[k];
                [(0, len / 2), (1, len), (len - 1, len)]
                    .map(|(a, b)| rf::<B>(B::float_slice(fl::<B>(&x[0], d), &cut(&x[0].shape, k, a, b))))
            })
            .collect()),
        case!(float_slice_assign, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .flat_map(|k| {
                let len = x[0].shape[k];
                [(0, len / 2), (1, len), (len - 1, len), (0, len)].map(|(a, b)| {
                    let mut vshape = x[0].shape.clone();
                    vshape[k] = b - a;
                    let n: usize = vshape.iter().product();
                    let value = float_data(finite(n, 4), &vshape, x[0].dtype);
                    rf::<B>(B::float_slice_assign(fl::<B>(&x[0], d), &cut(&x[0].shape, k, a, b), fl::<B>(&value, d)))
                })
            })
            .collect()),
        case!(float_cat, two, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rf::<B>(B::float_cat(vec![fl::<B>(&x[0], d), fl::<B>(&x[1], d)], k)))
            .collect()),
        case!(float_unfold, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| rf::<B>(B::float_unfold(fl::<B>(&x[0], d), k, 2, 1)))
            .collect()),
        case!(float_gather, gather_inputs, Match::Bits, |d, x| vec![rf::<B>(B::float_gather(
            1,
            fl::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(float_scatter_add, scatter_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::float_scatter_add(
            1,
            fl::<B>(&x[0], d),
            it::<B>(&x[1], d),
            fl::<B>(&x[2], d)
        ))]),
        case!(float_select, select_inputs, Match::Bits, |d, x| (0..2)
            .map(|k| rf::<B>(B::float_select(fl::<B>(&x[0], d), k, it::<B>(&select_indices(&x[0], k), d))))
            .collect()),
        case!(float_select_add, select_inputs, Match::Rounding, |d, x| (0..2)
            .map(|k| {
                let idx = select_indices(&x[0], k);
                let mut vshape = x[0].shape.clone();
                vshape[k] = idx.shape[0];
                let value = float_data(finite(vshape.iter().product(), 3), &vshape, x[0].dtype);
                rf::<B>(B::float_select_add(fl::<B>(&x[0], d), k, it::<B>(&idx, d), fl::<B>(&value, d)))
            })
            .collect()),
        case!(float_gather_nd, nd_inputs, Match::Bits, |d, x| vec![rf::<B>(B::float_gather_nd(
            fl::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(float_scatter_nd, nd_inputs, Match::Bits, |d, x| {
            let k = x[1].shape[0];
            let value = float_data(finite(k * x[0].shape[1], 6), &[k, x[0].shape[1]], x[0].dtype);
            vec![rf::<B>(B::float_scatter_nd(
                fl::<B>(&x[0], d),
                it::<B>(&x[1], d),
                fl::<B>(&value, d),
                IndexingUpdateOp::Assign,
            ))]
        }),
        case!(float_argmax, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| ri::<B>(B::float_argmax(fl::<B>(&x[0], d), k, I64)))
            .collect()),
        case!(float_argmin, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| ri::<B>(B::float_argmin(fl::<B>(&x[0], d), k, I64)))
            .collect()),
        case!(float_argtopk, one_finite, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| ri::<B>(B::float_argtopk(fl::<B>(&x[0], d), k, 2, I64)))
            .collect()),
        case!(float_topk, one_finite, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| rf::<B>(B::float_topk(fl::<B>(&x[0], d), k, 2)))
            .collect()),
        case!(float_max_dim_with_indices, one, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| {
                let (v, i) = B::float_max_dim_with_indices(fl::<B>(&x[0], d), k, I64);
                [rf::<B>(v), ri::<B>(i)]
            })
            .collect()),
        case!(float_min_dim_with_indices, one, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| {
                let (v, i) = B::float_min_dim_with_indices(fl::<B>(&x[0], d), k, I64);
                [rf::<B>(v), ri::<B>(i)]
            })
            .collect()),
        case!(float_any, one, Match::Bits, |d, x| vec![rb::<B>(B::float_any(fl::<B>(&x[0], d), BOOL))]),
        case!(float_all, one, Match::Bits, |d, x| vec![rb::<B>(B::float_all(fl::<B>(&x[0], d), BOOL))]),
        case!(float_any_dim, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rb::<B>(B::float_any_dim(fl::<B>(&x[0], d), k, BOOL)))
            .collect()),
        case!(float_all_dim, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rb::<B>(B::float_all_dim(fl::<B>(&x[0], d), k, BOOL)))
            .collect()),
        case!(float_is_nan, one, Match::Bits, |d, x| vec![rb::<B>(B::float_is_nan(fl::<B>(&x[0], d), BOOL))]),
        case!(float_is_inf, one, Match::Bits, |d, x| vec![rb::<B>(B::float_is_inf(fl::<B>(&x[0], d), BOOL))]),
        case!(float_sort, one_finite, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| [false, true].map(|desc| rf::<B>(B::float_sort(fl::<B>(&x[0], d), k, desc))))
            .collect()),
        case!(float_argsort, one_finite, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| [false, true].map(|desc| ri::<B>(B::float_argsort(fl::<B>(&x[0], d), k, desc, I64))))
            .collect()),
        case!(float_sort_with_indices, one_finite, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| {
                let (v, i) = B::float_sort_with_indices(fl::<B>(&x[0], d), k, true, I64);
                [rf::<B>(v), ri::<B>(i)]
            })
            .collect()),
        case!(float_grid_sample_2d, grid_inputs, Match::Bits, |d, x| vec![rf::<B>(B::float_grid_sample_2d(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            GridSampleOptions::default()
        ))]),
    ]);
    all
}

fn dtype(d: &TensorData) -> FloatDType {
    match d.dtype {
        DType::F16 => FloatDType::F16,
        _ => FloatDType::F32,
    }
}

/// Indices for `gather` along dimension 1: the tensor's shape.
fn gather_inputs() -> Vec<Input> {
    with_indices_along(1, |s| s.to_vec())
}

/// For `scatter_add` along dimension 1: tensor, indices and values of one shape.
fn scatter_inputs() -> Vec<Input> {
    gather_inputs()
        .into_iter()
        .map(|mut i| {
            let d = &i.data[0];
            let value = float_data(finite(d.shape.iter().product(), 8), &d.shape.clone(), d.dtype);
            i.data.push(value);
            i
        })
        .collect()
}

/// 2-D float tensors for `select` along either dimension.
fn select_inputs() -> Vec<Input> {
    floats_of(1, &[&[5, 3], &[4, 6], &[1, 7]], true)
}

/// Three indices (with a repeat) into dimension `k` of `x`.
fn select_indices(x: &TensorData, k: usize) -> TensorData {
    let len = x.shape[k] as i64;
    TensorData::new(vec![len - 1, 0, len - 1], [3])
}

/// A 2-D tensor and `[k, 1]` row indices into it (distinct, so assignments do not collide).
fn nd_inputs() -> Vec<Input> {
    floats_of(1, &[&[5, 3], &[4, 6]], true)
        .into_iter()
        .map(|mut i| {
            let rows = i.data[0].shape[0] as i64;
            i.data.push(TensorData::new(vec![rows - 1, 0, 1], [3, 1]));
            i
        })
        .collect()
}

/// Images `[n, c, h, w]` and sampling grids `[n, h', w', 2]` in `[-1, 1]`.
fn grid_inputs() -> Vec<Input> {
    let mut out = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        for n in [1usize, 3] {
            let image = float_data(finite(n * 2 * 4 * 5, 0), &[n, 2, 4, 5], dtype);
            let grid: Vec<f32> = (0..n * 3 * 2 * 2).map(|i| ((i * 37 % 21) as f32 - 10.0) / 10.0).collect();
            out.push(Input {
                what: format!("{dtype:?} batch {n}"),
                data: vec![image, float_data(grid, &[n, 3, 2, 2], dtype)],
            });
        }
    }
    out
}

/// The float cases, for the coverage check.
pub(crate) fn all() -> Vec<Case> {
    cases()
}

#[test]
fn every_float_op_computes_what_flex_does() {
    let counts = check(&cases());
    counts.report("float ops");
}
