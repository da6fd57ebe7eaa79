//! Every op family once, for every kind: each function names its rule (`crate::rules`)
//! and hands the inner op to `dispatch`. The float, int and bool op
//! files call these, so the same Burn op follows the same rule whatever its kind.

use burn::tensor::backend::Backend;
use burn::tensor::{BoolDType, Scalar, Shape, Slice, TensorMetadata};

use crate::ops::dispatch::{self, context, fixed, run1, run1_inner, run2, run2_inner, run3, spec};
use crate::rules::{self, ArgRule, Context, GatherRule, Linearity, ShardedReduce, Spec, Strategy};
use crate::spec::placement::local_shape;
use crate::spec::placement::{shard_ranges, Placement};
use crate::tensor::dtensor::DTensor;
use crate::tensor::kind::{BoolKind, IntKind, ShardKind};

type IntPrim<B> = <IntKind as ShardKind<B>>::Prim;
type BoolPrim<B> = <BoolKind as ShardKind<B>>::Prim;

/// An elementwise op on one input with the given linearity.
pub(crate) fn unary<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    lin: Linearity,
    f: impl Fn(K::Prim) -> K2::Prim + Sync,
) -> DTensor<B, K2> {
    run1(op, |sp, cx| rules::elementwise(lin, sp, cx), t, |_, p| f(p))
}

/// An elementwise op on two inputs (broadcasting) with the given linearity.
pub(crate) fn binary<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    lin: Linearity,
    f: impl Fn(K1::Prim, K2::Prim) -> K3::Prim + Sync,
) -> DTensor<B, K3> {
    run2(op, |sp, cx| rules::elementwise(lin, sp, cx), a, b, |_, x, y| f(x, y))
}

/// `mask_where(tensor, mask, value)` of any kind: an elementwise op on three inputs.
pub(crate) fn mask_where<B: Backend, K: ShardKind<B>>(
    op: &str,
    tensor: DTensor<B, K>,
    mask: DTensor<B, BoolKind>,
    value: DTensor<B, K>,
    f: impl Fn(K::Prim, BoolPrim<B>, K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    let rule = |sp: &[Spec], cx: &Context| rules::elementwise(Linearity::None, sp, cx);
    run3(op, rule, tensor, mask, value, |_, t, m, v| f(t, m, v))
}

/// A reduction along `dim` keeping it (size 1).
pub(crate) fn reduce_dim<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    dim: usize,
    on_sharded: ShardedReduce,
    f: impl Fn(K::Prim) -> K2::Prim + Sync,
) -> DTensor<B, K2> {
    run1(op, |sp, cx| rules::reduce_dim(&sp[0], dim, on_sharded, cx), t, |_, p| f(p))
}

/// The sum of all elements.
pub(crate) fn sum_all<B: Backend, K: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    f: impl Fn(K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    run1(op, |sp, _| rules::reduce_all(&sp[0]), t, |_, p| f(p))
}

/// The mean along `dim`: over the sharded dimension (or of a pending sum) it is the sum,
/// scaled by the global length by the kind's own division rule (linear for floats; made
/// whole first for ints, whose division rounds); elsewhere the inner mean, rank-local.
pub(crate) fn mean_dim<B: Backend, K: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    dim: usize,
    sum_dim: impl Fn(K::Prim) -> K::Prim + Sync,
    mean_dim: impl Fn(K::Prim) -> K::Prim + Sync,
    divide: impl FnOnce(DTensor<B, K>, usize) -> DTensor<B, K>,
) -> DTensor<B, K> {
    let sums = |p: &Placement| *p == Placement::Shard(dim) || *p == Placement::PARTIAL_SUM;
    if sums(&t.placement) || t.outer.iter().any(sums) {
        let len = t.global[dim];
        let sums = reduce_dim::<B, K, K>(op, t, dim, ShardedReduce::Sum, sum_dim);
        return divide(sums, len);
    }
    unary(op, t, Linearity::None, mean_dim)
}

/// argmax / argmin along `dim`. `best_value(p, dim)` and `best_index(p, dim)` are the inner
/// max_dim / argmax (or min_dim / argmin).
pub(crate) fn arg_extreme<B: Backend, K: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    dim: usize,
    best_value: impl Fn(K::Prim) -> K::Prim + Sync,
    best_index: impl Fn(K::Prim) -> IntPrim<B> + Sync,
) -> DTensor<B, IntKind> {
    // Along an outer dimension the candidates are not exchanged: a dim split there is
    // gathered first.
    let rule = |sp: &[Spec], cx: &Context| match rules::arg_extreme(&sp[0], dim, cx) {
        ArgRule::Reduce(s) => s,
        ArgRule::Candidates => Strategy::gathered(1),
    };
    let (t, outer) = dispatch::outer1(op, &rule, t);
    match rules::arg_extreme(&spec(&t), dim, &context(&t)) {
        ArgRule::Reduce(s) => run1_inner(op, &s, t, &outer, |_, p| best_index(p)),
        ArgRule::Candidates => {
            // Each rank's best value and its global index, size 1 along `dim` per rank.
            let ranges = shard_ranges(t.shape[dim], t.ranks());
            let mesh = t.mesh.clone();
            let (values, indices): (Vec<K::Prim>, Vec<IntPrim<B>>) = t
                .shards
                .into_iter()
                .zip(&ranges[mesh.local_ranks()])
                .map(|(p, range)| {
                    let (v, i) = (best_value(p.clone()), best_index(p));
                    (v, B::int_add_scalar(i, Scalar::Int(range.start as i64)))
                })
                .unzip();
            let values = dispatch::bring(
                dispatch::assemble::<B, K>(mesh.clone(), Placement::Shard(dim), values),
                Placement::Replicate,
            );
            let indices = dispatch::bring(
                dispatch::assemble::<B, IntKind>(mesh, Placement::Shard(dim), indices),
                Placement::Replicate,
            );
            let s = rules::Strategy::local(vec![Placement::Replicate; 2], Placement::Replicate);
            run2_inner::<B, K, IntKind, IntKind>(op, &s, values, indices, &outer, |_, v, i| {
                B::int_gather(dim, i, best_index(v))
            })
        }
    }
}

/// `gather(dim, tensor, indices)` of any kind.
pub(crate) fn gather<B: Backend, K: ShardKind<B>>(
    op: &str,
    dim: usize,
    tensor: DTensor<B, K>,
    indices: DTensor<B, IntKind>,
    f: impl Fn(K::Prim, IntPrim<B>) -> K::Prim + Sync,
) -> DTensor<B, K> {
    // Along an outer dimension a gather on the dim split there is gathered first.
    let rule = |sp: &[Spec], cx: &Context| match rules::gather(&sp[0], &sp[1], dim, cx) {
        GatherRule::Aligned(s) => s,
        GatherRule::OnShardedDim(_) => Strategy::gathered(2),
    };
    let (tensor, indices, outer) = dispatch::outer2(op, &rule, tensor, indices);
    match rules::gather(&spec(&tensor), &spec(&indices), dim, &context(&tensor)) {
        GatherRule::Aligned(s) => run2_inner(op, &s, tensor, indices, &outer, |_, t, i| f(t, i)),
        GatherRule::OnShardedDim(s) => {
            // Every rank picks the indices inside its slice and holds zeros elsewhere.
            let ranges = shard_ranges(tensor.shape[dim], tensor.ranks());
            let bool_dtype: BoolDType = <B::BoolElem as burn::tensor::Element>::dtype().into();
            run2_inner(op, &s, tensor, indices, &outer, |r, t, idx| {
                let range = &ranges[r];
                if range.is_empty() {
                    return K::zeros_shaped(&t, idx.shape());
                }
                let start = Scalar::Int(range.start as i64);
                let inside = B::bool_and(
                    B::int_greater_equal_elem(idx.clone(), start, bool_dtype),
                    B::int_lower_elem(idx.clone(), Scalar::Int(range.end as i64), bool_dtype),
                );
                let local =
                    B::int_clamp(B::int_sub_scalar(idx, start), Scalar::Int(0), Scalar::Int(range.len() as i64 - 1));
                K::zero_where(f(t, local), B::bool_not(inside))
            })
        }
    }
}

/// `scatter_add` (`scatter_or` for bool) of any kind.
pub(crate) fn scatter<B: Backend, K: ShardKind<B>>(
    op: &str,
    dim: usize,
    tensor: DTensor<B, K>,
    indices: DTensor<B, IntKind>,
    value: DTensor<B, K>,
    f: impl Fn(K::Prim, IntPrim<B>, K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    let rule = |sp: &[Spec], cx: &Context| rules::scatter(&sp[0], &sp[1], &sp[2], dim, cx);
    run3(op, rule, tensor, indices, value, |_, t, i, v| f(t, i, v))
}

/// `select(tensor, dim, indices)` of any kind.
pub(crate) fn select<B: Backend, K: ShardKind<B>>(
    op: &str,
    dim: usize,
    tensor: DTensor<B, K>,
    indices: DTensor<B, IntKind>,
    f: impl Fn(K::Prim, IntPrim<B>) -> K::Prim + Sync,
) -> DTensor<B, K> {
    run2(op, |sp, _| rules::select(&sp[0], dim), tensor, indices, |_, t, i| f(t, i))
}

/// `select_add` (`select_or` for bool) of any kind.
pub(crate) fn select_add<B: Backend, K: ShardKind<B>>(
    op: &str,
    dim: usize,
    tensor: DTensor<B, K>,
    indices: DTensor<B, IntKind>,
    value: DTensor<B, K>,
    f: impl Fn(K::Prim, IntPrim<B>, K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    run3(op, |sp, _| rules::select_add(&sp[0], dim, &sp[2]), tensor, indices, value, |_, t, i, v| f(t, i, v))
}

/// `slice_assign(tensor, slices, value)` of any kind: on a shard each rank writes its part.
pub(crate) fn slice_assign<B: Backend, K: ShardKind<B>>(
    op: &str,
    tensor: DTensor<B, K>,
    slices: &[Slice],
    value: DTensor<B, K>,
    f: impl Fn(K::Prim, &[Slice], K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    let (tensor, value, outer) = dispatch::outer2(
        op,
        &|sp: &[Spec], cx: &Context| rules::slice_assign(&sp[0], slices, &sp[1], cx),
        tensor,
        value,
    );
    let slices = &outer.view_slices(slices, &tensor.shape);
    let s = rules::slice_assign(&spec(&tensor), slices, &spec(&value), &context(&tensor));
    let (shape, k) = (tensor.shape.clone(), tensor.ranks());
    let (placement, value_to) = (s.output, s.inputs[1]);
    run2_inner(op, &s, tensor, value, &outer, |r, t, v| match (placement, value_to) {
        // A range of the split dimension: each rank writes the rows it holds, if any.
        (Placement::Shard(d), Placement::Replicate) => {
            let rows = rules::slice_rows(slices, &shape, d).expect("the rule's range");
            let own = shard_ranges(shape[d], k)[r].clone();
            match rules::slice_assign_part(slices, shape.num_dims(), d, rows, own) {
                Some((piece, of_value)) => f(t, &piece, K::slice(v, &of_value)),
                None => t,
            }
        }
        (Placement::Shard(d), _) => {
            let local = rules::localise_slices(slices, d, local_shape(&shape, placement, k, r)[d]);
            f(t, &local, v)
        }
        _ => f(t, slices, v),
    })
}

/// `matmul` of any kind.
pub(crate) fn matmul<B: Backend, K: ShardKind<B>>(
    op: &str,
    lhs: DTensor<B, K>,
    rhs: DTensor<B, K>,
    f: impl Fn(K::Prim, K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    dispatch::run_matmul(op, |sp, cx| rules::matmul(&sp[0], &sp[1], cx), lhs, rhs, f)
}

/// Reshape of any kind.
pub(crate) fn reshape<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, new: Shape) -> DTensor<B, K> {
    let (t, outer) = dispatch::outer1("reshape", &|sp: &[Spec], cx: &Context| rules::reshape(&sp[0], &new, cx), t);
    let new = outer.view_of(&new, &t.mesh);
    let s = rules::reshape(&spec(&t), &new, &context(&t));
    let (out, k) = (s.output, t.ranks());
    run1_inner("reshape", &s, t, &outer, |r, p| K::reshape(p, local_shape(&new, out, k, r)))
}

/// A permutation of dimensions of any kind (`f` the inner permute or swap).
pub(crate) fn permute<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    axes: &[usize],
    f: impl Fn(K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    // A kept whole copy is permuted along (the transpose of an FC input in its backward).
    let kept = t.kept.get().cloned();
    let out = run1("permute", |sp, _| rules::permute(&sp[0], axes), t, |_, p| f(p));
    if let Some(whole) = kept {
        out.keep_whole(whole.into_iter().map(&f).collect());
    }
    out
}

/// `axes` for swapping two dimensions of a rank-`n` tensor.
pub(crate) fn swap_axes(n: usize, a: usize, b: usize) -> Vec<usize> {
    let mut axes: Vec<usize> = (0..n).collect();
    axes.swap(a, b);
    axes
}

/// Slicing of any kind.
pub(crate) fn slice<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, slices: &[Slice]) -> DTensor<B, K> {
    let (t, outer) = dispatch::outer1("slice", &|sp: &[Spec], cx: &Context| rules::slice(&sp[0], slices, cx), t);
    let slices = &outer.view_slices(slices, &t.shape);
    let ctx = context(&t);
    let s = rules::slice(&spec(&t), slices, &ctx);
    let (shape, placement) = (t.shape.clone(), t.placement);
    let local = |r: usize| -> Vec<Slice> {
        match (s.run, s.output, placement) {
            (rules::Run::OnOwner { .. }, _, Placement::Shard(d)) => {
                rules::within_one_shard(slices, &shape, d, ctx.ranks).expect("an owner").1
            }
            (_, Placement::Shard(d), _) => {
                rules::localise_slices(slices, d, local_shape(&shape, placement, ctx.ranks, r)[d])
            }
            _ => slices.to_vec(),
        }
    };
    run1_inner("slice", &s, t, &outer, |r, p| K::slice(p, &local(r)))
}

/// Expansion of any kind (`f(piece, local shape)` the inner expand).
pub(crate) fn expand<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    shape: Shape,
    f: impl Fn(K::Prim, Shape) -> K::Prim + Sync,
) -> DTensor<B, K> {
    let (t, outer) = dispatch::outer1("expand", &|sp: &[Spec], _: &Context| rules::expand(&sp[0], &shape), t);
    let shape = outer.view_of(&shape, &t.mesh);
    let s = rules::expand(&spec(&t), &shape);
    let (out, k) = (s.output, t.ranks());
    run1_inner("expand", &s, t, &outer, |r, p| f(p, local_shape(&shape, out, k, r)))
}

/// Concatenation of any kind.
pub(crate) fn cat<B: Backend, K: ShardKind<B>>(tensors: Vec<DTensor<B, K>>, dim: usize) -> DTensor<B, K> {
    dispatch::run_all("cat", |sp, _| rules::cat(sp, dim), tensors, |_, ps| K::cat(ps, dim))
}

/// Flipping axes of any kind.
pub(crate) fn flip<B: Backend, K: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    axes: &[usize],
    f: impl Fn(K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    run1(op, |sp, _| rules::flip(&sp[0], axes), t, |_, p| f(p))
}

/// Sliding windows of any kind.
pub(crate) fn unfold<B: Backend, K: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    dim: usize,
    f: impl Fn(K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    run1(op, |sp, _| rules::unfold(&sp[0], dim), t, |_, p| f(p))
}

/// A cumulative op or another op along `dim` without a rule for the sharded dimension.
pub(crate) fn along_dim<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    dim: usize,
    f: impl Fn(K::Prim) -> K2::Prim + Sync,
) -> DTensor<B, K2> {
    reduce_dim(op, t, dim, ShardedReduce::Gather, f)
}

/// An op without a rule on one input: gathered, run everywhere, `Replicate` out.
pub(crate) fn gathered<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    f: impl Fn(K::Prim) -> K2::Prim + Sync,
) -> DTensor<B, K2> {
    run1(op, fixed(Strategy::gathered(1)), t, |_, p| f(p))
}

/// An op along `dim` with two outputs (sort with indices, max or min with indices): rank-local
/// unless `dim` is the sharded one, where the input is gathered first.
#[allow(clippy::type_complexity)]
pub(crate) fn along_dim_pair<B: Backend, K: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    dim: usize,
    f: impl Fn(K::Prim) -> (K2::Prim, K3::Prim) + Sync,
) -> (DTensor<B, K2>, DTensor<B, K3>) {
    dispatch::run1_two(op, |sp, cx| rules::reduce_dim(&sp[0], dim, ShardedReduce::Gather, cx), t, |_, p| f(p))
}

/// The maximum over all elements of integer values (or of their magnitudes) by the inner op
/// `f`: over a split tensor, each rank's maximum, gathered (one value a rank) and reduced by `f`
/// again; otherwise rank-local (whole) or gathered. (Float maxima are gathered: how the inner
/// maximum treats NaN need not split over pieces.)
pub(crate) fn max_all<B: Backend, K: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    f: impl Fn(K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    let split = match t.placement {
        Placement::Shard(d) => t.shape[d] >= t.ranks() && t.shape.num_elements() > 0 && t.outer.is_empty(),
        _ => false,
    };
    if !split {
        return gathered(op, t, f);
    }
    let placement = t.placement;
    let each = move |_: &[Spec], _: &Context| Strategy::local(vec![placement], Placement::Shard(0));
    let candidates: DTensor<B, K> = run1(op, each, t, |_, p| K::reshape(f(p), Shape::new([1])));
    // Gathering the candidates is the rule (one value a rank), not a fallback.
    let whole = |_: &[Spec], _: &Context| Strategy::local(vec![Placement::Replicate], Placement::Replicate);
    run1(op, whole, candidates, |_, p| f(p))
}

/// An op without a rule on two inputs: both gathered, run everywhere, `Replicate` out.
pub(crate) fn gathered2<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    f: impl Fn(K1::Prim, K2::Prim) -> K3::Prim + Sync,
) -> DTensor<B, K3> {
    run2(op, fixed(Strategy::gathered(2)), a, b, |_, x, y| f(x, y))
}

/// An op without a rule on three inputs: all gathered, run everywhere, `Replicate` out.
pub(crate) fn gathered3<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>, K4: ShardKind<B>>(
    op: &str,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
    f: impl Fn(K1::Prim, K2::Prim, K3::Prim) -> K4::Prim + Sync,
) -> DTensor<B, K4> {
    run3(op, fixed(Strategy::gathered(3)), a, b, c, |_, x, y, z| f(x, y, z))
}

/// An op on two inputs that runs rank-local where both are split along the batch (`Shard(0)`,
/// the output too: grid sampling, per-sample ops), and gathered otherwise.
pub(crate) fn batchwise2<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    f: impl Fn(K1::Prim, K2::Prim) -> K3::Prim + Sync,
) -> DTensor<B, K3> {
    let rule = |sp: &[Spec], cx: &Context| {
        let split = |s: &Spec| s.placement == Placement::Shard(0) && s.shape[0] >= cx.ranks;
        match split(&sp[0]) && split(&sp[1]) && sp[0].shape[0] == sp[1].shape[0] {
            true => Strategy::local(vec![Placement::Shard(0); 2], Placement::Shard(0)),
            false => Strategy::gathered(2),
        }
    };
    run2(op, rule, a, b, |_, x, y| f(x, y))
}
