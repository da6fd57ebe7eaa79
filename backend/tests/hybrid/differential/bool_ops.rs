//! `BoolTensorOps`: every method, forward.

use burn::tensor::{BoolDType, FloatDType, IntDType, Scalar, Shape, Slice, TensorData};

use super::{bl, bools, case, check, it, rb, rf, ri, shape_of, Case, Input, Match};

fn one() -> Vec<Input> {
    bools(1)
}

fn two() -> Vec<Input> {
    bools(2)
}

fn three() -> Vec<Input> {
    bools(3)
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

/// 2-D masks and in-range indices of their shape along dimension 1.
fn indexed() -> Vec<Input> {
    [&[5usize, 3][..], &[4, 6], &[1, 7]]
        .iter()
        .map(|s| {
            let n: usize = s.iter().product();
            let t = TensorData::new((0..n).map(|i| i % 3 == 0).collect::<Vec<_>>(), s.to_vec());
            let idx = TensorData::new((0..n as i64).map(|i| (i * 7 + 1) % s[1] as i64).collect::<Vec<_>>(), s.to_vec());
            let v = TensorData::new((0..n).map(|i| i % 4 == 1).collect::<Vec<_>>(), s.to_vec());
            Input { what: format!("Bool {s:?} with indices along 1"), data: vec![t, idx, v] }
        })
        .collect()
}

macro_rules! unary {
    ($($op:ident),* $(,)?) => { vec![$(case!($op, one, Match::Bits, |d, x| vec![rb::<B>(B::$op(bl::<B>(&x[0], d)))])),*] };
}

macro_rules! binary {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, two, Match::Bits, |d, x| vec![rb::<B>(B::$op(bl::<B>(&x[0], d), bl::<B>(&x[1], d)))])),*]
    };
}

macro_rules! along {
    ($($op:ident),* $(,)?) => {
        vec![$(case!($op, one, Match::Bits, |d, x| dims(&x[0]).map(|k| rb::<B>(B::$op(bl::<B>(&x[0], d), k))).collect())),*]
    };
}

fn cases() -> Vec<Case> {
    let mut all: Vec<Case> = Vec::new();
    all.extend(unary!(bool_not, bool_transpose, bool_any, bool_all));
    all.extend(binary!(bool_and, bool_or, bool_xor, bool_equal, bool_not_equal));
    all.extend(along!(bool_any_dim, bool_all_dim));
    all.extend(vec![
        case!(bool_equal_elem, one, Match::Bits, |d, x| vec![rb::<B>(B::bool_equal_elem(
            bl::<B>(&x[0], d),
            Scalar::Bool(true)
        ))]),
        case!(bool_not_equal_elem, one, Match::Bits, |d, x| vec![rb::<B>(B::bool_not_equal_elem(
            bl::<B>(&x[0], d),
            Scalar::Bool(true)
        ))]),
        case!(bool_into_int, one, Match::Bits, |d, x| vec![ri::<B>(B::bool_into_int(
            bl::<B>(&x[0], d),
            IntDType::I64
        ))]),
        case!(bool_into_float, one, Match::Bits, |d, x| vec![rf::<B>(B::bool_into_float(
            bl::<B>(&x[0], d),
            FloatDType::F32
        ))]),
        case!(bool_to_device, one, Match::Bits, |d, x| vec![rb::<B>(B::bool_to_device(bl::<B>(&x[0], d), d))]),
        case!(bool_zeros, one, Match::Bits, |d, x| vec![rb::<B>(B::bool_zeros(shape_of(&x[0]), d, BoolDType::Native))]),
        case!(bool_ones, one, Match::Bits, |d, x| vec![rb::<B>(B::bool_ones(shape_of(&x[0]), d, BoolDType::Native))]),
        case!(bool_empty, one, Match::Shape, |d, x| vec![rb::<B>(B::bool_empty(
            shape_of(&x[0]),
            d,
            BoolDType::Native
        ))]),
        case!(bool_reshape, one, Match::Bits, |d, x| {
            let n: usize = x[0].shape.iter().product();
            vec![rb::<B>(B::bool_reshape(bl::<B>(&x[0], d), Shape::new([n])))]
        }),
        case!(bool_swap_dims, one, Match::Bits, |d, x| {
            let n = x[0].shape.len();
            vec![rb::<B>(B::bool_swap_dims(bl::<B>(&x[0], d), 0, n - 1))]
        }),
        case!(bool_permute, one, Match::Bits, |d, x| {
            let axes: Vec<usize> = (0..x[0].shape.len()).rev().collect();
            vec![rb::<B>(B::bool_permute(bl::<B>(&x[0], d), &axes))]
        }),
        case!(bool_flip, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rb::<B>(B::bool_flip(bl::<B>(&x[0], d), &[k])))
            .collect()),
        case!(bool_expand, one, Match::Bits, |d, x| {
            let mut shape = vec![3];
            shape.extend(x[0].shape.iter());
            vec![rb::<B>(B::bool_expand(bl::<B>(&x[0], d), Shape::from(shape)))]
        }),
        case!(bool_repeat_dim, one, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rb::<B>(B::bool_repeat_dim(bl::<B>(&x[0], d), k, 2)))
            .collect()),
        case!(bool_cat, two, Match::Bits, |d, x| dims(&x[0])
            .map(|k| rb::<B>(B::bool_cat(vec![bl::<B>(&x[0], d), bl::<B>(&x[1], d)], k)))
            .collect()),
        case!(bool_unfold, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| rb::<B>(B::bool_unfold(bl::<B>(&x[0], d), k, 2, 1)))
            .collect()),
        case!(bool_slice, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| rb::<B>(B::bool_slice(bl::<B>(&x[0], d), &cut(&x[0].shape, k, 1, x[0].shape[k]))))
            .collect()),
        case!(bool_slice_assign, two, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 2)
            .map(|k| {
                let len = x[0].shape[k];
                let s = cut(&x[0].shape, k, 0, len - 1);
                let value = B::bool_slice(bl::<B>(&x[1], d), &s);
                rb::<B>(B::bool_slice_assign(bl::<B>(&x[0], d), &s, value))
            })
            .collect()),
        case!(bool_mask_where, three, Match::Bits, |d, x| vec![rb::<B>(B::bool_mask_where(
            bl::<B>(&x[0], d),
            bl::<B>(&x[1], d),
            bl::<B>(&x[2], d)
        ))]),
        case!(bool_mask_fill, two, Match::Bits, |d, x| vec![rb::<B>(B::bool_mask_fill(
            bl::<B>(&x[0], d),
            bl::<B>(&x[1], d),
            Scalar::Bool(true)
        ))]),
        case!(bool_gather, indexed, Match::Bits, |d, x| vec![rb::<B>(B::bool_gather(
            1,
            bl::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(bool_scatter_or, indexed, Match::Bits, |d, x| vec![rb::<B>(B::bool_scatter_or(
            1,
            bl::<B>(&x[0], d),
            it::<B>(&x[1], d),
            bl::<B>(&x[2], d)
        ))]),
        case!(bool_select, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 1)
            .map(|k| {
                let idx = TensorData::new(vec![x[0].shape[k] as i64 - 1, 0], [2]);
                rb::<B>(B::bool_select(bl::<B>(&x[0], d), k, it::<B>(&idx, d)))
            })
            .collect()),
        case!(bool_select_or, one, Match::Bits, |d, x| dims(&x[0])
            .filter(|&k| x[0].shape[k] >= 1)
            .map(|k| {
                let idx = TensorData::new(vec![x[0].shape[k] as i64 - 1, 0], [2]);
                let mut vshape = x[0].shape.clone();
                vshape[k] = 2;
                let value = TensorData::new(vec![true; vshape.iter().product()], vshape);
                rb::<B>(B::bool_select_or(bl::<B>(&x[0], d), k, it::<B>(&idx, d), bl::<B>(&value, d)))
            })
            .collect()),
        case!(bool_argwhere, one, Match::Bits, |d, x| vec![ri::<B>(burn::tensor::read_sync(B::bool_argwhere(
            bl::<B>(&x[0], d),
            IntDType::I64
        )))]),
    ]);
    all
}

/// The bool cases, for the coverage check.
pub(crate) fn all() -> Vec<Case> {
    cases()
}

#[test]
fn every_bool_op_computes_what_flex_does() {
    let counts = check(&cases());
    counts.report("bool ops");
}
