//! Float, int and bool ops of the same Burn op follow the same placement rule: on every
//! placement of the inputs (K = 1..4), the int and bool results equal Flex's exactly, and the
//! output placement and the ledger are the same for the three kinds. The ops here once had
//! three different rules (unfold, slice_assign, scatter/select_add, mean_dim, argmax, gather
//! along the sharded dimension, cast, flip).

use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::{Bool, Int, TensorData};
use owt_hybrid::{Distributed, Hybrid, LedgerSnapshot, MeshDevice, Placement};

type H = Hybrid<Flex>;
type Mesh = MeshDevice<burn::backend::flex::FlexDevice>;

const ROWS: usize = 6;
const COLS: usize = 5;

fn ints(seed: i64) -> TensorData {
    TensorData::new((0..(ROWS * COLS) as i64).map(|i| (i * 7 + seed * 3) % 11 - 4).collect::<Vec<_>>(), [ROWS, COLS])
}

fn placements() -> [Placement; 4] {
    [Placement::Replicate, Placement::Shard(0), Placement::Shard(1), Placement::PARTIAL_SUM]
}

/// One op applied to float, int and bool tensors of the same values.
#[derive(Debug, Clone, Copy)]
enum Op {
    Unfold,
    SliceAssignRows,
    ScatterAdd,
    SelectAdd,
    Gather,
    Flip,
    Cat,
    MaskWhere,
}

const OPS: [Op; 8] =
    [Op::Unfold, Op::SliceAssignRows, Op::ScatterAdd, Op::SelectAdd, Op::Gather, Op::Flip, Op::Cat, Op::MaskWhere];

fn index_data() -> TensorData {
    TensorData::new((0..(ROWS * COLS) as i64).map(|i| (i * 5 + 1) % COLS as i64).collect::<Vec<_>>(), [ROWS, COLS])
}

/// The op on ints or floats (one body, so both kinds run the same op); `b` is a second operand
/// of the same shape, `idx` column indices.
fn apply<B: Backend, K>(op: Op, a: Tensor<B, 2, K>, b: Tensor<B, 2, K>, idx: Tensor<B, 2, Int>) -> Tensor<B, 2, K>
where
    K: burn::tensor::Numeric<B>,
    K::Elem: burn::tensor::Element,
{
    match op {
        Op::Unfold => a.unfold::<3, usize>(1, 2, 1).sum_dim(2).squeeze_dim(2),
        Op::SliceAssignRows => a.slice_assign([0..ROWS, 1..3], b.slice([0..ROWS, 0..2])),
        Op::ScatterAdd => a.scatter(1, idx, b, burn::tensor::IndexingUpdateOp::Add),
        Op::SelectAdd => {
            let rows = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![1i64, 0, 1], [3]), &a.device());
            a.select_assign(1, rows, b.slice([0..ROWS, 0..3]), burn::tensor::IndexingUpdateOp::Add)
        }
        Op::Gather => a.gather(1, idx),
        Op::Flip => a.flip([0]),
        Op::Cat => Tensor::cat(vec![a, b], 0).slice([2..2 + ROWS, 0..COLS]),
        Op::MaskWhere => a.clone().mask_where(b.clone().equal_elem(0).bool_not(), b),
    }
}

/// Messages per collective: what two kinds of one op must agree on whatever their element
/// sizes.
fn messages(ledger: &LedgerSnapshot) -> Vec<(String, u64)> {
    let mut by: Vec<(String, u64)> = Vec::new();
    for ((_, collective), t) in &ledger.traffic {
        match by.iter_mut().find(|(c, _)| collective == c.as_str()) {
            Some(entry) => entry.1 += t.messages,
            None => by.push((collective.to_string(), t.messages)),
        }
    }
    by.retain(|(_, m)| *m > 0);
    by
}

/// Fallbacks by op, the kind prefix (`float_`, `int_`, `bool_`) left off.
fn fallbacks(ledger: &LedgerSnapshot) -> Vec<(String, u64)> {
    let strip =
        |op: &str| ["float_", "int_", "bool_"].iter().find_map(|p| op.strip_prefix(p)).unwrap_or(op).to_string();
    ledger.fallbacks.iter().map(|(op, n)| (strip(op), *n)).collect()
}

/// The same op on bools (or for add).
fn bool_op<B: Backend>(
    op: Op,
    a: Tensor<B, 2, Bool>,
    b: Tensor<B, 2, Bool>,
    idx: Tensor<B, 2, Int>,
) -> Tensor<B, 2, Bool> {
    match op {
        Op::Unfold => a.unfold::<3, usize>(1, 2, 1).any_dim(2).squeeze_dim(2),
        Op::SliceAssignRows => a.slice_assign([0..ROWS, 1..3], b.slice([0..ROWS, 0..2])),
        Op::ScatterAdd => a.scatter(1, idx, b, burn::tensor::IndexingUpdateOp::Add),
        Op::SelectAdd => {
            let rows = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![1i64, 0, 1], [3]), &a.device());
            a.select_assign(1, rows, b.slice([0..ROWS, 0..3]), burn::tensor::IndexingUpdateOp::Add)
        }
        Op::Gather => a.gather(1, idx),
        Op::Flip => a.flip([0]),
        Op::Cat => Tensor::cat(vec![a, b], 0).slice([2..2 + ROWS, 0..COLS]),
        Op::MaskWhere => a.clone().mask_where(b.clone(), b.bool_not()),
    }
}

fn int_on(mesh: &Mesh, data: TensorData, p: Placement) -> Tensor<H, 2, Int> {
    Tensor::<H, 2, Int>::from_data(data, mesh).distribute(p)
}

#[test]
fn int_and_bool_ops_equal_flex_on_every_placement() {
    let flex = Default::default();
    for op in OPS {
        let (a, b, idx) = (ints(1), ints(2), index_data());
        let want_int = apply::<Flex, Int>(
            op,
            Tensor::from_data(a.clone(), &flex),
            Tensor::from_data(b.clone(), &flex),
            Tensor::from_data(idx.clone(), &flex),
        )
        .into_data();
        let fa = Tensor::<Flex, 2, Int>::from_data(a.clone(), &flex).greater_elem(0);
        let fb = Tensor::<Flex, 2, Int>::from_data(b.clone(), &flex).lower_elem(1);
        let want_bool = bool_op::<Flex>(op, fa, fb, Tensor::from_data(idx.clone(), &flex)).into_data();
        for k in 1..=4 {
            let mesh = Mesh::virtual_ranks(Default::default(), k);
            for pa in placements() {
                // Bool tensors have no pending-sum reading that matches Flex's values (a bool
                // Partial is an "or" of pieces): they take the other placements.
                for pb in [Placement::Replicate, Placement::Shard(0), Placement::Shard(1)] {
                    let what = format!("{op:?} K={k} a {pa} b {pb}");
                    let (ia, ib, iidx) =
                        (int_on(&mesh, a.clone(), pa), int_on(&mesh, b.clone(), pb), int_on(&mesh, idx.clone(), pb));
                    mesh.reset_ledger();
                    let got = apply::<H, Int>(op, ia, ib, iidx);
                    let int_ledger = mesh.ledger_snapshot();
                    let int_placement = got.placement();
                    assert_eq!(got.into_data(), want_int, "int {what}");
                    // Floats of the same values: the same placement and, elements of the same
                    // size (f32, i32), byte for byte the same traffic.
                    let (fa, fb) = (int_on(&mesh, a.clone(), pa).float(), int_on(&mesh, b.clone(), pb).float());
                    let fidx = int_on(&mesh, idx.clone(), pb);
                    mesh.reset_ledger();
                    let got = apply::<H, burn::tensor::Float>(op, fa, fb, fidx);
                    assert_eq!(
                        mesh.ledger_snapshot().traffic,
                        int_ledger.traffic,
                        "float and int traffic differ: {what}"
                    );
                    assert_eq!(
                        fallbacks(&mesh.ledger_snapshot()),
                        fallbacks(&int_ledger),
                        "float and int fallbacks: {what}"
                    );
                    assert_eq!(got.placement(), int_placement, "float and int placements differ: {what}");
                    if pa.is_partial() {
                        continue;
                    }
                    let ha = Tensor::<H, 2, Int>::from_data(a.clone(), &mesh).distribute(pa).greater_elem(0);
                    let hb = Tensor::<H, 2, Int>::from_data(b.clone(), &mesh).distribute(pb).lower_elem(1);
                    let hidx = int_on(&mesh, idx.clone(), pb);
                    mesh.reset_ledger();
                    let got = bool_op::<H>(op, ha, hb, hidx);
                    // Bools are smaller elements: the same collectives and messages.
                    assert_eq!(
                        messages(&mesh.ledger_snapshot()),
                        messages(&int_ledger),
                        "bool and int traffic: {what}"
                    );
                    // (Bool scatters are named for their `or`.)
                    let bool_fallbacks = mesh.ledger_snapshot().total_fallbacks();
                    assert_eq!(bool_fallbacks, int_ledger.total_fallbacks(), "bool and int fallbacks: {what}");
                    assert_eq!(got.placement(), int_placement, "bool and int placements differ: {what}");
                    // Values and shape; Flex's own bool gather labels its result U8 instead of
                    // Bool(U8), so the dtype label is not compared.
                    let got = got.into_data();
                    assert_eq!((got.as_bytes(), &got.shape), (want_bool.as_bytes(), &want_bool.shape), "bool {what}");
                }
            }
        }
    }
}

#[test]
fn reductions_along_the_sharded_dim_follow_one_rule_for_float_and_int() {
    let flex = Default::default();
    let a = ints(3);
    let fa = Tensor::<Flex, 2, Int>::from_data(a.clone(), &flex);
    let want = [
        fa.clone().mean_dim(1).into_data(),
        fa.clone().argmax(1).into_data(),
        fa.clone().max_dim(1).into_data(),
        fa.clone().sum_dim(1).into_data(),
    ];
    let want_float = fa.float().mean_dim(1).into_data();
    for k in 2..=4 {
        let mesh = Mesh::virtual_ranks(Default::default(), k);
        let t = int_on(&mesh, a.clone(), Placement::Shard(1));
        mesh.reset_ledger();
        let got = [
            t.clone().mean_dim(1).into_data(),
            t.clone().argmax(1).into_data(),
            t.clone().max_dim(1).into_data(),
            t.clone().sum_dim(1).into_data(),
        ];
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "K={k}");
        }
        // The float mean of the same values takes the same route (sum on shards, pending,
        // scaled): no fallback for either kind, nor for argmax, max_dim and sum_dim above.
        let f = t.clone().float().mean_dim(1);
        assert_eq!(f.placement(), Placement::PARTIAL_SUM, "K={k}");
        f.into_data().assert_approx_eq::<f32>(&want_float, burn::tensor::Tolerance::default());
        let _ = t.mean_dim(1).into_data();
        assert!(mesh.ledger_snapshot().fallbacks.is_empty(), "K={k}: {:?}", mesh.ledger_snapshot().fallbacks);
    }
}
