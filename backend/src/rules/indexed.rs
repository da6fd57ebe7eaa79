//! Indexed ops (gather, scatter, select, select_add, slice_assign): rank-local when the
//! tensor, the indices and the values share a layout that does not split the indexed
//! dimension; gather along the sharded dimension picks per rank and sums.

use burn::tensor::Slice;

use crate::spec::placement::{can_shard, Placement};

use super::shape::covers_dim;
use super::strategy::{resolved, Context, Spec, Strategy};

/// How `gather(dim, tensor, indices)` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GatherRule {
    /// `dim` is the sharded one (picking each row's class logit out of column-split logits):
    /// every rank picks the indices that fall in its slice and contributes zeros elsewhere,
    /// so the result is a pending sum; only the indices are gathered.
    OnShardedDim(Strategy),
    /// Tensor and indices aligned on a layout that keeps `dim` whole (or gathered).
    Aligned(Strategy),
}

/// The layout tensor and indices agree on for an op along `dim`, with their targets.
fn align(tensor: &Spec, indices: &Spec, dim: usize, ctx: &Context) -> Strategy {
    use Placement::{Replicate as R, Shard as S};
    let (t, i) = (resolved(tensor.placement), resolved(indices.placement));
    let same_len = |d: usize| tensor.shape[d] == indices.shape[d] && can_shard(tensor.shape[d], ctx.ranks);
    match (t, i) {
        (R, R) => Strategy::local(vec![R, R], R),
        (S(d), S(e)) if d == e && d != dim && same_len(d) => Strategy::local(vec![S(d), S(d)], S(d)),
        (S(d), R) | (R, S(d)) if d != dim && same_len(d) => Strategy::local(vec![S(d), S(d)], S(d)),
        // Split along different dimensions: the indices re-split as the tensor is where that
        // keeps `dim` whole, else the tensor re-split as the indices are.
        (S(d), S(_)) if d != dim && same_len(d) => Strategy::local(vec![S(d), S(d)], S(d)),
        (S(_), S(e)) if e != dim && same_len(e) => Strategy::local(vec![S(e), S(e)], S(e)),
        _ => Strategy::gathered(2),
    }
}

/// The rule of `gather(dim, tensor, indices)`.
pub(crate) fn gather(tensor: &Spec, indices: &Spec, dim: usize, ctx: &Context) -> GatherRule {
    if tensor.placement == Placement::Shard(dim) && ctx.ranks > 1 {
        return GatherRule::OnShardedDim(Strategy::local(
            vec![Placement::Shard(dim), Placement::Replicate],
            Placement::PARTIAL_SUM,
        ));
    }
    GatherRule::Aligned(align(tensor, indices, dim, ctx))
}

/// The rule of `scatter_add(dim, tensor, indices, value)` (scatter_or for bool). Whole tensor
/// and value stay whole: the (small, integer) indices are gathered instead of the values
/// sliced, so the result can meet any layout later. Not between processes, where a gather is
/// a round trip over the network and the result a slice of whole tensors costs nothing. Else
/// the first split of an operand along a dimension other than `dim` that all three span sets
/// the layout, the others sliced or re-split to it; gathered otherwise.
pub(crate) fn scatter(tensor: &Spec, indices: &Spec, value: &Spec, dim: usize, ctx: &Context) -> Strategy {
    use Placement::{Replicate as R, Shard as S};
    let places = [tensor, indices, value].map(|s| resolved(s.placement));
    if places[0] == R && places[2] == R && !ctx.between_processes {
        return Strategy::local(vec![R, R, R], R);
    }
    let spans = |d: usize| {
        d != dim
            && [indices, value].iter().all(|s| s.shape.get(d) == tensor.shape.get(d))
            && can_shard(tensor.shape[d], ctx.ranks)
    };
    match places.iter().filter_map(|p| p.shard_dim()).find(|&d| spans(d)) {
        Some(d) => Strategy::local(vec![S(d), S(d), S(d)], S(d)),
        None => Strategy::gathered(3),
    }
}

/// The rule of `select(tensor, dim, indices)`: local unless `dim` is the sharded one; the
/// (small) indices are gathered.
pub(crate) fn select(tensor: &Spec, dim: usize) -> Strategy {
    let (t, gathered) = match resolved(tensor.placement) {
        Placement::Shard(d) if d == dim => (Placement::Replicate, true),
        p => (p, false),
    };
    let mut s = Strategy::local(vec![t, Placement::Replicate], t);
    // Gathering the indices is the rule (they are small); gathering the tensor is a fallback.
    s.fallback = gathered;
    s
}

/// The rule of `select_add(tensor, dim, indices, value)` (select_or for bool): local on a
/// split of the tensor or the value along another dimension that both span (the other sliced
/// or re-split to it), the (small) indices gathered; whole when both are whole; gathered
/// otherwise.
pub(crate) fn select_add(tensor: &Spec, dim: usize, value: &Spec) -> Strategy {
    use Placement::{Replicate as R, Shard as S};
    let places = [resolved(tensor.placement), resolved(value.placement)];
    let spans = |d: usize| d != dim && value.shape.get(d) == tensor.shape.get(d);
    match places.iter().filter_map(|p| p.shard_dim()).find(|&d| spans(d)) {
        Some(d) => Strategy::local(vec![S(d), R, S(d)], S(d)),
        None if places == [R, R] => Strategy::local(vec![R, R, R], R),
        None => Strategy::gathered(3),
    }
}

/// The rule of `slice_assign(tensor, slices, value)`: local on a shard whose dimension the
/// slices take whole (each rank writes its part of the value, split alike), and likewise on a
/// whole tensor whose value is split along such a dimension; local on a shard
/// whose dimension the slices cut to a range of step 1 (each rank writes the rows of the range
/// it holds, from a whole value: `slice_rows` says which; not along an outer dimension, whose
/// ranks are processes that each see their view); gathered otherwise.
pub(crate) fn slice_assign(tensor: &Spec, slices: &[Slice], value: &Spec, ctx: &Context) -> Strategy {
    match tensor.placement {
        Placement::Shard(d) if covers_dim(slices, &tensor.shape, d) && value.shape[d] == tensor.shape[d] => {
            Strategy::local(vec![tensor.placement, tensor.placement], tensor.placement)
        }
        Placement::Shard(d) if !ctx.between_processes && slice_rows(slices, &tensor.shape, d).is_some() => {
            Strategy::local(vec![tensor.placement, Placement::Replicate], tensor.placement)
        }
        // A whole tensor taking a value split along a dimension the slices take whole (Burn's
        // `pad` of a batch shard: zeros, then the shard written inside): each rank takes its
        // part of the tensor (a free local slice) and writes its part of the value.
        Placement::Replicate if !ctx.between_processes => match value.placement.shard_dim() {
            Some(d) if covers_dim(slices, &tensor.shape, d) && value.shape[d] == tensor.shape[d] => {
                Strategy::local(vec![value.placement, value.placement], value.placement)
            }
            _ => Strategy::gathered(2),
        },
        _ => Strategy::gathered(2),
    }
}

/// The rows `[start, end)` that `slices` take of dimension `d` of `shape`, where they take a
/// range of step 1 (negative ends counted from the end, as Burn counts them).
pub(crate) fn slice_rows(slices: &[Slice], shape: &burn::tensor::Shape, d: usize) -> Option<(usize, usize)> {
    let len = shape[d] as isize;
    let Some(s) = slices.get(d) else { return Some((0, len as usize)) };
    let resolve = |i: isize| if i < 0 { i + len } else { i };
    let (start, end) = (resolve(s.start), resolve(s.end.unwrap_or(len)));
    (s.step == 1 && 0 <= start && start <= end && end <= len).then_some((start as usize, end as usize))
}

/// What one rank does of a `slice_assign` whose rows `rows` of dimension `d` span the ranks
/// (the rule's second case): of its own rows `own`, the ones in the range, as slices of its
/// piece and of the whole value; `None` where it holds none of them.
pub(crate) fn slice_assign_part(
    slices: &[Slice],
    rank_dims: usize,
    d: usize,
    rows: (usize, usize),
    own: std::ops::Range<usize>,
) -> Option<(Vec<Slice>, Vec<Slice>)> {
    let (lo, hi) = (rows.0.max(own.start), rows.1.min(own.end));
    if lo >= hi {
        return None;
    }
    let mut piece: Vec<Slice> = slices.to_vec();
    piece.resize(rank_dims, Slice::new(0, None, 1));
    piece[d] = Slice::new((lo - own.start) as isize, Some((hi - own.start) as isize), 1);
    let mut value = vec![Slice::new(0, None, 1); rank_dims];
    value[d] = Slice::new((lo - rows.0) as isize, Some((hi - rows.0) as isize), 1);
    Some((piece, value))
}
