//! Reductions: along a dimension (sum, mean, max, cumulative ops, argmax) and over all
//! elements. Rank-local unless the reduced dimension is the sharded one, where local results
//! are summands, maxima to combine, candidates to compare, or (no rule) gathered.

use crate::spec::placement::{Placement, ReduceOp};

use super::elementwise::{elementwise, Linearity};
use super::strategy::{Context, Spec, Strategy};

/// What a reduction along a dimension does when that dimension is the sharded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardedReduce {
    /// Local results are summands (sum; mean as a sum scaled afterwards): output `Partial`.
    Sum,
    /// Local maxima, combined at once by an all-reduce(max).
    Max,
    /// No rule (products, cumulative ops, top-k): gather.
    Gather,
}

/// The rule of a reduction of `spec` along `dim` that keeps the dimension (size 1).
pub(crate) fn reduce_dim(spec: &Spec, dim: usize, on_sharded: ShardedReduce, ctx: &Context) -> Strategy {
    let p = spec.placement;
    // A rank with no rows of the reduced dimension has nothing to reduce: gather instead.
    let on_sharded =
        if p == Placement::Shard(dim) && spec.shape[dim] < ctx.ranks { ShardedReduce::Gather } else { on_sharded };
    match (p, on_sharded) {
        (Placement::Shard(d), ShardedReduce::Sum) if d == dim => Strategy::local(vec![p], Placement::PARTIAL_SUM),
        (Placement::Shard(d), ShardedReduce::Max) if d == dim => {
            Strategy { then: Some(Placement::Replicate), ..Strategy::local(vec![p], Placement::Partial(ReduceOp::Max)) }
        }
        (Placement::Shard(d), ShardedReduce::Gather) if d == dim => Strategy::gathered(1),
        (Placement::Partial(ReduceOp::Sum), ShardedReduce::Sum) => Strategy::local(vec![p], p),
        _ => elementwise(Linearity::None, std::slice::from_ref(spec), ctx),
    }
}

/// The rule of a sum of all elements: each rank sums its piece; pieces of a shard are summands.
pub(crate) fn reduce_all(spec: &Spec) -> Strategy {
    match spec.placement {
        Placement::Replicate => Strategy::local(vec![Placement::Replicate], Placement::Replicate),
        Placement::Partial(ReduceOp::Max) => Strategy::local(vec![Placement::Replicate], Placement::Replicate),
        p => Strategy::local(vec![p], Placement::PARTIAL_SUM),
    }
}

/// How argmax / argmin along `dim` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgRule {
    /// `dim` is sharded and every rank holds some of it: each rank finds its best value and
    /// its global index (a `Shard(dim)` pair of size K along `dim`), the candidates are
    /// all-gathered and every rank picks the first best.
    Candidates,
    /// Any other case: as a reduction with no rule on the sharded dimension.
    Reduce(Strategy),
}

/// The rule of argmax / argmin of `spec` along `dim`.
pub(crate) fn arg_extreme(spec: &Spec, dim: usize, ctx: &Context) -> ArgRule {
    if spec.placement == Placement::Shard(dim) && ctx.ranks > 1 && spec.shape[dim] >= ctx.ranks {
        ArgRule::Candidates
    } else {
        ArgRule::Reduce(reduce_dim(spec, dim, ShardedReduce::Gather, ctx))
    }
}
