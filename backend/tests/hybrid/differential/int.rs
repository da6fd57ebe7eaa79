//! `IntTensorOps`: every method, forward.

use burn::tensor::{BoolDType, FloatDType, IndexingUpdateOp, IntDType, Scalar, Shape, Slice, TensorData};

use super::{bl, case, check, ints, it, rb, rf, ri, shape_of, Case, Input, Match};

const BOOL: BoolDType = BoolDType::Native;

fn one() -> Vec<Input> {
    ints(1)
}

fn two() -> Vec<Input> {
    ints(2)
}

/// Pairs of shapes that broadcast against each other, and equal ones.
fn broadcast_pairs() -> Vec<Input> {
    let mut out = two();
    for (a, b) in [(&[5usize, 3][..], &[1usize, 3][..]), (&[4, 1], &[4, 6])] {
        let (na, nb): (usize, usize) = (a.iter().product(), b.iter().product());
        out.push(Input {
            what: format!("I64 {a:?} and {b:?}"),
            data: vec![
                TensorData::new((0..na as i64).map(|i| i % 9 - 4).collect::<Vec<_>>(), a.to_vec()),
                TensorData::new((0..nb as i64).map(|i| i % 5 + 1).collect::<Vec<_>>(), b.to_vec()),
            ],
        });
    }
    out
}

/// Divisors without zeros (a zero divisor is refused alike; one such set is in `two`).
fn divisions() -> Vec<Input> {
    broadcast_pairs()
        .into_iter()
        .map(|mut i| {
            let d = &i.data[1];
            let v: Vec<i64> = d.to_vec::<i64>().unwrap().into_iter().map(|x| if x == 0 { 3 } else { x }).collect();
            i.data[1] = TensorData::new(v, d.shape.clone());
            i
        })
        .collect()
}

fn dims(d: &TensorData) -> std::ops::Range<usize> {
    0..d.shape.len()
}

fn cut(shape: &[usize], dim: usize, start: usize, end: usize) -> Vec<Slice> {
    (0..shape.len())
        .map(|k| match k == dim {
            true => Slice::new(start as isize, Some(end as isize), 1),
            false => Slice::new(0, None, 1),
        })
        .collect()
}

fn with_mask() -> Vec<Input> {
    one()
        .into_iter()
        .map(|mut i| {
            let shape = i.data[0].shape.clone();
            let n: usize = shape.iter().product();
            i.data.push(TensorData::new((0..n).map(|k| k % 3 == 1).collect::<Vec<_>>(), shape.clone()));
            i.data.push(TensorData::new((0..n as i64).map(|k| 40 + k).collect::<Vec<_>>(), shape));
            i
        })
        .collect()
}

macro_rules! unary {
    ($($op:ident),* $(,)?) => { vec![$(case!($op, one, Match::Bits, |d, x| vec![ri::<B>(B::$op(it::<B>(&x[0], d)))])),*] };
}

macro_rules! with_scalar {
    ($s:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, one, Match::Bits, |d, x| vec![ri::<B>(B::$op(it::<B>(&x[0], d), $s))])),*]
    };
}

macro_rules! binary {
    ($inputs:expr; $($op:ident),* $(,)?) => {
        vec![$(case!($op, $inputs, Match::Bits, |d, x| vec![ri::<B>(B::$op(it::<B>(&x[0], d), it::<B>(&x[1], d)))])),*]
    };
}

macro_rules! compare_ops {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, broadcast_pairs, Match::Bits, |d, x| vec![rb::<B>(B::$op(it::<B>(&x[0], d), it::<B>(&x[1], d), BOOL))])),*]
    };
}

macro_rules! compare_elem {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, one, Match::Bits, |d, x| vec![rb::<B>(B::$op(it::<B>(&x[0], d), Scalar::Int(1), BOOL))])),*]
    };
}

macro_rules! along {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, one, Match::Bits, |d, x| dims(&x[0]).map(|k| ri::<B>(B::$op(it::<B>(&x[0], d), k))).collect())),*]
    };
}

macro_rules! whole {
    ($($op:ident),* $(,)?) => { vec![$(case!($op, one, Match::Bits, |d, x| vec![ri::<B>(B::$op(it::<B>(&x[0], d)))])),*] };
}

fn cases() -> Vec<Case> {
    let mut all: Vec<Case> = Vec::new();
    all.extend(unary!(int_neg, int_abs, int_sign, int_transpose, bitwise_not));
    all.extend(with_scalar!(Scalar::Int(3);
        int_add_scalar, int_sub_scalar, int_mul_scalar, int_div_scalar, int_remainder_scalar, int_powi_scalar,
        int_powi_scalar_impl, int_clamp_min, int_clamp_max, bitwise_and_scalar, bitwise_or_scalar, bitwise_xor_scalar,
        bitwise_left_shift_scalar, bitwise_right_shift_scalar,
    ));
    all.extend(binary!(broadcast_pairs;
        int_add, int_sub, int_mul, bitwise_and, bitwise_or, bitwise_xor, bitwise_left_shift, bitwise_right_shift,
    ));
    all.extend(binary!(divisions; int_div, int_remainder, int_powi));
    all.extend(compare_ops!(int_equal, int_not_equal, int_greater, int_greater_equal, int_lower, int_lower_equal));
    all.extend(compare_elem!(
        int_equal_elem,
        int_not_equal_elem,
        int_greater_elem,
        int_greater_equal_elem,
        int_lower_elem,
        int_lower_equal_elem,
    ));
    all.extend(whole!(int_sum, int_prod, int_mean, int_max, int_min, int_max_abs));
    all.extend(along!(
        int_sum_dim,
        int_prod_dim,
        int_mean_dim,
        int_cumsum,
        int_cumprod,
        int_cummin,
        int_cummax,
        int_argmax,
        int_argmin,
        int_max_dim,
        int_min_dim,
        int_max_abs_dim,
    ));
    all.extend(vec![
        case!(int_clamp, one, Match::Bits, |d, x| vec![ri::<B>(B::int_clamp(
            it::<B>(&x[0], d),
            Scalar::Int(-2),
            Scalar::Int(4)
        ))]),
        case!(int_matmul, matmul_pairs, Match::Bits, |d, x| vec![ri::<B>(B::int_matmul(
            it::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(int_mask_where, with_mask, Match::Bits, |d, x| vec![ri::<B>(B::int_mask_where(
            it::<B>(&x[0], d),
            bl::<B>(&x[1], d),
            it::<B>(&x[2], d)
        ))]),
        case!(int_mask_fill, with_mask, Match::Bits, |d, x| vec![ri::<B>(B::int_mask_fill(
            it::<B>(&x[0], d),
            bl::<B>(&x[1], d),
            Scalar::Int(-9)
        ))]),
        case!(int_into_float, one, Match::Bits, |d, x| vec![
            rf::<B>(B::int_into_float(it::<B>(&x[0], d), FloatDType::F32)),
            rf::<B>(B::int_into_float(it::<B>(&x[0], d), FloatDType::F16))
        ]),
        case!(int_cast, one, Match::Bits, |d, x| vec![ri::<B>(B::int_cast(it::<B>(&x[0], d), IntDType::I32))]),
        case!(int_to_device, one, Match::Bits, |d, x| vec![ri::<B>(B::int_to_device(it::<B>(&x[0], d), d))]),
        case!(int_zeros, one, Match::Bits, |d, x| vec![ri::<B>(B::int_zeros(shape_of(&x[0]), d, IntDType::I64))]),
        case!(int_ones, one, Match::Bits, |d, x| vec![ri::<B>(B::int_ones(shape_of(&x[0]), d, IntDType::I64))]),
        case!(int_full, one, Match::Bits, |d, x| vec![ri::<B>(B::int_full(
            shape_of(&x[0]),
            Scalar::Int(-3),
            d,
            IntDType::I64
        ))]),
        case!(int_empty, one, Match::Shape, |d, x| vec![ri::<B>(B::int_empty(shape_of(&x[0]), d, IntDType::I64))]),
        case!(int_arange, one, Match::Bits, |d, x| vec![ri::<B>(B::int_arange(
            -3..(x[0].shape[0] as i64),
            d,
            IntDType::I64
        ))]),
        case!(int_arange_step, one, Match::Bits, |d, x| vec![ri::<B>(B::int_arange_step(
            -3..(x[0].shape[0] as i64 + 4),
            2,
            d,
            IntDType::I64
        ))]),
        case!(int_swap_dims, one, Match::Bits, |d, x| {
            let n = x[0].shape.len();
            vec![ri::<B>(B::int_swap_dims(it::<B>(&x[0], d), 0, n - 1))]
        }),
        case!(int_permute, one, Match::Bits, |d, x| {
            let axes: Vec<usize> = (0..x[0].shape.len()).rev().collect();
            vec![ri::<B>(B::int_permute(it::<B>(&x[0], d), &axes))]
        }),
        case!(int_flip, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| ri::<B>(B::int_flip(it::<B>(&x[0], d), &[k])))
            .collect()),
        case!(int_reshape, one, Match::Bits, |d, x| {
            let n: usize = x[0].shape.iter().product();
            vec![ri::<B>(B::int_reshape(it::<B>(&x[0], d), Shape::new([n])))]
        }),
        case!(int_expand, one, Match::Bits, |d, x| {
            let mut shape = vec![2];
            shape.extend(x[0].shape.iter());
            vec![ri::<B>(B::int_expand(it::<B>(&x[0], d), Shape::from(shape)))]
        }),
        case!(int_repeat_dim, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| ri::<B>(B::int_repeat_dim(it::<B>(&x[0], d), k, 2)))
            .collect()),
        case!(int_slice, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| ri::<B>(B::int_slice(it::<B>(&x[0], d), &cut(&x[0].shape, k, 1, x[0].shape[k]))))
            .collect()),
        case!(int_slice_assign, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| {
                let len = x[0].shape[k];
                let mut vshape = x[0].shape.clone();
                vshape[k] = len - 1;
                let n: usize = vshape.iter().product();
                let value = TensorData::new((0..n as i64).map(|v| 100 + v).collect::<Vec<_>>(), vshape);
                ri::<B>(B::int_slice_assign(it::<B>(&x[0], d), &cut(&x[0].shape, k, 1, len), it::<B>(&value, d)))
            })
            .collect()),
        case!(int_cat, two, Match::Bits, |d, x| dims(&x[0])
            .map(|k| ri::<B>(B::int_cat(vec![it::<B>(&x[0], d), it::<B>(&x[1], d)], k)))
            .collect()),
        case!(int_unfold, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| ri::<B>(B::int_unfold(it::<B>(&x[0], d), k, 2, 1)))
            .collect()),
        case!(int_gather, indexed, Match::Bits, |d, x| vec![ri::<B>(B::int_gather(
            1,
            it::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(int_scatter_add, indexed, Match::Bits, |d, x| vec![ri::<B>(B::int_scatter_add(
            1,
            it::<B>(&x[0], d),
            it::<B>(&x[1], d),
            it::<B>(&x[0], d)
        ))]),
        case!(int_select, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 1)
            .map(|k| ri::<B>(B::int_select(it::<B>(&x[0], d), k, it::<B>(&first_and_last(x[0].shape[k]), d))))
            .collect()),
        case!(int_select_add, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 1)
            .map(|k| {
                let mut vshape = x[0].shape.clone();
                vshape[k] = 2;
                let value = TensorData::new(vec![5i64; vshape.iter().product()], vshape);
                ri::<B>(B::int_select_add(
                    it::<B>(&x[0], d),
                    k,
                    it::<B>(&first_and_last(x[0].shape[k]), d),
                    it::<B>(&value, d),
                ))
            })
            .collect()),
        case!(int_gather_nd, nd, Match::Bits, |d, x| vec![ri::<B>(B::int_gather_nd(
            it::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(int_scatter_nd, nd, Match::Bits, |d, x| {
            let value = TensorData::new(vec![-50i64; 3 * x[0].shape[1]], [3, x[0].shape[1]]);
            vec![ri::<B>(B::int_scatter_nd(
                it::<B>(&x[0], d),
                it::<B>(&x[1], d),
                it::<B>(&value, d),
                IndexingUpdateOp::Add,
            ))]
        }),
        case!(int_argtopk, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| ri::<B>(B::int_argtopk(it::<B>(&x[0], d), k, 2)))
            .collect()),
        case!(int_topk, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| ri::<B>(B::int_topk(it::<B>(&x[0], d), k, 2)))
            .collect()),
        case!(int_max_dim_with_indices, one, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| {
                let (v, i) = B::int_max_dim_with_indices(it::<B>(&x[0], d), k);
                [ri::<B>(v), ri::<B>(i)]
            })
            .collect()),
        case!(int_min_dim_with_indices, one, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| {
                let (v, i) = B::int_min_dim_with_indices(it::<B>(&x[0], d), k);
                [ri::<B>(v), ri::<B>(i)]
            })
            .collect()),
        case!(int_any, one, Match::Bits, |d, x| vec![rb::<B>(B::int_any(it::<B>(&x[0], d), BOOL))]),
        case!(int_all, one, Match::Bits, |d, x| vec![rb::<B>(B::int_all(it::<B>(&x[0], d), BOOL))]),
        case!(int_any_dim, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rb::<B>(B::int_any_dim(it::<B>(&x[0], d), k, BOOL)))
            .collect()),
        case!(int_all_dim, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rb::<B>(B::int_all_dim(it::<B>(&x[0], d), k, BOOL)))
            .collect()),
        case!(int_sort, one, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| [false, true].map(|desc| ri::<B>(B::int_sort(it::<B>(&x[0], d), k, desc))))
            .collect()),
        case!(int_argsort, one, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| [false, true].map(|desc| ri::<B>(B::int_argsort(it::<B>(&x[0], d), k, desc))))
            .collect()),
        case!(int_sort_with_indices, one, Match::Bits, |d, x| dims(&x[0])
            .flat_map(|k| {
                let (v, i) = B::int_sort_with_indices(it::<B>(&x[0], d), k, false);
                [ri::<B>(v), ri::<B>(i)]
            })
            .collect()),
    ]);
    all
}

/// Indices `[0, len - 1]` (len at least 1).
fn first_and_last(len: usize) -> TensorData {
    TensorData::new(vec![0i64, len as i64 - 1], [2])
}

/// Int pairs `[.., m, k] x [.., k, n]`.
fn matmul_pairs() -> Vec<Input> {
    [(&[5usize, 3][..], &[3usize, 4][..]), (&[2, 3, 5], &[2, 5, 4]), (&[0, 3], &[3, 2])]
        .iter()
        .map(|(a, b)| {
            let (na, nb): (usize, usize) = (a.iter().product(), b.iter().product());
            Input {
                what: format!("I64 {a:?} x {b:?}"),
                data: vec![
                    TensorData::new((0..na as i64).map(|i| i % 7 - 3).collect::<Vec<_>>(), a.to_vec()),
                    TensorData::new((0..nb as i64).map(|i| i % 5 - 2).collect::<Vec<_>>(), b.to_vec()),
                ],
            }
        })
        .collect()
}

/// 2-D int tensors and in-range indices of their shape along dimension 1.
fn indexed() -> Vec<Input> {
    [&[5usize, 3][..], &[4, 6], &[1, 7]]
        .iter()
        .map(|s| {
            let n: usize = s.iter().product();
            let t = TensorData::new((0..n as i64).map(|i| i % 11 - 5).collect::<Vec<_>>(), s.to_vec());
            let idx = TensorData::new((0..n as i64).map(|i| (i * 7 + 1) % s[1] as i64).collect::<Vec<_>>(), s.to_vec());
            Input { what: format!("I64 {s:?} with indices along 1"), data: vec![t, idx] }
        })
        .collect()
}

/// A 2-D int tensor and `[3, 1]` distinct row indices.
fn nd() -> Vec<Input> {
    [&[5usize, 3][..], &[4, 6]]
        .iter()
        .map(|s| {
            let n: usize = s.iter().product();
            let t = TensorData::new((0..n as i64).map(|i| i % 11 - 5).collect::<Vec<_>>(), s.to_vec());
            let rows = s[0] as i64;
            Input {
                what: format!("I64 {s:?} with row indices"),
                data: vec![t, TensorData::new(vec![rows - 1, 0, 1], [3, 1])],
            }
        })
        .collect()
}

/// The int cases, for the coverage check.
pub(crate) fn all() -> Vec<Case> {
    cases()
}

#[test]
fn every_int_op_computes_what_flex_does() {
    let counts = check(&cases());
    counts.report("int ops");
}
