//! The rule table of `backend/README.md`, computed from the registry: each row is an example
//! of an op family's inputs, and its output placement and communication are what the family's
//! rule decides for them (a test fails when the README's table and this one disagree).

use burn::tensor::Slice;

use crate::spec::placement::{Placement, ReduceOp};
use crate::spec::scheme::Exchange;

use super::{
    arg_extreme, batch_conv, cat, conv, elementwise, expand, flip, gather, matmul, permute, pool, pool_backward,
    reduce_all, reduce_dim, reshape, scatter, select, slice, slice_assign, unfold, ArgRule, Context, ConvPass,
    GatherRule, Linearity, Run, ShardedReduce, Spec, Strategy,
};

/// One row: an op with named example inputs, the strategy its rule picks, and why.
struct Row {
    op: &'static str,
    inputs: Vec<(&'static str, Spec)>,
    strategy: Strategy,
    why: &'static str,
    /// Communication the op does itself beyond its strategy's (argmax's candidates).
    extra: Option<&'static str>,
}

fn short(p: Placement) -> String {
    match p {
        Placement::Replicate => "R".into(),
        Placement::Shard(d) => format!("S({d})"),
        Placement::Partial(ReduceOp::Sum) => "P".into(),
        Placement::Partial(ReduceOp::Max) => "P(max)".into(),
    }
}

/// What bringing `name` from `from` to `to` costs, in the words of `collectives.rs`.
fn movement(name: &str, from: Placement, to: Placement) -> Option<String> {
    use Placement::*;
    if from == to {
        return None;
    }
    let what = match (from, to) {
        (Replicate, Replicate) => return None,
        (Replicate, Shard(d)) => format!("{name} sliced on {d} (local)"),
        (Replicate, Partial(_)) => format!("{name} kept on rank 0 (local)"),
        (Shard(e), Replicate) => format!("all_gather {name} on {e}"),
        (Shard(e), Shard(d)) => format!("all_gather {name} on {e} + slice on {d}"),
        (Shard(e), Partial(_)) => format!("all_gather {name} on {e}"),
        (Partial(ReduceOp::Max), Replicate) => format!("all_reduce(max) {name}"),
        (Partial(_), Replicate) => format!("all_reduce {name}"),
        (Partial(_), Shard(d)) => format!("reduce_scatter {name} onto {d}"),
        (Partial(_), Partial(_)) => format!("all_reduce {name}"),
    };
    Some(what)
}

fn communication(row: &Row) -> String {
    let s = &row.strategy;
    let mut parts: Vec<String> = row
        .inputs
        .iter()
        .zip(&s.inputs)
        .filter_map(|((name, spec), to)| match spec.kept_whole {
            true => Some(format!("{name} taken from its kept whole copy (local)")),
            false => movement(name, spec.placement, *to),
        })
        .collect();
    match s.run {
        Run::Exchange { scheme, dim } => parts.push(format!(
            "{} exchanged on {dim} in rounds (scheme {}: {})",
            row.inputs[0].0,
            scheme.letter(),
            match scheme {
                Exchange::Broadcast =>
                    "each round a broadcast of one rank's piece, the next issued before this round's matmul",
                _ => "each round an all_gather of every rank's j-th 1/K slice",
            }
        )),
        Run::OnOwner { .. } => parts.push("run on the rank that holds the rows, broadcast".into()),
        Run::Local => {}
    }
    if let Some(p) = s.then {
        if let Some(m) = movement("the output", s.output, p) {
            parts.push(m);
        }
    }
    parts.extend(row.extra.map(str::to_string));
    if s.fallback && !parts.is_empty() {
        parts.push("counted as a fallback".into());
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join("; ")
    }
}

fn spec(shape: &[usize], p: Placement) -> Spec {
    Spec::new(shape.to_vec(), p)
}

fn rows() -> Vec<Row> {
    use Placement::{Replicate as R, Shard as S};
    const P: Placement = Placement::PARTIAL_SUM;
    let k2 = Context { ranks: 2, between_processes: false, exchange: Exchange::AllGather };
    let with = |exchange| Context { exchange, ..k2 };
    let row = |op, inputs: Vec<(&'static str, Spec)>, strategy, why| Row { op, inputs, strategy, why, extra: None };
    let conv_row = |op, pass, x: Spec, w: Spec, third: Option<(&'static str, Spec)>, groups, why| {
        let (s, _) = conv(pass, &x, &w, third.as_ref().map(|t| &t.1), groups, &k2);
        let mut inputs = vec![("x", x), (if pass == ConvPass::BiasGrad { "b" } else { "w" }, w)];
        inputs.extend(third);
        Row { op, inputs, strategy: s, why, extra: None }
    };
    let (x4, w4, g4) = ([8, 8, 12, 12], [16, 8, 3, 3], [8, 16, 10, 10]);
    let mut rows = vec![
        conv_row(
            "conv2d",
            ConvPass::Forward,
            spec(&x4, S(0)),
            spec(&w4, R),
            Some(("b", spec(&[16], R))),
            1,
            "data parallel",
        ),
        conv_row(
            "conv2d",
            ConvPass::Forward,
            spec(&x4, R),
            spec(&w4, R),
            None,
            1,
            "a whole batch is sharded on arrival (data parallel), not run K times",
        ),
        conv_row(
            "conv2d weight grad",
            ConvPass::WeightGrad,
            spec(&x4, S(0)),
            spec(&w4, R),
            Some(("dy", spec(&g4, S(0)))),
            1,
            "batch shards: summands, synced when consumed",
        ),
        conv_row(
            "conv2d bias grad",
            ConvPass::BiasGrad,
            spec(&x4, S(0)),
            spec(&[16], R),
            Some(("dy", spec(&g4, S(0)))),
            1,
            "batch shards: summands",
        ),
        conv_row(
            "conv2d, groups 2",
            ConvPass::Forward,
            spec(&x4, S(1)),
            spec(&[16, 4, 3, 3], S(0)),
            Some(("b", spec(&[16], S(0)))),
            2,
            "two towers: each rank runs groups / K",
        ),
        conv_row(
            "conv2d, groups 2",
            ConvPass::Forward,
            spec(&x4, R),
            spec(&[16, 4, 3, 3], S(0)),
            Some(("b", spec(&[16], S(0)))),
            2,
            "a whole input meeting filters split by whole groups: each rank takes its groups' channels, a tower",
        ),
        conv_row(
            "conv2d, groups 1",
            ConvPass::Forward,
            spec(&x4, S(1)),
            spec(&w4, S(0)),
            None,
            1,
            "conv3 of the two towers",
        ),
        conv_row(
            "conv2d x grad, groups 1",
            ConvPass::InputGrad,
            spec(&x4, S(1)),
            spec(&w4, S(0)),
            Some(("dy", spec(&g4, S(1)))),
            1,
            "each rank's filters reach every input channel",
        ),
        conv_row(
            "conv2d weight grad, groups 1",
            ConvPass::WeightGrad,
            spec(&x4, S(1)),
            spec(&w4, S(0)),
            Some(("dy", spec(&g4, S(1)))),
            1,
            "conv3 of the two towers",
        ),
        conv_row("conv2d", ConvPass::Forward, spec(&x4, R), spec(&w4, S(0)), None, 1, "conv1 of the two towers"),
        conv_row(
            "conv2d",
            ConvPass::Forward,
            spec(&x4, S(0)),
            spec(&w4, S(0)),
            None,
            1,
            "batch shards meeting split filters: the filters made whole (data parallel)",
        ),
        row(
            "conv1d, conv3d, transposed convs; 1-D and 3-D gradients",
            vec![("x", spec(&[8, 8, 12], S(0))), ("w", spec(&[16, 8, 3], S(0)))],
            batch_conv(&spec(&[8, 8, 12], S(0)), false),
            "data parallel on batch shards, the filters made whole; otherwise gathered",
        ),
        row(
            "max / avg pool, interpolate",
            vec![("x", spec(&x4, S(1)))],
            pool(&spec(&x4, S(1))),
            "per image and channel",
        ),
        row(
            "pool backward",
            vec![("x", spec(&x4, S(0))), ("dy", spec(&x4, P))],
            pool_backward(&spec(&x4, S(0)), &spec(&x4, P), &[]),
            "gradient made whole in x's layout",
        ),
    ];
    let (x, w) = ([8, 6], [6, 4]);
    for (inputs, ctx, why) in [
        ([("x", S(0)), ("w", R)], k2, "data parallel"),
        ([("x", R), ("w", S(1))], k2, "model parallel"),
        ([("x", S(0)), ("w", S(1))], with(Exchange::AllGather), "the weird trick, scheme a"),
        ([("x", S(0)), ("w", S(1))], with(Exchange::Broadcast), "the weird trick, scheme b"),
        ([("x", S(0)), ("w", S(1))], with(Exchange::Slices), "the weird trick, scheme c"),
        ([("x", S(1)), ("w", S(1))], with(Exchange::Broadcast), "FC weight gradient (x^T dy) under scheme b"),
        ([("x", S(1)), ("w", R)], k2, "contraction split: summands"),
        ([("x", S(1)), ("w", S(0))], k2, "contraction split on both sides"),
        ([("x", P), ("w", R)], k2, "linear in each argument"),
        ([("x", S(0)), ("w", S(0))], k2, "row shards against a weight split another way: the weight made whole"),
    ] {
        let xs = spec(&x, inputs[0].1);
        let ws = spec(&w, inputs[1].1);
        rows.push(row("matmul", vec![("x", xs.clone()), ("w", ws.clone())], matmul(&xs, &ws, &ctx), why));
    }
    let (xs, ws) = (spec(&[4, 8, 6], S(0)), spec(&[4, 6, 4], R));
    let why = "batched: each rank multiplies its own batch rows";
    rows.push(row("matmul", vec![("x", xs.clone()), ("w", ws.clone())], matmul(&xs, &ws, &k2), why));
    let (xs, ws) = (spec(&x, S(1)).kept(), spec(&w, S(1)));
    let why = "FC weight gradient with the activities the forward exchange kept";
    rows.push(row(
        "matmul",
        vec![("x", xs.clone()), ("w", ws.clone())],
        matmul(&xs, &ws, &with(Exchange::Broadcast)),
        why,
    ));
    let ew = |op, lin, inputs: Vec<(&'static str, Spec)>, why| {
        let specs: Vec<Spec> = inputs.iter().map(|(_, s)| s.clone()).collect();
        let s = elementwise(lin, &specs, &k2);
        Row { op, inputs, strategy: s, why, extra: None }
    };
    let m = [8, 6];
    rows.extend([
        ew("relu, exp, ... (not linear)", Linearity::None, vec![("x", spec(&m, S(0)))], "elementwise"),
        ew("relu, exp, ... (not linear)", Linearity::None, vec![("x", spec(&m, P))], "a pending sum made whole first"),
        ew("neg, scale, cast, into_float", Linearity::Linear, vec![("x", spec(&m, P))], "linear"),
        ew("add, sub", Linearity::Additive, vec![("a", spec(&m, P)), ("b", spec(&m, P))], "linear"),
        ew("mul", Linearity::Scaling, vec![("a", spec(&m, P)), ("b", spec(&m, R))], "linear in one argument"),
        ew(
            "mul",
            Linearity::Scaling,
            vec![("a", spec(&m, P)), ("b", spec(&m, P))],
            "a product of sums is not a sum of products",
        ),
        ew(
            "relu / sigmoid / gelu backward",
            Linearity::LeftScaling,
            vec![("dy", spec(&m, P)), ("y", spec(&m, R))],
            "linear in the gradient",
        ),
        ew(
            "binary, broadcast row",
            Linearity::None,
            vec![("a", spec(&m, S(0))), ("b", spec(&[1, 6], R))],
            "broadcast along the shards",
        ),
        ew("binary", Linearity::None, vec![("a", spec(&m, S(0))), ("b", spec(&m, R))], "the whole side sliced"),
        ew(
            "binary",
            Linearity::None,
            vec![("a", spec(&m, S(0))), ("b", spec(&m, P))],
            "the sum made whole in the shard's layout",
        ),
        ew(
            "binary",
            Linearity::None,
            vec![("a", spec(&m, S(0))), ("b", spec(&m, S(1)))],
            "re-shard to the first operand",
        ),
        ew(
            "binary",
            Linearity::None,
            vec![("a", spec(&[8, 1], S(0))), ("b", spec(&[1, 6], S(1)))],
            "an outer product: the side that broadcasts along the first's split made whole",
        ),
        ew(
            "mask_where",
            Linearity::None,
            vec![("x", spec(&m, S(1))), ("mask", spec(&m, R)), ("v", spec(&[1, 6], R))],
            "elementwise on three inputs",
        ),
    ]);
    let x = spec(&m, S(1));
    rows.extend([
        row("sum, mean (all elements)", vec![("x", x.clone())], reduce_all(&x), "pending until consumed"),
        row(
            "sum_dim, mean_dim on the sharded dim",
            vec![("x", x.clone())],
            reduce_dim(&x, 1, ShardedReduce::Sum, &k2),
            "pending until consumed (an int mean is made whole before its rounding division)",
        ),
        row(
            "max_dim on the sharded dim",
            vec![("x", x.clone())],
            reduce_dim(&x, 1, ShardedReduce::Max, &k2),
            "per-rank maxima combined at once",
        ),
        row(
            "any reduction on another dim",
            vec![("x", x.clone())],
            reduce_dim(&x, 0, ShardedReduce::Gather, &k2),
            "rank-local",
        ),
        row(
            "cumsum, cumprod, argtopk on the sharded dim",
            vec![("x", x.clone())],
            reduce_dim(&x, 1, ShardedReduce::Gather, &k2),
            "no rule",
        ),
    ]);
    if arg_extreme(&x, 1, &k2) == ArgRule::Candidates {
        rows.push(Row {
            op: "argmax / argmin on the sharded dim",
            inputs: vec![("x", x.clone())],
            strategy: Strategy::local(vec![Placement::Shard(1)], Placement::Replicate),
            why: "every rank picks the first best of the K candidates",
            extra: Some("all_gather of each rank's best value and global index (size 1 on the dim)"),
        });
    }
    let (t, idx) = (spec(&m, S(1)), spec(&m, R));
    if let GatherRule::OnShardedDim(s) = gather(&t, &idx, 1, &k2) {
        rows.push(row(
            "gather on the sharded dim",
            vec![("x", t.clone()), ("idx", idx.clone())],
            s,
            "each rank picks its own columns, zeros elsewhere: a pending sum",
        ));
    }
    let (t0, i0) = (spec(&m, S(0)), spec(&m, R));
    if let GatherRule::Aligned(s) = gather(&t0, &i0, 1, &k2) {
        rows.push(row("gather on another dim", vec![("x", t0.clone()), ("idx", i0.clone())], s, "rank-local"));
    }
    rows.extend([
        row(
            "scatter_add / scatter_or",
            vec![("x", spec(&m, R)), ("idx", spec(&m, S(0))), ("v", spec(&m, R))],
            scatter(&spec(&m, R), &spec(&m, S(0)), &spec(&m, R), 1, &k2),
            "whole values stay whole: the (small) indices travel",
        ),
        row(
            "scatter_add / scatter_or",
            vec![("x", spec(&m, R)), ("idx", spec(&m, S(1))), ("v", spec(&m, S(0)))],
            scatter(&spec(&m, R), &spec(&m, S(1)), &spec(&m, S(0)), 1, &k2),
            "split along another dimension than the scatter's: all brought to that split",
        ),
        row(
            "select on the sharded dim",
            vec![("x", spec(&m, S(1))), ("idx", spec(&[3], R))],
            select(&spec(&m, S(1)), 1),
            "no rule",
        ),
        row(
            "select on another dim",
            vec![("x", spec(&m, S(0))), ("idx", spec(&[3], R))],
            select(&spec(&m, S(0)), 1),
            "rank-local",
        ),
        row(
            "slice_assign",
            vec![("x", spec(&m, S(0))), ("v", spec(&[8, 2], S(0)))],
            slice_assign(
                &spec(&m, S(0)),
                &[Slice::new(0, None, 1), Slice::new(1, Some(3), 1)],
                &spec(&[8, 2], S(0)),
                &k2,
            ),
            "each rank writes its rows",
        ),
        row(
            "slice_assign into a whole tensor",
            vec![("x", spec(&[8, 8], R)), ("v", spec(&[8, 5], S(0)))],
            slice_assign(
                &spec(&[8, 8], R),
                &[Slice::new(0, None, 1), Slice::new(1, Some(6), 1)],
                &spec(&[8, 5], S(0)),
                &k2,
            ),
            "`pad` of a batch shard: each rank takes its rows of the whole tensor and writes its part",
        ),
        row(
            "slice_assign, a range of the sharded dim",
            vec![("x", spec(&m, S(0))), ("v", spec(&[3, 6], S(0)))],
            slice_assign(&spec(&m, S(0)), &[Slice::new(2, Some(5), 1)], &spec(&[3, 6], S(0)), &k2),
            "each rank writes the rows of the range it holds",
        ),
        row(
            "reshape, flatten",
            vec![("x", spec(&x4, S(0)))],
            reshape(&spec(&x4, S(0)), &[8, 1152].into(), &k2),
            "blocks stay whole rows",
        ),
        row(
            "reshape across the shards",
            vec![("x", spec(&m, S(1)))],
            reshape(&spec(&m, S(1)), &[48].into(), &k2),
            "no rule",
        ),
        row(
            "swap_dims, permute",
            vec![("x", spec(&m, S(0)))],
            permute(&spec(&m, S(0)), &[1, 0]),
            "the shard moves with its dim",
        ),
        row(
            "slice rows within one shard",
            vec![("x", spec(&m, S(0)))],
            slice(&spec(&m, S(0)), &[Slice::new(4, Some(6), 1)], &k2),
            "one worker's chunk",
        ),
        row(
            "slice another dim",
            vec![("x", spec(&m, S(0)))],
            slice(&spec(&m, S(0)), &[Slice::new(0, None, 1), Slice::new(1, Some(3), 1)], &k2),
            "rank-local",
        ),
        row("expand", vec![("x", spec(&[8, 1], S(0)))], expand(&spec(&[8, 1], S(0)), &[8, 6].into()), "rank-local"),
        row("flip, unfold along another dim", vec![("x", spec(&m, S(0)))], flip(&spec(&m, S(0)), &[1]), "rank-local"),
        row("flip, unfold along the sharded dim", vec![("x", spec(&m, S(0)))], unfold(&spec(&m, S(0)), 0), "no rule"),
        row(
            "cat along another dim",
            vec![("a", spec(&m, S(0))), ("b", spec(&m, R))],
            cat(&[spec(&m, S(0)), spec(&m, R)], 1),
            "the whole side sliced",
        ),
    ]);
    rows
}

/// The rule table as markdown (the block between the `rules` markers of backend/README.md).
pub fn markdown() -> String {
    let mut out = String::from("| op | inputs | output | communication | why |\n|---|---|---|---|---|\n");
    for row in rows() {
        let inputs: Vec<String> = row
            .inputs
            .iter()
            .map(|(n, s)| {
                format!(
                    "{n} `{:?}` {}{}",
                    &s.shape[..],
                    short(s.placement),
                    if s.kept_whole { " (kept whole)" } else { "" }
                )
            })
            .collect();
        let output = match row.strategy.then {
            Some(p) => format!("{} then {}", short(row.strategy.output), short(p)),
            None => short(row.strategy.output),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            row.op,
            inputs.join(", "),
            output,
            communication(&row),
            row.why
        ));
    }
    out
}
