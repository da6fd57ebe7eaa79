//! Convolutions and pooling: one table for conv2d and its three backward passes (which layout
//! the forward pass ran in decides every pass), pooling and resizing local on batch or
//! channel shards.

use crate::spec::placement::{can_shard, Placement, ReduceOp};

use super::strategy::{resolved, Context, Spec, Strategy};

/// How a convolution runs, from the placements of input and weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConvLayout {
    /// Batch shards against a whole weight: data parallel, output Shard(0).
    DataParallel,
    /// Channel shards (or a whole input, sliced on arrival) against filter shards, whole
    /// groups per rank (the towers of the 2012 split): output Shard(1), each rank running
    /// `groups / K` groups.
    Towers,
    /// Channel shards meeting a full (groups = 1) conv: the input's channels gathered first.
    GatherChannels,
    /// Whole input against filter shards: output Shard(1).
    FilterShards,
    /// Everything whole.
    Replicated,
}

/// Which pass of a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConvPass {
    /// `conv2d(x, w, bias)`: inputs x, w, bias (if any).
    Forward,
    /// `conv2d_x_backward(x, w, grad)`.
    InputGrad,
    /// `conv2d_weight_backward(x, w, grad)`.
    WeightGrad,
    /// `conv2d_bias_backward(x, bias, grad)`.
    BiasGrad,
}

fn layout(x: &Spec, w: &Spec, groups: usize, ctx: &Context) -> Option<ConvLayout> {
    use Placement::{Replicate as R, Shard as S};
    let k = ctx.ranks;
    let (batch, in_channels, out_channels) = (x.shape[0], x.shape[1], w.shape[0]);
    let towers_align = groups % k == 0 && in_channels % k == 0 && out_channels % k == 0;
    match (resolved(x.placement), resolved(w.placement)) {
        (S(0), R) => Some(ConvLayout::DataParallel),
        // Batch shards against filters split another way: the filters are made whole.
        (S(0), S(_)) => Some(ConvLayout::DataParallel),
        // A whole batch meeting a whole weight (a batch from an ordinary data loader) is
        // sharded on arrival, a free local slice, instead of every rank convolving all of it;
        // not between processes, where a whole batch on each is what the plan asked for (the
        // nodes of a mesh each given the whole batch: no gradient is then summed over them).
        (R, R) if k > 1 && can_shard(batch, k) && !ctx.between_processes => Some(ConvLayout::DataParallel),
        (S(1), S(0)) if groups > 1 && towers_align => Some(ConvLayout::Towers),
        // A whole input meeting filter shards of whole groups: each rank takes its groups'
        // channels of it (a free local slice) and runs as a tower; not between processes,
        // whose whole copies need not agree.
        (R, S(0)) if groups > 1 && towers_align && !ctx.between_processes => Some(ConvLayout::Towers),
        (S(1), S(0)) if groups == 1 => Some(ConvLayout::GatherChannels),
        (R, S(0)) if groups == 1 => Some(ConvLayout::FilterShards),
        (R, R) => Some(ConvLayout::Replicated),
        _ => None,
    }
}

/// The rule of one pass of a 2d convolution with `groups` groups. `specs` are the pass's
/// inputs in the order of [`ConvPass`] (`third` is the bias for the forward pass, the output
/// gradient for the backward passes). Returns the layout too: under
/// [`ConvLayout::Towers`] each rank runs `groups / K` groups.
pub(crate) fn conv(
    pass: ConvPass,
    x: &Spec,
    w: &Spec,
    third: Option<&Spec>,
    groups: usize,
    ctx: &Context,
) -> (Strategy, ConvLayout) {
    use Placement::{Replicate as R, Shard as S};
    const SUM: Placement = Placement::Partial(ReduceOp::Sum);
    let n = 2 + usize::from(third.is_some());
    let gathered = (Strategy::gathered(n), ConvLayout::Replicated);
    match pass {
        ConvPass::Forward => {
            let (xp, wp) = (resolved(x.placement), resolved(w.placement));
            let Some(lay) = layout(x, w, groups, ctx) else { return gathered };
            let (xin, out) = match lay {
                ConvLayout::DataParallel => (S(0), S(0)),
                ConvLayout::Towers => (S(1), S(1)),
                ConvLayout::FilterShards => (xp, S(1)),
                ConvLayout::GatherChannels => (R, S(1)),
                ConvLayout::Replicated => (R, R),
            };
            let mut inputs = vec![xin, if lay == ConvLayout::DataParallel { R } else { wp }];
            if third.is_some() {
                inputs.push(if out == S(1) { S(0) } else { R });
            }
            (Strategy::local(inputs, out), lay)
        }
        ConvPass::InputGrad | ConvPass::WeightGrad => {
            let grad = resolved(third.expect("a backward pass has an output gradient").placement);
            // Partial inputs are not resolved here: a backward pass finds its inputs in the
            // layout the forward pass left them in.
            let lay =
                if x.placement.is_partial() || w.placement.is_partial() { None } else { layout(x, w, groups, ctx) };
            let (xp, wp) = (x.placement, w.placement);
            let (inputs, out) = match (pass, lay, grad) {
                // A whole gradient (of a sum, say) is sliced to the batch shards for free.
                (ConvPass::InputGrad, Some(ConvLayout::DataParallel), S(0) | R) => ([S(0), R, S(0)], S(0)),
                (ConvPass::InputGrad, Some(ConvLayout::Towers), S(1)) => ([S(1), wp, grad], S(1)),
                // Each rank's filters contribute to every input channel: summands.
                (ConvPass::InputGrad, Some(ConvLayout::GatherChannels | ConvLayout::FilterShards), S(1)) => {
                    ([xp, wp, grad], SUM)
                }
                // Batch shards: each rank's weight gradient is a summand, synced when consumed.
                (ConvPass::WeightGrad, Some(ConvLayout::DataParallel), S(0) | R) => ([S(0), R, S(0)], SUM),
                (ConvPass::WeightGrad, Some(ConvLayout::Towers), S(1)) => ([S(1), wp, grad], S(0)),
                (ConvPass::WeightGrad, Some(ConvLayout::GatherChannels), S(1)) => ([R, wp, grad], S(0)),
                (ConvPass::WeightGrad, Some(ConvLayout::FilterShards), S(1)) => ([xp, wp, grad], S(0)),
                (_, Some(ConvLayout::Replicated), R) => ([xp, wp, grad], R),
                _ => return gathered,
            };
            (Strategy::local(inputs.to_vec(), out), lay.expect("matched a layout"))
        }
        ConvPass::BiasGrad => {
            // `w` is the bias here. The inner op reads the batch size from `x`: its rows must
            // be split as the gradient's.
            let grad = resolved(third.expect("a backward pass has an output gradient").placement);
            // A whole input whose gradient arrives in batch shards was sharded on arrival.
            let batch_split = x.placement == S(0) || (x.placement == R && grad == S(0));
            let (xp, bp) = (if batch_split { S(0) } else { x.placement }, w.placement);
            let (bp, out) = match (grad, bp) {
                // The bias is only read for its shape: a split one is made whole.
                (S(0), R | S(_)) if batch_split => (R, SUM),
                (S(1), S(0)) if !batch_split => (bp, S(0)),
                (R, R) if !batch_split => (bp, R),
                _ => return gathered,
            };
            (Strategy::local(vec![xp, bp, grad], out), ConvLayout::Replicated)
        }
    }
}

/// The rule of a convolution with no layout table of its own (1-D and 3-D, transposed,
/// conv2d's transposed form): batch shards run data parallel, the filter and bias made whole
/// for them; anything else is gathered.
pub(crate) fn batch_conv(x: &Spec, has_bias: bool) -> Strategy {
    use Placement::{Replicate as R, Shard as S};
    match resolved(x.placement) {
        S(0) => Strategy::local([vec![S(0), R], has_bias.then_some(R).into_iter().collect()].concat(), S(0)),
        _ => Strategy::gathered(2 + usize::from(has_bias)),
    }
}

/// The rule of a gradient of a [`batch_conv`] (input `x`, filter, output gradient): rank-local
/// on batch shards of input and gradient, the filter made whole, the result `out` (the input
/// gradient stays split; the filter gradient is a summand per rank); gathered otherwise.
pub(crate) fn batch_conv_grad(x: &Spec, grad: &Spec, out: Placement, ctx: &Context) -> Strategy {
    use Placement::{Replicate as R, Shard as S};
    let split = |s: &Spec| s.placement == S(0) && s.shape[0] >= ctx.ranks;
    if split(x) && split(grad) {
        return Strategy::local(vec![S(0), R, S(0)], out);
    }
    Strategy::gathered(3)
}

/// Pooling and resizing work per image and per channel: batch or channel shards stay local.
fn spatially_local(p: Placement) -> bool {
    matches!(p, Placement::Shard(0) | Placement::Shard(1) | Placement::Replicate)
}

/// The rule of a pooling or resizing op on `x`.
pub(crate) fn pool(x: &Spec) -> Strategy {
    let p = resolved(x.placement);
    if spatially_local(p) {
        Strategy::local(vec![p], p)
    } else {
        Strategy::gathered(1)
    }
}

/// The rule of a pooling backward on `x`, its output gradient and any further inputs laid out
/// like the output (max pooling's indices): all local in `x`'s layout, the gradient's pending
/// sums reduce-scattered onto it.
pub(crate) fn pool_backward(x: &Spec, grad: &Spec, rest: &[Spec]) -> Strategy {
    let n = 2 + rest.len();
    let g = match (grad.placement, x.placement) {
        (Placement::Partial(_), Placement::Shard(d)) => Placement::Shard(d),
        (p, _) => resolved(p),
    };
    if g == x.placement && spatially_local(x.placement) && rest.iter().all(|s| s.placement == x.placement) {
        Strategy::local(vec![x.placement; n], x.placement)
    } else {
        Strategy::gathered(n)
    }
}
