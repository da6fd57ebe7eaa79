//! Matmul `[.., m, k] x [.., k, n]`: data parallel on row or batch shards, model parallel on
//! column-split weights (activities exchanged by the chosen scheme), summands when the
//! contraction dimension is split.

use crate::spec::placement::{Placement, ReduceOp};
use crate::spec::scheme::Exchange;

use super::strategy::{Context, Run, Spec, Strategy};

/// The rule of `lhs @ rhs`. A left operand kept whole on every rank (a matmul gathered it
/// before: the FC input meeting its weight gradient) is used whole wherever the rule would
/// otherwise move it.
pub(crate) fn matmul(lhs: &Spec, rhs: &Spec, ctx: &Context) -> Strategy {
    let s = placed_matmul(lhs, rhs, ctx);
    let moves_lhs = s.inputs[0] != lhs.placement || matches!(s.run, Run::Exchange { .. });
    if lhs.kept_whole && moves_lhs {
        return placed_matmul(&Spec::new(lhs.shape.clone(), Placement::Replicate), rhs, ctx);
    }
    s
}

/// The rule of `lhs @ rhs` from the placements alone.
fn placed_matmul(lhs: &Spec, rhs: &Spec, ctx: &Context) -> Strategy {
    use Placement::{Replicate as R, Shard as S};
    const SUM: Placement = Placement::Partial(ReduceOp::Sum);
    let n = lhs.shape.num_dims();
    let (row, inner, last) = (n - 2, n - 1, n - 1);
    let local = |l: Placement, r: Placement, out: Placement| Strategy::local(vec![l, r], out);
    // What the other operand must hold against a batch shard `d` of one: its own rows of `d`,
    // or all of it where it broadcasts along `d` (size 1).
    let batch = |other: &Spec, d: usize| if other.shape[d] == 1 { R } else { S(d) };
    match (lhs.placement, rhs.placement) {
        (R, R) => local(R, R, R),
        // Data parallel: batch shards against the same batch shards of a whole right operand.
        (S(d), R) if d < row => local(S(d), batch(rhs, d), S(d)),
        // Data parallel: row shards against a whole weight.
        (S(d), R) if d == row => local(S(d), R, S(d)),
        // Contraction dimension split on the left only: the right sliced for free, summands out.
        (S(d), R) if d == inner => local(S(d), S(row), SUM),
        // Batched matmul with the same batch shards on both sides.
        (S(d), S(e)) if d == e && d < row => local(S(d), S(d), S(d)),
        // Batched matmul, whole left against batch shards on the right: the left sliced (or
        // kept whole where it broadcasts along the batch dimension).
        (R, S(d)) if d < row => local(batch(lhs, d), S(d), S(d)),
        // Model parallel: whole input against column-split weight.
        (R, S(d)) if d == last => local(R, S(last), S(last)),
        // Contraction dimension split on both sides: each rank holds a summand.
        (S(d), S(e)) if d == inner && e == row => local(S(d), S(e), SUM),
        (R, S(e)) if e == row => local(S(inner), S(row), SUM),
        // Activities exchanged in rounds (schemes b, c), then model parallel.
        (S(d), S(e))
            if e == last && (d == row || d == inner) && lhs.shape[d] > 0 && ctx.exchange != Exchange::AllGather =>
        {
            Strategy { run: Run::Exchange { scheme: ctx.exchange, dim: d }, ..local(S(d), S(last), S(last)) }
        }
        // Activities all-gathered (scheme a) or columns gathered, then model parallel.
        (S(_), S(e)) if e == last => local(R, S(last), S(last)),
        // Batch or row shards on the left against a right operand split some other way: the
        // right gathered to what the shard needs (its own batch rows, or whole).
        (S(d), S(_)) if d < row => local(S(d), batch(rhs, d), S(d)),
        (S(d), S(_)) if d == row => local(S(d), R, S(d)),
        // Contraction dimension split on the left: the right moved to the same split, summands out.
        (S(d), S(_)) if d == inner => local(S(d), S(row), SUM),
        // Batch shards on the right against a left operand split along its rows or contraction.
        (S(_), S(e)) if e < row => local(batch(lhs, e), S(e), S(e)),
        // Linear in each argument.
        (SUM, R) => local(SUM, R, SUM),
        (R, SUM) => local(R, SUM, SUM),
        _ => Strategy::gathered(2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Placement::{Replicate as R, Shard as S};

    #[test]
    fn the_scheme_is_an_argument() {
        let (x, w) = (Spec::new([8, 6], S(0)), Spec::new([6, 4], S(1)));
        let a = matmul(&x, &w, &Context::new(2));
        assert_eq!((a.inputs.clone(), a.run), (vec![R, S(1)], Run::Local));
        let b = matmul(&x, &w, &Context { exchange: Exchange::Broadcast, ..Context::new(2) });
        assert_eq!(
            (b.inputs.clone(), b.run),
            (vec![S(0), S(1)], Run::Exchange { scheme: Exchange::Broadcast, dim: 0 })
        );
    }

    #[test]
    fn a_kept_left_operand_is_used_whole_instead_of_moved() {
        // The weight gradient x^T @ dy: x^T is sharded on the contraction dimension.
        let (xt, dy) = (Spec::new([6, 8], S(1)), Spec::new([8, 4], S(1)));
        for exchange in [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices] {
            let ctx = Context { exchange, ..Context::new(2) };
            let moved = matmul(&xt, &dy, &ctx);
            assert!(moved.inputs[0] != S(1) || moved.run != Run::Local, "{exchange:?}: moves without a kept copy");
            let s = matmul(&xt.clone().kept(), &dy, &ctx);
            assert_eq!((s.inputs, s.output, s.run), (vec![R, S(1)], S(1), Run::Local), "{exchange:?}");
        }
        // A kept copy changes nothing where the sharded operand does not move.
        let (x, w) = (Spec::new([8, 6], S(0)), Spec::new([6, 4], R));
        assert_eq!(matmul(&x.clone().kept(), &w, &Context::new(2)), matmul(&x, &w, &Context::new(2)));
    }
}
