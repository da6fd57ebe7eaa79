//! Property tests: for random ops, input placements and mesh sizes K in 1..=4, `Hybrid<Flex>`
//! computes what `Flex` computes (relative 1e-5), and `Autodiff<Hybrid<Flex>>` gives the
//! gradients `Autodiff<Flex>` gives.

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::activation::{gelu, log_sigmoid, log_softmax, relu, sigmoid, softmax};
use burn::tensor::module::{avg_pool2d, conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
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
        Just(Placement::Partial)
    ]
}

fn values(seed: u64, len: usize) -> Vec<f32> {
    // A small deterministic generator keeps the cases reproducible from proptest's seed.
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f32 / (1u64 << 31) as f32) * 4.0 - 2.0
        })
        .collect()
}

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn forward_matches_flex(k in 1usize..=4, m in 1usize..=7, n in 2usize..=6,
                            pa in placement(), pb in placement(), pw in placement(), seed in any::<u64>()) {
      for op in OPS {
        let (da, db, dw) = (
            TensorData::new(values(seed, m * n), [m, n]),
            TensorData::new(values(seed ^ 1, m * n), [m, n]),
            TensorData::new(values(seed ^ 2, n * n), [n, n]),
        );
        let fd = Default::default();
        let want = read(apply::<Flex>(op, Tensor::from_data(da.clone(), &fd), Tensor::from_data(db.clone(), &fd), Tensor::from_data(dw.clone(), &fd)));
        let mesh = MeshDevice::virtual_ranks(fd, k);
        let a = Tensor::<H, 2>::from_data(da, &mesh).distribute(pa);
        let b = Tensor::<H, 2>::from_data(db, &mesh).distribute(pb);
        let w = Tensor::<H, 2>::from_data(dw, &mesh).distribute(pw);
        let got = read(apply::<H>(op, a, b, w));
        close(&got, &want, &format!("{op:?} K={k} [{m},{n}] {pa} {pb} {pw}"))?;
      }
    }

    #[test]
    fn gradients_match_flex(k in 1usize..=4, m in 1usize..=6, n in 2usize..=5,
                            pa in placement(), pb in placement(), pw in placement(), seed in any::<u64>()) {
      for op in OPS.into_iter().filter(|op| !matches!(op, Op::Argmax1)) {
        let (da, db, dw) = (
            TensorData::new(values(seed, m * n), [m, n]),
            TensorData::new(values(seed ^ 1, m * n), [m, n]),
            TensorData::new(values(seed ^ 2, n * n), [n, n]),
        );
        let fd = Default::default();
        let (a, b, w) = (
            Tensor::<AF, 2>::from_data(da.clone(), &fd).require_grad(),
            Tensor::<AF, 2>::from_data(db.clone(), &fd).require_grad(),
            Tensor::<AF, 2>::from_data(dw.clone(), &fd).require_grad(),
        );
        let out = apply::<AF>(op, a.clone(), b.clone(), w.clone());
        let weights = Tensor::<AF, 2>::from_data(TensorData::new(values(seed ^ 3, out.shape().num_elements()), out.dims()), &fd);
        let g = (out * weights.clone()).sum().backward();
        let want: Vec<Vec<f32>> = [&a, &b, &w].iter().map(|t| t.grad(&g).map(read).unwrap_or_default()).collect();

        let mesh = MeshDevice::virtual_ranks(fd, k);
        let (ha, hb, hw) = (
            Tensor::<AH, 2>::from_data(da, &mesh).distribute(pa).require_grad(),
            Tensor::<AH, 2>::from_data(db, &mesh).distribute(pb).require_grad(),
            Tensor::<AH, 2>::from_data(dw, &mesh).distribute(pw).require_grad(),
        );
        let out = apply::<AH>(op, ha.clone(), hb.clone(), hw.clone());
        let hweights = Tensor::<AH, 2>::from_data(weights.into_data(), &mesh);
        let g = (out * hweights).sum().backward();
        let got: Vec<Vec<f32>> = [&ha, &hb, &hw].iter().map(|t| t.grad(&g).map(read).unwrap_or_default()).collect();
        for (i, (x, y)) in got.iter().zip(&want).enumerate() {
            close(x, y, &format!("{op:?} grad {} K={k} [{m},{n}] {pa} {pb} {pw}", ["a", "b", "w"][i]))?;
        }
      }
    }

    #[test]
    fn conv_and_pooling_match_flex(k in 1usize..=4, batch in 1usize..=5, groups in 1usize..=2,
                                   px in prop_oneof![Just(Placement::Replicate), Just(Placement::Shard(0)), Just(Placement::Shard(1))],
                                   pw in prop_oneof![Just(Placement::Replicate), Just(Placement::Shard(0))],
                                   seed in any::<u64>()) {
        let (cin, cout, side) = (4, 4, 6);
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
        let g = out.sum().backward();
        let want = [read(x.grad(&g).unwrap()), read(w.grad(&g).unwrap()), read(b.grad(&g).unwrap())];

        let mesh = MeshDevice::virtual_ranks(fd, k);
        let pb = if pw == Placement::Shard(0) { Placement::Shard(0) } else { Placement::Replicate };
        let (hx, hw, hb) = (
            Tensor::<AH, 4>::from_data(dx, &mesh).distribute(px).require_grad(),
            Tensor::<AH, 4>::from_data(dw, &mesh).distribute(pw).require_grad(),
            Tensor::<AH, 1>::from_data(db, &mesh).distribute(pb).require_grad(),
        );
        let out = conv_net(hx.clone(), hw.clone(), hb.clone(), groups);
        close(&read(out.clone()), &want_out, &format!("conv out K={k} g{groups} {px} {pw}"))?;
        let g = out.sum().backward();
        let got = [read(hx.grad(&g).unwrap()), read(hw.grad(&g).unwrap()), read(hb.grad(&g).unwrap())];
        for (i, (x, y)) in got.iter().zip(&want).enumerate() {
            close(x, y, &format!("conv grad {} K={k} g{groups} {px} {pw}", ["x", "w", "b"][i]))?;
        }
    }
}
