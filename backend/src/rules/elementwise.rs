//! Elementwise ops of any arity (unary, binary with broadcasting, `mask_where`): rank-local
//! when the operands can agree on one placement for free, pending sums kept through linear
//! ops, reduce-scattered onto a sharded partner or all-reduced otherwise, gathered as a last
//! resort.

use crate::mutation::{self, Mutation};
use crate::spec::placement::{can_shard, Placement, ReduceOp};

use super::strategy::{resolved, Context, Spec, Strategy};

/// How an elementwise op treats `Partial` (pending-sum) operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linearity {
    /// Not linear: every pending sum is made whole first.
    None,
    /// A one-input op linear in its input (negation, scaling, casts): a sum stays a sum.
    Linear,
    /// `P op P` stays a summand (add, sub).
    Additive,
    /// `P op R` and `R op P` stay summands (mul).
    Scaling,
    /// `P op R` stays a summand (div by a whole value; a backward linear in the gradient).
    LeftScaling,
}

const SUM: Placement = Placement::Partial(ReduceOp::Sum);

/// The output placement when pending sums can pass through the op untouched.
fn through_linear(lin: Linearity, places: &[Placement]) -> Option<Placement> {
    use Placement::Replicate as R;
    match (places, lin) {
        ([p], _) if p.is_partial() && mutation::active(Mutation::NonlinearOnSummands) => Some(*p),
        ([SUM], Linearity::Linear) => Some(SUM),
        ([SUM, SUM], Linearity::Additive) => Some(SUM),
        ([SUM, SUM], Linearity::Scaling) if mutation::active(Mutation::ProductOfSummands) => Some(SUM),
        ([SUM, R], Linearity::Scaling | Linearity::LeftScaling) => Some(SUM),
        ([R, SUM], Linearity::Scaling) => Some(SUM),
        _ => None,
    }
}

/// The rule of an elementwise op over `specs` (broadcasting shapes; operands of lower rank are
/// aligned to the output's last dimensions, as NumPy and Burn's backends broadcast them).
pub(crate) fn elementwise(lin: Linearity, specs: &[Spec], ctx: &Context) -> Strategy {
    let rank = specs.iter().map(|s| s.shape.len()).max().unwrap_or(0);
    if specs.iter().any(|s| s.shape.len() != rank) {
        // Decided in the output's dimensions, each operand padded with leading ones; then each
        // operand's placement said in its own (a split of a dimension it lacks is none).
        let padded: Vec<Spec> = specs.iter().map(|s| padded(s, rank)).collect();
        let mut s = elementwise(lin, &padded, ctx);
        for (p, spec) in s.inputs.iter_mut().zip(specs) {
            let lead = rank - spec.shape.len();
            *p = match *p {
                Placement::Shard(d) if d >= lead => Placement::Shard(d - lead),
                Placement::Shard(_) => Placement::Replicate,
                q => q,
            };
        }
        return s;
    }
    let places: Vec<Placement> = specs.iter().map(|s| s.placement).collect();
    if places.iter().all(|p| *p == Placement::Replicate) {
        return Strategy::local(places, Placement::Replicate);
    }
    // A pending sum broadcast to a larger output is summed first, at its own size: carried
    // through, it would be summed later at the output's (the backward pass of a mean over a
    // split batch multiplies a per-channel pending gradient into the activations' shape).
    let rank = specs.iter().map(|s| s.shape.len()).max().unwrap_or(0);
    let out_elements: usize =
        (0..rank).map(|i| specs.iter().filter_map(|s| s.shape.get(i)).copied().max().unwrap_or(1)).product();
    let grows = specs
        .iter()
        .any(|s| matches!(s.placement, Placement::Partial(_)) && s.shape.iter().product::<usize>() < out_elements);
    if !grows {
        if let Some(out) = through_linear(lin, &places) {
            return Strategy::local(places, out);
        }
    }
    // Pending sums are made whole in the layout of a sharded partner (a reduce-scatter, half
    // an all-reduce's traffic) or all-reduced.
    let partner = places.iter().find_map(|p| p.shard_dim());
    let settled: Vec<Placement> = specs
        .iter()
        .map(|s| match (s.placement, partner) {
            (Placement::Partial(_), Some(d)) if ctx.ranks > 1 && can_shard(s.shape[d], ctx.ranks) => {
                Placement::Shard(d)
            }
            (p, _) => resolved(p),
        })
        .collect();
    // The first sharded operand sets the layout; the others follow if they can for free (a
    // whole operand broadcast along it or sliced to it) or by a re-shard of an equal shape.
    let lead = settled.iter().position(|p| p.shard_dim().is_some());
    let Some(lead) = lead else {
        return Strategy::local(settled, Placement::Replicate);
    };
    let target = settled[lead];
    let d = target.shard_dim().expect("a sharded lead");
    let full = specs[lead].shape[d];
    let lead_shape = &specs[lead].shape;
    let mut inputs = Vec::with_capacity(specs.len());
    for (s, p) in specs.iter().zip(&settled) {
        let to = match *p {
            q if q == target && s.shape[d] == full => Some(target),
            Placement::Replicate if s.shape[d] == 1 => Some(Placement::Replicate),
            Placement::Replicate if s.shape[d] == full && can_shard(full, ctx.ranks) => Some(target),
            Placement::Shard(_) if &s.shape == lead_shape => Some(target),
            // Split along another dimension: gathered where it broadcasts along the lead's,
            // re-split to the lead's layout where it spans it.
            Placement::Shard(_) if s.shape[d] == 1 => Some(Placement::Replicate),
            Placement::Shard(_) if s.shape[d] == full && can_shard(full, ctx.ranks) => Some(target),
            _ => None,
        };
        match to {
            Some(t) => inputs.push(t),
            None => return Strategy::gathered(specs.len()),
        }
    }
    Strategy::local(inputs, target)
}

/// `spec` with `rank - len` leading dimensions of one, its split moved along.
fn padded(spec: &Spec, rank: usize) -> Spec {
    let lead = rank - spec.shape.len();
    let mut dims = vec![1; lead];
    dims.extend(spec.shape.iter());
    let placement = match spec.placement {
        Placement::Shard(d) => Placement::Shard(d + lead),
        p => p,
    };
    Spec { shape: dims.into(), placement, kept_whole: spec.kept_whole }
}

/// The rule of an op elementwise in every dimension but `dim`, whose entries it mixes (the
/// cross product): as elementwise unless that would leave `dim` sharded, then gathered.
pub(crate) fn elementwise_except(dim: usize, specs: &[Spec], ctx: &Context) -> Strategy {
    let s = elementwise(Linearity::None, specs, ctx);
    if s.output == Placement::Shard(dim) {
        Strategy::gathered(specs.len())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Placement::{Replicate as R, Shard as S};

    fn spec(shape: &[usize], p: Placement) -> Spec {
        Spec::new(shape.to_vec(), p)
    }

    #[test]
    fn binary_rules_follow_the_table() {
        let ctx = Context::new(2);
        // Shard with a broadcast row stays sharded, nothing moves.
        let s = elementwise(Linearity::None, &[spec(&[4, 3], S(0)), spec(&[1, 3], R)], &ctx);
        assert_eq!((s.inputs.clone(), s.output, s.fallback), (vec![S(0), R], S(0), false));
        // A pending sum meets a shard: reduce-scattered onto it.
        let s = elementwise(Linearity::Additive, &[spec(&[4, 3], SUM), spec(&[4, 3], S(1))], &ctx);
        assert_eq!((s.inputs.clone(), s.output), (vec![S(1), S(1)], S(1)));
        // Sums add without communication; a product of sums needs them whole.
        assert_eq!(elementwise(Linearity::Additive, &[spec(&[4], SUM), spec(&[4], SUM)], &ctx).output, SUM);
        let s = elementwise(Linearity::Scaling, &[spec(&[4], SUM), spec(&[4], SUM)], &ctx);
        assert_eq!((s.inputs.clone(), s.output), (vec![R, R], R));
        // A pending sum broadcast to a larger shape is summed at its own size first.
        let s = elementwise(Linearity::Scaling, &[spec(&[4, 3], R), spec(&[1, 3], SUM)], &ctx);
        assert_eq!((s.inputs.clone(), s.output), (vec![R, R], R));
        let s = elementwise(Linearity::Scaling, &[spec(&[4, 3], S(0)), spec(&[1, 3], SUM)], &ctx);
        assert_eq!((s.inputs.clone(), s.output), (vec![S(0), R], S(0)));
        // Operands of lower rank align to the last dimensions: a matrix split by rows against a
        // vector, a 3-D tensor split along its middle dimension against a 2-D one split by rows.
        let s = elementwise(Linearity::None, &[spec(&[4, 3], S(0)), spec(&[3], R)], &ctx);
        assert_eq!((s.inputs.clone(), s.output), (vec![S(0), R], S(0)));
        let s = elementwise(Linearity::None, &[spec(&[2, 4, 5], S(1)), spec(&[4, 1], S(0))], &ctx);
        assert_eq!((s.inputs.clone(), s.output), (vec![S(1), S(0)], S(1)));
        let s = elementwise(Linearity::None, &[spec(&[2, 4, 5], S(2)), spec(&[4, 5], R)], &ctx);
        assert_eq!((s.inputs.clone(), s.output), (vec![S(2), S(1)], S(2)));
        // Operands split along different dimensions: the outer product's row vector gathered
        // (it broadcasts along the lead's split), a spanning one re-split to the lead's layout.
        let s = elementwise(Linearity::None, &[spec(&[4, 1], S(0)), spec(&[1, 6], S(1))], &ctx);
        assert_eq!((s.inputs.clone(), s.output, s.fallback), (vec![S(0), R], S(0), false));
        let s = elementwise(Linearity::None, &[spec(&[4, 6], S(0)), spec(&[4, 1], R), spec(&[4, 6], S(1))], &ctx);
        assert_eq!((s.inputs.clone(), s.output, s.fallback), (vec![S(0), S(0), S(0)], S(0), false));
        let s = elementwise(Linearity::None, &[spec(&[2, 4, 6], S(0)), spec(&[4, 6], S(0))], &ctx);
        assert_eq!((s.inputs.clone(), s.output, s.fallback), (vec![S(0), R], S(0), false));
    }
}
