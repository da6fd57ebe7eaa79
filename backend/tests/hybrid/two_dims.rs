//! A mesh of nodes inside the rule system: a small conv + linear network on a mesh of N
//! nodes x L local ranks (threads standing in for the nodes), its tensors laid out along both
//! dimensions (`[node, local]`), gives the loss, logits and gradients of `Autodiff<Flex>` on
//! one device: the batch `[Shard(0), Shard(0)]`, the conv weights `[Replicate, Replicate]`,
//! the FC weight split by columns inside each node (`[Replicate, Shard(1)]`) or also stored
//! as one slice per node and gathered over the nodes for the step (`[Shard(0), Shard(1)]`,
//! FSDP-style: its gradient comes back reduce-scattered to the slices by the gather's own
//! backward). Every op runs its rule along each dimension; no op falls back.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_hybrid::Placement::{Replicate, Shard};
use owt_hybrid::{Distributed, GridMesh, Hybrid, MeshDevice, Placement};

use crate::equivalence::{close, loss, Params};

type Ref = Autodiff<Flex>;
type Hy = Autodiff<Hybrid<Flex>>;

fn values<const D: usize>(t: Tensor<Hy, D>) -> Vec<f32> {
    t.to_data().to_vec::<f32>().unwrap()
}

fn run_case(nodes: usize, local: usize, n: usize, fc_along_nodes: Placement) {
    let rd = Default::default();
    let src = Params::<Flex> {
        w1: Tensor::random([4, 3, 3, 3], Distribution::Normal(0.0, 0.3), &rd),
        b1: Tensor::random([4], Distribution::Normal(0.0, 0.3), &rd),
        w2: Tensor::random([64, 6], Distribution::Normal(0.0, 0.3), &rd),
        b2: Tensor::random([6], Distribution::Normal(0.0, 0.3), &rd),
    };
    let x = Tensor::<Flex, 4>::random([n, 3, 8, 8], Distribution::Normal(0.0, 1.0), &rd).into_data();
    let y = TensorData::new((0..n as i64).map(|i| (i * 5) % 6).collect::<Vec<_>>(), [n]);
    let reference = Params::<Ref> {
        w1: Tensor::from_data(src.w1.to_data(), &rd).require_grad(),
        b1: Tensor::from_data(src.b1.to_data(), &rd).require_grad(),
        w2: Tensor::from_data(src.w2.to_data(), &rd).require_grad(),
        b2: Tensor::from_data(src.b2.to_data(), &rd).require_grad(),
    };
    let (ref_loss, ref_logits) = loss(&reference, Tensor::from_data(x.clone(), &rd), Tensor::from_data(y.clone(), &rd));
    let ref_grads = ref_loss.backward();
    let r = |t: Option<Tensor<Flex, 4>>| t.unwrap().to_data().to_vec::<f32>().unwrap();
    let want = vec![
        ref_loss.to_data().to_vec::<f32>().unwrap(),
        ref_logits.to_data().to_vec::<f32>().unwrap(),
        r(reference.w1.grad(&ref_grads)),
        reference.b1.grad(&ref_grads).unwrap().to_data().to_vec::<f32>().unwrap(),
        reference.w2.grad(&ref_grads).unwrap().to_data().to_vec::<f32>().unwrap(),
        reference.b2.grad(&ref_grads).unwrap().to_data().to_vec::<f32>().unwrap(),
    ];
    let (w, b1, w2, b2) = (src.w1.to_data(), src.b1.to_data(), src.w2.to_data(), src.b2.to_data());

    let seen = GridMesh::<FlexDevice>::threaded(
        nodes,
        |_| MeshDevice::virtual_ranks(FlexDevice, local),
        |grid| {
            let mesh = grid.mesh().clone();
            let stored = Params::<Hy> {
                w1: Tensor::from_data(w.clone(), &mesh).require_grad(),
                b1: Tensor::from_data(b1.clone(), &mesh).require_grad(),
                w2: Tensor::<Hy, 2>::from_data(w2.clone(), &mesh)
                    .distribute_all(&[fc_along_nodes, Shard(1)])
                    .require_grad(),
                b2: Tensor::<Hy, 1>::from_data(b2.clone(), &mesh).distribute(Shard(0)).require_grad(),
            };
            assert_eq!(stored.w2.placements(), vec![fc_along_nodes, Shard(1)]);
            // The step computes with the FC weight whole over the nodes: gathered, differentiably.
            let used = Params::<Hy> {
                w2: stored.w2.clone().redistribute_along(0, Replicate),
                w1: stored.w1.clone(),
                b1: stored.b1.clone(),
                b2: stored.b2.clone(),
            };
            let xs = Tensor::<Hy, 4>::from_data(x.clone(), &mesh).distribute_all(&[Shard(0), Shard(0)]);
            let ys = Tensor::<Hy, 1, Int>::from_data(y.clone(), &mesh).distribute_all(&[Shard(0), Shard(0)]);
            assert_eq!(xs.placements(), vec![Shard(0), Shard(0)]);
            assert_eq!(xs.dims(), [n, 3, 8, 8], "Burn sees the global shape");
            mesh.reset_ledger();
            let (l, logits) = loss(&used, xs, ys);
            assert_eq!(logits.placements()[0], Shard(0), "the logits stay split by rows over the nodes");
            let grads = l.backward();
            let w2_grad = stored.w2.grad(&grads).unwrap();
            assert_eq!(w2_grad.placements()[0], fc_along_nodes, "the stored weight's gradient, in its layout");
            let fallbacks = mesh.ledger_snapshot().fallbacks;
            let out = vec![
                values(l),
                values(logits),
                stored.w1.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(),
                stored.b1.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(),
                w2_grad.to_data().to_vec::<f32>().unwrap(),
                stored.b2.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(),
            ];
            (out, fallbacks)
        },
    );
    let what = format!("({nodes}, {local}) batch {n}, FC weight {fc_along_nodes} along the nodes");
    for (node, (got, fallbacks)) in seen.iter().enumerate() {
        assert!(fallbacks.is_empty(), "{what}, node {node}: fallbacks {fallbacks:?}");
        for (i, name) in ["loss", "logits", "dw1", "db1", "dw2", "db2"].iter().enumerate() {
            close(&got[i], &want[i], &format!("{what}, node {node}: {name}"));
        }
    }
}

#[test]
fn a_mesh_of_nodes_computes_what_one_device_does() {
    run_case(2, 2, 8, Replicate);
    run_case(3, 2, 10, Replicate);
    run_case(2, 1, 5, Replicate);
}

#[test]
fn a_weight_stored_in_slices_over_the_nodes_is_gathered_and_its_gradient_scattered_back() {
    run_case(2, 2, 8, Shard(0));
    run_case(3, 2, 10, Shard(0));
}
