//! Placement rules shared by the op implementations: per-rank maps, elementwise binaries with
//! broadcasting, reductions along a dimension, and the gathered fallback.

use burn::tensor::backend::Backend;
use burn::tensor::TensorMetadata;

use crate::collectives::{redistribute, ReduceOp};
use crate::dtensor::DTensor;
use crate::kind::ShardKind;
use crate::mesh::MeshDevice;
use crate::mutation::{self, Mutation};
use crate::placement::Placement;

/// Builds a tensor from per-rank results, deriving the global shape from the pieces.
pub(crate) fn assemble<B: Backend, K: ShardKind<B>>(
    mesh: MeshDevice<B::Device>,
    placement: Placement,
    shards: Vec<K::Prim>,
) -> DTensor<B, K> {
    let mut shape = shards[0].shape();
    if let Placement::Shard(d) = placement {
        shape[d] = shards.iter().map(|s| s.shape()[d]).sum();
    }
    let dtype = shards[0].dtype();
    DTensor::from_parts(mesh, shape, dtype, placement, shards)
}

/// Runs `f` on every rank's piece and keeps the placement.
pub(crate) fn per_rank<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    t: DTensor<B, K>,
    mut f: impl FnMut(K::Prim) -> K2::Prim,
) -> DTensor<B, K2> {
    let placement = t.placement;
    let mesh = t.mesh.clone();
    let shards = t.shards.into_iter().map(&mut f).collect();
    assemble(mesh, placement, shards)
}

/// Makes a `Partial` tensor whole (all-reduce); other placements pass unchanged.
pub(crate) fn resolve_partial<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
    if t.placement == Placement::Partial && t.ranks() > 1 && !mutation::active(Mutation::MissingAllReduce) {
        crate::collectives::all_reduce(t, ReduceOp::Sum)
    } else if t.placement == Placement::Partial {
        let mut t = t;
        t.placement = Placement::Replicate;
        t
    } else {
        t
    }
}

/// Makes a `Partial` operand whole in the layout its partner has: a reduce-scatter onto a
/// sharded partner's shards (half an all-reduce's traffic), an all-reduce otherwise.
pub(crate) fn settle_partial<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, partner: Placement) -> DTensor<B, K> {
    match (t.placement, partner) {
        (Placement::Partial, Placement::Shard(d)) if t.ranks() > 1 => crate::collectives::reduce_scatter(t, d),
        _ => resolve_partial(t),
    }
}

/// An elementwise op that is not linear: `Partial` inputs are summed first.
pub(crate) fn unary<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    t: DTensor<B, K>,
    f: impl FnMut(K::Prim) -> K2::Prim,
) -> DTensor<B, K2> {
    if mutation::active(Mutation::NonlinearOnSummands) {
        return per_rank(t, f);
    }
    per_rank(resolve_partial(t), f)
}

/// An op that is linear in its input (negation, scaling, reshaping): works on summands too.
pub(crate) fn linear<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    t: DTensor<B, K>,
    f: impl FnMut(K::Prim) -> K2::Prim,
) -> DTensor<B, K2> {
    per_rank(t, f)
}

/// Gathers `t` to `Replicate`, recording `op` as a fallback if that took communication.
pub(crate) fn gather_for<B: Backend, K: ShardKind<B>>(op: &str, t: DTensor<B, K>) -> DTensor<B, K> {
    if t.placement != Placement::Replicate && t.ranks() > 1 {
        t.mesh.record_fallback(op);
    }
    redistribute(t, Placement::Replicate)
}

/// The fallback of a one-input op without a rule: gather, run everywhere, `Replicate` out.
pub(crate) fn fallback<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    f: impl FnMut(K::Prim) -> K2::Prim,
) -> DTensor<B, K2> {
    per_rank(gather_for(op, t), f)
}

/// How a binary op treats `Partial` (pending-sum) operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linearity {
    /// Neither side may stay a summand.
    None,
    /// `P op P` stays a summand (add, sub).
    Additive,
    /// `P op R` and `R op P` stay summands (mul).
    Scaling,
    /// `P op R` stays a summand (div by a whole value).
    LeftScaling,
}

/// Two placements and shapes that elementwise work can proceed on rank by rank, if any, after
/// free local changes (Replicate operands sliced to the other's shards).
fn align<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    lhs: DTensor<B, K>,
    rhs: DTensor<B, K2>,
    linearity: Linearity,
) -> Result<(DTensor<B, K>, DTensor<B, K2>, Placement), (DTensor<B, K>, DTensor<B, K2>)> {
    use Placement::*;
    match (lhs.placement, rhs.placement) {
        (Replicate, Replicate) => Ok((lhs, rhs, Replicate)),
        (Partial, Partial)
            if linearity == Linearity::Additive
                || (linearity == Linearity::Scaling && mutation::active(Mutation::ProductOfSummands)) =>
        {
            Ok((lhs, rhs, Partial))
        }
        (Partial, Replicate) if matches!(linearity, Linearity::Scaling | Linearity::LeftScaling) => {
            Ok((lhs, rhs, Partial))
        }
        (Replicate, Partial) if linearity == Linearity::Scaling => Ok((lhs, rhs, Partial)),
        (Shard(d), Shard(e)) if d == e && lhs.shape[d] == rhs.shape[d] => Ok((lhs, rhs, Shard(d))),
        // Same shape, different shard dims: re-shard the right to the left's layout
        // (all-gather + local slice, counted), so the op itself stays rank-local.
        (Shard(d), Shard(_)) if lhs.shape == rhs.shape => {
            let rhs = crate::collectives::redistribute(rhs, Shard(d));
            Ok((lhs, rhs, Shard(d)))
        }
        (Shard(d), Replicate) => {
            if rhs.shape[d] == 1 {
                Ok((lhs, rhs, Shard(d)))
            } else if rhs.shape[d] == lhs.shape[d] {
                let rhs = crate::collectives::shard_locally(rhs, d);
                Ok((lhs, rhs, Shard(d)))
            } else {
                Err((lhs, rhs))
            }
        }
        (Replicate, Shard(d)) => {
            if lhs.shape[d] == 1 {
                Ok((lhs, rhs, Shard(d)))
            } else if lhs.shape[d] == rhs.shape[d] {
                let lhs = crate::collectives::shard_locally(lhs, d);
                Ok((lhs, rhs, Shard(d)))
            } else {
                Err((lhs, rhs))
            }
        }
        _ => Err((lhs, rhs)),
    }
}

/// An elementwise binary op with broadcasting, by the placement rules; what cannot be aligned
/// is summed (Partial) or gathered (counted as a fallback of `op`).
pub(crate) fn binary<B: Backend, K: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    lhs: DTensor<B, K>,
    rhs: DTensor<B, K2>,
    linearity: Linearity,
    mut f: impl FnMut(K::Prim, K2::Prim) -> K3::Prim,
) -> DTensor<B, K3> {
    lhs.mesh.check_same(&rhs.mesh, op);
    let (lhs, rhs, placement) = match align(lhs, rhs, linearity) {
        Ok(aligned) => aligned,
        Err((lhs, rhs)) => {
            let (lp, rp) = (lhs.placement, rhs.placement);
            match align(settle_partial(lhs, rp), settle_partial(rhs, lp), Linearity::None) {
                Ok(aligned) => aligned,
                Err((lhs, rhs)) => (gather_for(op, lhs), gather_for(op, rhs), Placement::Replicate),
            }
        }
    };
    let mesh = lhs.mesh.clone();
    let shards = lhs.shards.into_iter().zip(rhs.shards).map(|(a, b)| f(a, b)).collect();
    assemble(mesh, placement, shards)
}

/// A reduction along `dim` that keeps the dimension (size 1): rank-local unless `dim` is the
/// sharded one, where each rank's local result is a summand (`sum_like`) or is combined by
/// `gather_op` after gathering.
pub(crate) fn reduce_dim<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    t: DTensor<B, K>,
    dim: usize,
    on_sharded: ShardedReduce,
    mut f: impl FnMut(K::Prim) -> K2::Prim,
) -> DTensor<B, K2> {
    // A rank with no rows of the reduced dimension has nothing to reduce (tiny tensors on
    // many ranks): reduce the gathered tensor instead.
    let on_sharded = if t.placement == Placement::Shard(dim) && t.shape[dim] < t.ranks() {
        ShardedReduce::Gather
    } else {
        on_sharded
    };
    match (t.placement, on_sharded) {
        (Placement::Shard(d), ShardedReduce::Sum) if d == dim => {
            let mesh = t.mesh.clone();
            let shards = t.shards.into_iter().map(&mut f).collect();
            assemble(mesh, Placement::Partial, shards)
        }
        (Placement::Shard(d), ShardedReduce::Max) if d == dim => {
            let mesh = t.mesh.clone();
            let shards = t.shards.into_iter().map(&mut f).collect();
            crate::collectives::all_reduce(assemble::<B, K2>(mesh, Placement::Partial, shards), ReduceOp::Max)
        }
        (Placement::Shard(d), ShardedReduce::Gather) if d == dim => fallback(op, t, f),
        (Placement::Partial, ShardedReduce::Sum) => per_rank(t, f),
        _ => unary(t, f),
    }
}

/// What a dimension reduction does when the reduced dimension is the sharded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardedReduce {
    /// Local results are summands (sum, mean with a global divisor): output `Partial`.
    Sum,
    /// Local maxima combine by an all-reduce(max).
    Max,
    /// No rule (argmax, cumulative ops): gather.
    Gather,
}

/// Whether `t` can take placement `target` without communication: equal already, or a
/// Replicate operand that broadcasts along (size 1) or can be sliced to the sharded dimension.
fn conforms<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>, target: Placement, full: usize) -> bool {
    match (t.placement, target) {
        (p, q) if p == q => true,
        (Placement::Replicate, Placement::Shard(d)) => t.shape[d] == 1 || t.shape[d] == full,
        _ => false,
    }
}

/// Brings a conforming `t` to `target` (a local slice where needed).
fn conform<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, target: Placement) -> DTensor<B, K> {
    match (t.placement, target) {
        (Placement::Replicate, Placement::Shard(d)) if t.shape[d] != 1 => crate::collectives::shard_locally(t, d),
        _ => t,
    }
}

/// Aligns three operands of an elementwise op (mask_where): to the first sharded operand's
/// placement when the others follow for free, else all gathered. Returns the output placement.
pub(crate) fn align3<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
) -> (DTensor<B, K1>, DTensor<B, K2>, DTensor<B, K3>, Placement) {
    a.mesh.check_same(&b.mesh, op);
    a.mesh.check_same(&c.mesh, op);
    let (a, b, c) = (resolve_partial(a), resolve_partial(b), resolve_partial(c));
    let (target, full) = [(a.placement, &a.shape), (b.placement, &b.shape), (c.placement, &c.shape)]
        .into_iter()
        .find_map(|(p, s)| p.shard_dim().map(|d| (p, s[d])))
        .unwrap_or((Placement::Replicate, 0));
    if conforms(&a, target, full) && conforms(&b, target, full) && conforms(&c, target, full) {
        (conform(a, target), conform(b, target), conform(c, target), target)
    } else {
        (gather_for(op, a), gather_for(op, b), gather_for(op, c), Placement::Replicate)
    }
}

/// Runs a two-input op rank by rank on tensors already in `placement`.
pub(crate) fn zip2<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    placement: Placement,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    mut f: impl FnMut(K1::Prim, K2::Prim) -> K3::Prim,
) -> DTensor<B, K3> {
    let mesh = a.mesh.clone();
    let shards = a.shards.into_iter().zip(b.shards).map(|(x, y)| f(x, y)).collect();
    assemble(mesh, placement, shards)
}

/// Runs a three-input op rank by rank on tensors already in `placement`.
pub(crate) fn zip3<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>, K4: ShardKind<B>>(
    placement: Placement,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
    mut f: impl FnMut(K1::Prim, K2::Prim, K3::Prim) -> K4::Prim,
) -> DTensor<B, K4> {
    let mesh = a.mesh.clone();
    let shards = a.shards.into_iter().zip(b.shards).zip(c.shards).map(|((x, y), z)| f(x, y, z)).collect();
    assemble(mesh, placement, shards)
}

/// `mask_where` of any kind: the three operands aligned by [`align3`], then rank-local.
pub(crate) fn mask_where<B: Backend, K: ShardKind<B>>(
    op: &str,
    tensor: DTensor<B, K>,
    mask: DTensor<B, crate::kind::BoolKind>,
    value: DTensor<B, K>,
    f: impl FnMut(K::Prim, <crate::kind::BoolKind as ShardKind<B>>::Prim, K::Prim) -> K::Prim,
) -> DTensor<B, K> {
    let (tensor, mask, value, placement) = align3(op, tensor, mask, value);
    zip3(placement, tensor, mask, value, f)
}

/// An op without a rule on three inputs: all gathered, run everywhere, `Replicate` out.
pub(crate) fn gathered3<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
    f: impl FnMut(K1::Prim, K2::Prim, K3::Prim) -> K1::Prim,
) -> DTensor<B, K1> {
    let (a, b, c) =
        (resolve_partial(gather_for(op, a)), resolve_partial(gather_for(op, b)), resolve_partial(gather_for(op, c)));
    zip3(Placement::Replicate, a, b, c, f)
}

/// Gather / scatter-style ops: `tensor` and `indices` must agree on a placement that does not
/// shard `dim`; a Replicate partner is sliced to the other's shards for free.
pub(crate) fn align_indexed<B: Backend, K: ShardKind<B>>(
    op: &str,
    tensor: DTensor<B, K>,
    indices: DTensor<B, crate::kind::IntKind>,
    dim: usize,
) -> (DTensor<B, K>, DTensor<B, crate::kind::IntKind>, Placement) {
    use Placement::*;
    let tensor = resolve_partial(tensor);
    let indices = resolve_partial(indices);
    match (tensor.placement, indices.placement) {
        (Replicate, Replicate) => (tensor, indices, Replicate),
        (Shard(d), Shard(e)) if d == e && d != dim && tensor.shape[d] == indices.shape[d] => {
            (tensor, indices, Shard(d))
        }
        (Shard(d), Replicate) if d != dim && tensor.shape[d] == indices.shape[d] => {
            (tensor, crate::collectives::shard_locally(indices, d), Shard(d))
        }
        (Replicate, Shard(d)) if d != dim && tensor.shape[d] == indices.shape[d] => {
            (crate::collectives::shard_locally(tensor, d), indices, Shard(d))
        }
        _ => (gather_for(op, tensor), gather_for(op, indices), Replicate),
    }
}

/// `gather(dim, tensor, indices)` of any kind along an unsharded dimension.
pub(crate) fn gather_along<B: Backend, K: ShardKind<B>>(
    op: &str,
    dim: usize,
    tensor: DTensor<B, K>,
    indices: DTensor<B, crate::kind::IntKind>,
    f: impl FnMut(K::Prim, <crate::kind::IntKind as ShardKind<B>>::Prim) -> K::Prim,
) -> DTensor<B, K> {
    let (tensor, indices, placement) = align_indexed(op, tensor, indices, dim);
    zip2(placement, tensor, indices, f)
}

/// `select(tensor, dim, indices)` of any kind: local unless `dim` is the sharded one.
pub(crate) fn select_along<B: Backend, K: ShardKind<B>>(
    op: &str,
    dim: usize,
    tensor: DTensor<B, K>,
    indices: DTensor<B, crate::kind::IntKind>,
    f: impl FnMut(K::Prim, <crate::kind::IntKind as ShardKind<B>>::Prim) -> K::Prim,
) -> DTensor<B, K> {
    let indices = resolve_partial(gather_for(op, indices));
    let tensor = match tensor.placement {
        Placement::Shard(d) if d == dim => gather_for(op, tensor),
        _ => resolve_partial(tensor),
    };
    let placement = tensor.placement;
    zip2(placement, tensor, indices, f)
}

/// A full reduction (sum of all elements): each rank reduces its piece; shards give summands.
pub(crate) fn sum_all<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    f: impl FnMut(K::Prim) -> K::Prim,
) -> DTensor<B, K> {
    let placement = if t.placement == Placement::Replicate { Placement::Replicate } else { Placement::Partial };
    let mesh = t.mesh.clone();
    let shards = t.shards.into_iter().map(f).collect();
    assemble(mesh, placement, shards)
}
