//! `Hybrid<Meta>`: a mesh of Meta devices runs owt's placement rules on shapes alone, and its
//! ledger (the bytes that cross ranks, by collective and phase) equals that of the same
//! computation on a Flex mesh, entry by entry, for 2 and 4 ranks.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::module::{conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use owt_hybrid::{Distributed, Hybrid, LedgerSnapshot, MeshDevice, Placement, Transport};
use owt_meta::{Meta, MetaDevice};

/// A deterministic tensor of `shape` (values in [-1, 1)).
fn data<const D: usize>(shape: [usize; D]) -> TensorData {
    let n: usize = shape.iter().product();
    TensorData::new((0..n).map(|i| ((i * 7919) % 200) as f32 / 100.0 - 1.0).collect::<Vec<_>>(), shape)
}

/// Batch-sharded images through conv 3->8 (3x3, pad 1), relu, 2x2 max pool, flatten, a
/// linear layer whose weight is placed `fc`, log-softmax NLL; forward and backward.
fn step<B: Backend>(mesh: &MeshDevice<B::Device>, fc: Placement) -> LedgerSnapshot {
    type A<B> = Autodiff<Hybrid<B>>;
    let n = 8;
    let w1 = Tensor::<A<B>, 4>::from_data(data([8, 3, 3, 3]), mesh).require_grad();
    let b1 = Tensor::<A<B>, 1>::from_data(data([8]), mesh).require_grad();
    let w2 = Tensor::<A<B>, 2>::from_data(data([128, 10]), mesh).distribute(fc).require_grad();
    let bias_placement = if fc == Placement::Shard(1) { Placement::Shard(0) } else { fc };
    let b2 = Tensor::<A<B>, 1>::from_data(data([10]), mesh).distribute(bias_placement).require_grad();
    let x = Tensor::<A<B>, 4>::from_data(data([n, 3, 8, 8]), mesh).distribute(Placement::Shard(0));
    let y = Tensor::<A<B>, 1, Int>::from_data(TensorData::new((0..n as i64).map(|i| i % 10).collect(), [n]), mesh);
    mesh.reset_ledger();
    let conv_phase = mesh.phase("conv");
    let h = conv2d(x, w1.clone(), Some(b1.clone()), ConvOptions::new([1, 1], [1, 1], [1, 1], 1));
    let h = max_pool2d(relu(h), [2, 2], [2, 2], [0, 0], [1, 1], false);
    drop(conv_phase);
    let h: Tensor<A<B>, 2> = h.reshape([n, 128]);
    mesh.set_phase(Some("fc".into()));
    let logits = h.matmul(w2.clone()) + b2.clone().unsqueeze::<2>();
    let loss = log_softmax(logits, 1).gather(1, y.reshape([n, 1])).neg().mean();
    mesh.set_phase(Some("backward".into()));
    let grads = loss.backward();
    // Synchronise the gradients (data parallel: summed across ranks), as an optimizer would.
    mesh.set_phase(Some("sync".into()));
    let _ = w1.grad(&grads).expect("w1 gradient").distribute(Placement::Replicate);
    let _ = b1.grad(&grads).expect("b1 gradient").distribute(Placement::Replicate);
    let _ = w2.grad(&grads).expect("w2 gradient").distribute(fc);
    let _ = b2.grad(&grads).expect("b2 gradient").distribute(bias_placement);
    mesh.set_phase(None);
    mesh.ledger_snapshot()
}

fn assert_same_ledger(meta: &LedgerSnapshot, flex: &LedgerSnapshot, what: &str) {
    assert!(!flex.traffic.is_empty(), "{what}: the Flex step moved nothing, the comparison would be empty");
    assert_eq!(meta.traffic, flex.traffic, "{what}: traffic");
    assert_eq!(meta.fallbacks, flex.fallbacks, "{what}: fallbacks");
    assert_eq!(meta.empty_ops, flex.empty_ops, "{what}: empty ops");
    assert_eq!(meta, flex, "{what}");
}

#[test]
fn distinct_meta_devices_move_what_a_flex_mesh_moves() {
    for k in [2, 4] {
        for fc in [Placement::Replicate, Placement::Shard(1)] {
            let ranks: Vec<MetaDevice> = (0..k).map(|_| MetaDevice::new()).collect();
            let meta = step::<Meta>(&MeshDevice::with_transport(ranks, Transport::DeviceToDevice), fc);
            let flex = step::<Flex>(&MeshDevice::virtual_ranks(FlexDevice, k), fc);
            assert_same_ledger(&meta, &flex, &format!("K={k} fc {fc}, distinct devices"));
        }
    }
}

#[test]
fn virtual_meta_ranks_move_what_a_flex_mesh_moves() {
    for k in [2, 4] {
        for fc in [Placement::Replicate, Placement::Shard(1)] {
            let meta = step::<Meta>(&MeshDevice::virtual_ranks(MetaDevice::default(), k), fc);
            let flex = step::<Flex>(&MeshDevice::virtual_ranks(FlexDevice, k), fc);
            assert_same_ledger(&meta, &flex, &format!("K={k} fc {fc}, virtual ranks"));
        }
    }
}

/// Every rank's device logs the ops of its shard: with batch shards each rank's conv2d
/// costs 1/K of the whole batch's.
#[test]
fn each_rank_logs_its_shard_of_a_data_parallel_conv() {
    let k = 4;
    let ranks: Vec<MetaDevice> = (0..k).map(|_| MetaDevice::new()).collect();
    let mesh = MeshDevice::with_transport(ranks.clone(), Transport::DeviceToDevice);
    let x = Tensor::<Hybrid<Meta>, 4>::from_data(data([8, 3, 8, 8]), &mesh).distribute(Placement::Shard(0));
    let w = Tensor::<Hybrid<Meta>, 4>::from_data(data([4, 3, 3, 3]), &mesh);
    for r in &ranks {
        r.reset_costs();
    }
    let out = conv2d(x, w, None, ConvOptions::new([1, 1], [1, 1], [1, 1], 1));
    assert_eq!(out.dims(), [8, 4, 8, 8]);
    let whole = 2 * 8 * 4 * 64 * 3 * 9;
    for (i, r) in ranks.iter().enumerate() {
        let convs: Vec<u64> = r.costs().iter().filter(|c| c.op == "conv2d").map(|c| c.flops).collect();
        assert_eq!(convs, vec![whole / k as u64], "rank {i}");
    }
}
