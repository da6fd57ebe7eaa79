//! Property tests: for random ops, input placements and mesh sizes K in 1..=4, `Hybrid<Flex>`
//! computes what `Flex` computes, and `Autodiff<Hybrid<Flex>>` gives the gradients
//! `Autodiff<Flex>` gives: relative 1e-5 of the largest magnitude (f32 sums in another order;
//! measured 2026-11-30 over six runs of 256 cases: at most 4.2e-7, a Div gradient at K = 4).
//!
//! `Partial` inputs are real pending sums: every rank holds a different summand, and the
//! summands (values on a 1/1024 grid) add up exactly to the reference input. Deliberately wrong
//! rules ([`owt_hybrid::mutation`]) must make these checks fail.

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::activation::{gelu, log_sigmoid, log_softmax, relu, sigmoid, softmax};
use burn::tensor::module::{avg_pool2d, conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use owt_hybrid::mutation::{self, Mutation};
use owt_hybrid::{partial_from_summands, Distributed, Hybrid, MeshDevice, Placement};
use proptest::prelude::*;

type H = Hybrid<Flex>;
type AH = Autodiff<Hybrid<Flex>>;
type AF = Autodiff<Flex>;

/// Two-input ops on `a: [m, n]`, `b: [m, n]`, `w: [n, n]`; every result is made 2-D.
#[derive(Debug, Clone, Copy)]
enum Op {
    Exp,
    Relu,
    Sigmoid,
    Gelu,
    LogSigmoid,
    Tanh,
    AddScalar,
    MulScalar,
    Add,
    Sub,
    Mul,
    Div,
    AddRowBias,
    AddColBias,
    Sum,
    SumDim0,
    SumDim1,
    MeanDim1,
    MaxDim0,
    MaxDim1,
    Argmax1,
    Flatten,
    Transpose,
    ReshapeSwap,
    Matmul,
    MatmulT,
    SliceRows,
    SliceCols,
    CatRows,
    CatCols,
    GatherCols,
    LogSoftmax,
    Softmax0,
    MaskWhere,
}

const OPS: [Op; 34] = [
    Op::Exp,
    Op::Relu,
    Op::Sigmoid,
    Op::Gelu,
    Op::LogSigmoid,
    Op::Tanh,
    Op::AddScalar,
    Op::MulScalar,
    Op::Add,
    Op::Sub,
    Op::Mul,
    Op::Div,
    Op::AddRowBias,
    Op::AddColBias,
    Op::Sum,
    Op::SumDim0,
    Op::SumDim1,
    Op::MeanDim1,
    Op::MaxDim0,
    Op::MaxDim1,
    Op::Argmax1,
    Op::Flatten,
    Op::Transpose,
    Op::ReshapeSwap,
    Op::Matmul,
    Op::MatmulT,
    Op::SliceRows,
    Op::SliceCols,
    Op::CatRows,
    Op::CatCols,
    Op::GatherCols,
    Op::LogSoftmax,
    Op::Softmax0,
    Op::MaskWhere,
];

fn apply<B: Backend>(op: Op, a: Tensor<B, 2>, b: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    let [m, n] = a.dims();
    match op {
        Op::Exp => a.exp(),
        Op::Relu => relu(a),
        Op::Sigmoid => sigmoid(a),
        Op::Gelu => gelu(a),
        Op::LogSigmoid => log_sigmoid(a),
        Op::Tanh => a.tanh(),
        Op::AddScalar => a.add_scalar(1.5),
        Op::MulScalar => a.mul_scalar(-2.0),
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => a / b.abs().add_scalar(1.0),
        Op::AddRowBias => a + b.slice([0..1, 0..n]),
        Op::AddColBias => a + b.slice([0..m, 0..1]),
        Op::Sum => a.sum().reshape([1, 1]),
        Op::SumDim0 => a.sum_dim(0),
        Op::SumDim1 => a.sum_dim(1),
        Op::MeanDim1 => a.mean_dim(1),
        Op::MaxDim0 => a.max_dim(0),
        Op::MaxDim1 => a.max_dim(1),
        Op::Argmax1 => a.argmax(1).float(),
        Op::Flatten => a.reshape([1, m * n]),
        Op::Transpose => a.transpose(),
        Op::ReshapeSwap => a.reshape([n, m]),
        Op::Matmul => a.matmul(w),
        Op::MatmulT => a.transpose().matmul(b),
        Op::SliceRows => a.slice([m / 2..m, 0..n]),
        Op::SliceCols => a.slice([0..m, 0..n.div_ceil(2)]),
        Op::CatRows => Tensor::cat(vec![a, b], 0),
        Op::CatCols => Tensor::cat(vec![a, b], 1),
        Op::GatherCols => {
            let idx: Vec<i64> = (0..m as i64).map(|i| (i * 5 + 1) % n as i64).collect();
            let idx = Tensor::<B, 1, Int>::from_data(TensorData::new(idx, [m]), &a.device()).reshape([m, 1]);
            a.gather(1, idx)
        }
        Op::LogSoftmax => log_softmax(a, 1),
        Op::Softmax0 => softmax(a, 0),
        Op::MaskWhere => a.clone().mask_where(b.clone().greater(a), b),
    }
}

/// conv (3x3, pad 1, `groups`), relu, 3x3/2 max pool, 2x2 average pool.
fn conv_net<B: Backend>(x: Tensor<B, 4>, w: Tensor<B, 4>, b: Tensor<B, 1>, groups: usize) -> Tensor<B, 4> {
    let h = conv2d(x, w, Some(b), ConvOptions::new([1, 1], [1, 1], [1, 1], groups));
    let h = max_pool2d(relu(h), [3, 3], [2, 2], [0, 0], [1, 1], false);
    avg_pool2d(h, [2, 2], [1, 1], [0, 0], true, false)
}

fn placement() -> impl Strategy<Value = Placement> {
    prop_oneof![
        Just(Placement::Replicate),
        Just(Placement::Shard(0)),
        Just(Placement::Shard(1)),
        Just(Placement::PARTIAL_SUM)
    ]
}

/// Values in [-2, 2] on a 1/1024 grid, from a small deterministic generator (reproducible from
/// proptest's seed): sums of a few of them are exact in f32.
fn values(seed: u64, len: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = ((s >> 33) as f32 / (1u64 << 31) as f32) * 4.0 - 2.0;
            (v * 1024.0).round() / 1024.0
        })
        .collect()
}

/// `data` (values from [`values`]) on `mesh` as `placement`. A `Partial` tensor gets real
/// summands: every rank but 0 holds its own pseudo-random tensor and rank 0 the rest, so each
/// rank's piece differs and their sum is exactly `data`.
fn placed<const D: usize>(
    data: &TensorData,
    placement: Placement,
    mesh: &MeshDevice<FlexDevice>,
    seed: u64,
) -> Tensor<H, D> {
    if placement != Placement::PARTIAL_SUM || mesh.size() == 1 {
        return Tensor::<H, D>::from_data(data.clone(), mesh).distribute(placement);
    }
    let whole = data.to_vec::<f32>().unwrap();
    let others: Vec<Vec<f32>> = (1..mesh.size()).map(|r| values(seed ^ (0x5eed << r), whole.len())).collect();
    let first: Vec<f32> = whole.iter().enumerate().map(|(i, v)| others.iter().fold(*v, |acc, o| acc - o[i])).collect();
    let summands = std::iter::once(first).chain(others).map(|v| TensorData::new(v, data.shape.clone())).collect();
    partial_from_summands::<Flex, D>(summands, mesh)
}

type FlexDevice = burn::backend::flex::FlexDevice;

fn close(got: &[f32], want: &[f32], what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "{}: length", what);
    let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (g, w) in got.iter().zip(want) {
        prop_assert!((g - w).abs() <= 1e-5 * scale, "{}: {} vs {} (scale {})", what, g, w, scale);
    }
    Ok(())
}

fn read<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().to_vec::<f32>().unwrap()
}

/// The three inputs of a case: `a`, `b`: `[m, n]`, `w`: `[n, n]`.
fn inputs(seed: u64, [m, n]: [usize; 2]) -> [TensorData; 3] {
    [
        TensorData::new(values(seed, m * n), [m, n]),
        TensorData::new(values(seed ^ 1, m * n), [m, n]),
        TensorData::new(values(seed ^ 2, n * n), [n, n]),
    ]
}

/// `op` on Hybrid with inputs placed as `placements` against Flex.
fn forward_case(
    op: Op,
    k: usize,
    dims: [usize; 2],
    placements: [Placement; 3],
    seed: u64,
) -> Result<(), TestCaseError> {
    let [da, db, dw] = inputs(seed, dims);
    let fd = Default::default();
    let want = read(apply::<Flex>(
        op,
        Tensor::from_data(da.clone(), &fd),
        Tensor::from_data(db.clone(), &fd),
        Tensor::from_data(dw.clone(), &fd),
    ));
    let mesh = MeshDevice::virtual_ranks(fd, k);
    let [pa, pb, pw] = placements;
    let got = read(apply::<H>(
        op,
        placed(&da, pa, &mesh, seed),
        placed(&db, pb, &mesh, seed ^ 7),
        placed(&dw, pw, &mesh, seed ^ 9),
    ));
    close(&got, &want, &format!("{op:?} K={k} {dims:?} {pa} {pb} {pw}"))
}

/// The gradients of `sum(op(a, b, w) * weights)` on Autodiff<Hybrid> against Autodiff<Flex>.
fn gradient_case(
    op: Op,
    k: usize,
    dims: [usize; 2],
    placements: [Placement; 3],
    seed: u64,
) -> Result<(), TestCaseError> {
    let [da, db, dw] = inputs(seed, dims);
    let fd = Default::default();
    let (a, b, w) = (
        Tensor::<AF, 2>::from_data(da.clone(), &fd).require_grad(),
        Tensor::<AF, 2>::from_data(db.clone(), &fd).require_grad(),
        Tensor::<AF, 2>::from_data(dw.clone(), &fd).require_grad(),
    );
    let out = apply::<AF>(op, a.clone(), b.clone(), w.clone());
    let weights =
        Tensor::<AF, 2>::from_data(TensorData::new(values(seed ^ 3, out.shape().num_elements()), out.dims()), &fd);
    let g = (out * weights.clone()).sum().backward();
    let want: Vec<Vec<f32>> = [&a, &b, &w].iter().map(|t| t.grad(&g).map(read).unwrap_or_default()).collect();

    let mesh = MeshDevice::virtual_ranks(fd, k);
    let [pa, pb, pw] = placements;
    let leaf =
        |d: &TensorData, p: Placement, s: u64| Tensor::<AH, 2>::from_inner(placed(d, p, &mesh, s)).require_grad();
    let (ha, hb, hw) = (leaf(&da, pa, seed), leaf(&db, pb, seed ^ 7), leaf(&dw, pw, seed ^ 9));
    let out = apply::<AH>(op, ha.clone(), hb.clone(), hw.clone());
    let hweights = Tensor::<AH, 2>::from_data(weights.into_data(), &mesh);
    let g = (out * hweights).sum().backward();
    let got: Vec<Vec<f32>> = [&ha, &hb, &hw].iter().map(|t| t.grad(&g).map(read).unwrap_or_default()).collect();
    prop_assert_eq!(got.len(), want.len());
    for (i, (x, y)) in got.iter().zip(&want).enumerate() {
        close(x, y, &format!("{op:?} grad {} K={k} {dims:?} {pa} {pb} {pw}", ["a", "b", "w"][i]))?;
    }
    Ok(())
}

/// Cases with `Partial` inputs on K = 2..4 that a wrong rule for pending sums must fail.
fn partial_cases() -> Vec<(Op, usize, [Placement; 3])> {
    use Placement::*;
    let mut cases = Vec::new();
    for k in 2..=4 {
        for op in [Op::Relu, Op::Exp, Op::Tanh, Op::Mul, Op::Matmul, Op::MaxDim1, Op::SliceRows] {
            cases.push((op, k, [Placement::PARTIAL_SUM; 3]));
            cases.push((op, k, [Placement::PARTIAL_SUM, Replicate, Shard(0)]));
        }
    }
    cases
}

#[test]
fn wrong_rules_for_pending_sums_are_caught() {
    // The cases pass with the right rules...
    for (op, k, placements) in partial_cases() {
        forward_case(op, k, [5, 4], placements, 11).unwrap();
        gradient_case(op, k, [5, 4], placements, 11).unwrap();
    }
    // ...and each wrong rule fails at least one of them.
    for m in Mutation::ALL {
        let caught = mutation::with(m, || {
            partial_cases().into_iter().any(|(op, k, p)| {
                forward_case(op, k, [5, 4], p, 11).is_err() || gradient_case(op, k, [5, 4], p, 11).is_err()
            })
        });
        assert!(caught, "{m:?} passed every case: the checks cannot tell it from the right rule");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn forward_matches_flex(k in 1usize..=4, m in 1usize..=7, n in 2usize..=6,
                            pa in placement(), pb in placement(), pw in placement(), seed in any::<u64>()) {
      for op in OPS {
        forward_case(op, k, [m, n], [pa, pb, pw], seed)?;
      }
    }

    #[test]
    fn gradients_match_flex(k in 1usize..=4, m in 1usize..=6, n in 2usize..=5,
                            pa in placement(), pb in placement(), pw in placement(), seed in any::<u64>()) {
      for op in OPS.into_iter().filter(|op| !matches!(op, Op::Argmax1)) {
        gradient_case(op, k, [m, n], [pa, pb, pw], seed)?;
      }
    }

    #[test]
    fn conv_and_pooling_match_flex(k in 1usize..=4, batch in 1usize..=5, groups in 1usize..=2,
                                   cin in prop_oneof![Just(2usize), Just(4)], cout in prop_oneof![Just(2usize), Just(4)],
                                   side in 5usize..=8, px in placement(), pw in placement(), partial_bias in any::<bool>(),
                                   seed in any::<u64>()) {
        let dx = TensorData::new(values(seed, batch * cin * side * side), [batch, cin, side, side]);
        let dw = TensorData::new(values(seed ^ 5, cout * cin / groups * 9), [cout, cin / groups, 3, 3]);
        let db = TensorData::new(values(seed ^ 6, cout), [cout]);
        let fd = Default::default();
        let (x, w, b) = (
            Tensor::<AF, 4>::from_data(dx.clone(), &fd).require_grad(),
            Tensor::<AF, 4>::from_data(dw.clone(), &fd).require_grad(),
            Tensor::<AF, 1>::from_data(db.clone(), &fd).require_grad(),
        );
        let out = conv_net(x.clone(), w.clone(), b.clone(), groups);
        let want_out = read(out.clone());
        // A different upstream gradient for every output element.
        let upstream = TensorData::new(values(seed ^ 8, out.shape().num_elements()), out.dims());
        let g = (out * Tensor::<AF, 4>::from_data(upstream.clone(), &fd)).sum().backward();
        let want = [read(x.grad(&g).unwrap()), read(w.grad(&g).unwrap()), read(b.grad(&g).unwrap())];

        let mesh = MeshDevice::virtual_ranks(fd, k);
        let pb = match (pw, partial_bias) {
            (_, true) => Placement::PARTIAL_SUM,
            (Placement::Shard(0), false) => Placement::Shard(0),
            _ => Placement::Replicate,
        };
        let (hx, hw, hb) = (
            Tensor::<AH, 4>::from_inner(placed(&dx, px, &mesh, seed)).require_grad(),
            Tensor::<AH, 4>::from_inner(placed(&dw, pw, &mesh, seed ^ 5)).require_grad(),
            Tensor::<AH, 1>::from_inner(placed(&db, pb, &mesh, seed ^ 6)).require_grad(),
        );
        let what = format!("K={k} batch {batch} {cin}->{cout} side {side} g{groups} x {px} w {pw} b {pb}");
        let out = conv_net(hx.clone(), hw.clone(), hb.clone(), groups);
        close(&read(out.clone()), &want_out, &format!("conv out {what}"))?;
        let g = (out * Tensor::<AH, 4>::from_data(upstream, &mesh)).sum().backward();
        let got = [read(hx.grad(&g).unwrap()), read(hw.grad(&g).unwrap()), read(hb.grad(&g).unwrap())];
        for (i, (x, y)) in got.iter().zip(&want).enumerate() {
            close(x, y, &format!("conv grad {} {what}", ["x", "w", "b"][i]))?;
        }
    }
}
