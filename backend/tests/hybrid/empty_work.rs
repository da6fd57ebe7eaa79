//! No empty work reaches the inner backend: a dimension shorter than the mesh is never split,
//! reductions to fewer elements than ranks all-reduce whole summands instead of ring slices,
//! and the ledger counts any zero-element piece that does appear (CubeCL CUDA fails on a
//! kernel launched over zero elements, so such a piece would crash a GPU run).

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type H = Hybrid<Flex>;

fn mesh(k: usize) -> MeshDevice<burn::backend::flex::FlexDevice> {
    MeshDevice::virtual_ranks(Default::default(), k)
}

fn random(shape: [usize; 2], seed: u64) -> TensorData {
    let device = Default::default();
    <Flex as Backend>::seed(&device, seed);
    Tensor::<Flex, 2>::random(shape, Distribution::Normal(0.0, 1.0), &device).into_data()
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{what}: {a:?} vs {b:?}");
    }
}

#[test]
fn a_dimension_shorter_than_the_mesh_stays_whole() {
    for k in 2..=4 {
        let m = mesh(k);
        for rows in 1..k {
            let data = random([rows, 3], rows as u64);
            let t = Tensor::<H, 2>::from_data(data.clone(), &m).distribute(Placement::Shard(0));
            assert_eq!(t.placement(), Placement::Replicate, "K={k}, {rows} rows");
            assert!(t.local_shapes().iter().all(|s| s[0] == rows));
            // And back from a pending sum: reduce-scattered onto a short dimension, it is
            // all-reduced instead.
            let p = Tensor::<H, 2>::from_data(data.clone(), &m).distribute(Placement::PARTIAL_SUM);
            let s = p.distribute(Placement::Shard(0));
            assert_eq!(s.placement(), Placement::Replicate);
            close(&s.into_data().to_vec::<f32>().unwrap(), &data.to_vec::<f32>().unwrap(), "partial -> shard");
        }
        let ledger = m.ledger_snapshot();
        assert_eq!(ledger.total_empty_ops(), 0, "K={k}: {:?}", ledger.empty_ops);
        // Long enough to split: every rank gets at least one row.
        let t = Tensor::<H, 2>::zeros([k, 3], &m).distribute(Placement::Shard(0));
        assert_eq!(t.placement(), Placement::Shard(0));
        assert!(t.local_shapes().iter().all(|s| s[0] == 1));
    }
}

#[test]
fn scalar_reductions_all_reduce_whole_summands() {
    for k in 2..=4 {
        let m = mesh(k);
        let data = random([5, 2], 7);
        let reference = Tensor::<Flex, 2>::from_data(data.clone(), &Default::default());
        let x = Tensor::<H, 2>::from_data(data.clone(), &m).distribute(Placement::Shard(0));
        m.reset_ledger();
        let sum = x.clone().sum();
        assert_eq!(sum.placement(), Placement::PARTIAL_SUM);
        let got = sum.into_scalar();
        let want = reference.clone().sum().into_scalar();
        assert!((got - want).abs() < 1e-5, "K={k}: {got} vs {want}");
        // One 4-byte summand from every rank to every other rank: no ring slice is empty.
        let ledger = m.ledger_snapshot();
        let all_reduce = ledger.by_collective("all_reduce");
        assert_eq!(all_reduce.bytes, (k * (k - 1) * 4) as u64, "K={k}");
        assert_eq!(all_reduce.messages, (k * (k - 1)) as u64, "K={k}");
        // A max over the sharded dimension leaves 2 values for K ranks.
        let max = x.clone().max_dim(0).into_data().to_vec::<f32>().unwrap();
        close(&max, &reference.clone().max_dim(0).into_data().to_vec::<f32>().unwrap(), "max_dim");
        let mean = x.mean_dim(0).into_data().to_vec::<f32>().unwrap();
        close(&mean, &reference.mean_dim(0).into_data().to_vec::<f32>().unwrap(), "mean_dim");
        assert_eq!(m.ledger_snapshot().total_empty_ops(), 0, "K={k}");
    }
}

#[test]
fn uneven_shards_with_gradients_make_no_empty_piece() {
    type A = Autodiff<H>;
    for k in 2..=4 {
        let m = mesh(k);
        // 10 rows over up to 4 ranks (3, 3, 2, 2); a bias of one row meets them.
        let x = random([10, 3], 1);
        let w = random([3, 4], 2);
        let b = random([1, 4], 3);
        let reference = {
            let d = Default::default();
            let x = Tensor::<Autodiff<Flex>, 2>::from_data(x.clone(), &d);
            let w = Tensor::<Autodiff<Flex>, 2>::from_data(w.clone(), &d).require_grad();
            let b = Tensor::<Autodiff<Flex>, 2>::from_data(b.clone(), &d).require_grad();
            let loss = (x.matmul(w.clone()) + b.clone()).tanh().mean();
            let grads = loss.backward();
            (w.grad(&grads).unwrap().into_data(), b.grad(&grads).unwrap().into_data())
        };
        let xs = Tensor::<A, 2>::from_data(x, &m).distribute(Placement::Shard(0));
        let ws = Tensor::<A, 2>::from_data(w, &m).require_grad();
        let bs = Tensor::<A, 2>::from_data(b, &m).require_grad();
        let loss = (xs.matmul(ws.clone()) + bs.clone()).tanh().mean();
        let grads = loss.backward();
        let gw = ws.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
        let gb = bs.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
        close(&gw, &reference.0.to_vec::<f32>().unwrap(), "weight grad");
        close(&gb, &reference.1.to_vec::<f32>().unwrap(), "bias grad");
        let ledger = m.ledger_snapshot();
        assert_eq!(ledger.total_empty_ops(), 0, "K={k}: {:?}", ledger.empty_ops);
    }
}

#[test]
fn the_ledger_counts_an_empty_piece() {
    // A tensor the user made empty is empty on every rank: the count is what a test sees.
    let m = mesh(2);
    let t = Tensor::<H, 2>::zeros([0, 3], &m);
    let _ = t.clone() + t;
    let ledger = m.ledger_snapshot();
    assert!(ledger.total_empty_ops() >= 2, "{:?}", ledger.empty_ops);
    assert!(ledger.empty_ops.keys().any(|k| k.contains("[0, 3]")), "{:?}", ledger.empty_ops);
}
