//! `redistribute` is differentiable on `Autodiff<Hybrid<Flex>>`: for every pair of placements
//! on K = 2, 3, 4 the gradient through it equals Flex's (where there is nothing to
//! redistribute), comes back in the input's placement (whole for a pending sum), and
//! `distribute` inside a graph no longer cuts the gradient.

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::{Distribution, Tolerance};
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type A = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

fn loss<B: burn::tensor::backend::Backend>(y: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 1> {
    // Not linear, so the gradient depends on the value: w + 2 y.
    (y.clone() * w).sum() + (y.clone() * y).sum()
}

#[test]
fn gradients_through_redistribute_equal_flex_for_every_pair_of_placements() {
    let x = Tensor::<Flex, 2>::random([6, 5], Distribution::Normal(0.0, 1.0), &Default::default()).into_data();
    let w = Tensor::<Flex, 2>::random([6, 5], Distribution::Normal(0.0, 1.0), &Default::default()).into_data();
    let fx = Tensor::<A, 2>::from_data(x.clone(), &Default::default()).require_grad();
    let grads = loss(fx.clone(), Tensor::from_data(w.clone(), &Default::default())).backward();
    let want = fx.grad(&grads).unwrap().into_data();
    let all = [Placement::Replicate, Placement::Shard(0), Placement::Shard(1), Placement::PARTIAL_SUM];
    for k in 2..=4 {
        let mesh = MeshDevice::virtual_ranks(Default::default(), k);
        for from in all {
            for to in all {
                let what = format!("K={k} {from} -> {to}");
                let leaf = Tensor::<H, 2>::from_data(x.clone(), &mesh).distribute(from).require_grad();
                let y = leaf.clone().redistribute(to);
                assert_eq!(y.placement(), to, "{what}");
                let grads = loss(y, Tensor::from_data(w.clone(), &mesh)).backward();
                let g = leaf.grad(&grads).unwrap_or_else(|| panic!("{what}: no gradient reached the input"));
                let expected = if from.is_partial() { Placement::Replicate } else { from };
                assert_eq!(g.placement(), expected, "{what}");
                g.into_data().assert_approx_eq::<f32>(&want, Tolerance::default());
            }
        }
    }
}

#[test]
fn distribute_inside_a_graph_keeps_the_gradient() {
    let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
    let x = Tensor::<H, 2>::ones([4, 3], &mesh).require_grad();
    // A computed (non-leaf) tensor distributed mid-graph: before, a new leaf cut the gradient.
    let y = (x.clone() * 3.0).distribute(Placement::Shard(0));
    let grads = y.sum().backward();
    let g = x.grad(&grads).expect("the gradient reaches x through distribute");
    assert_eq!(g.into_data().to_vec::<f32>().unwrap(), vec![3.0; 12]);
    // A leaf stays a leaf (parameters are placed this way): its own gradient is recorded.
    let p = Tensor::<H, 2>::ones([4, 3], &mesh).require_grad().distribute(Placement::Shard(1));
    let grads = (p.clone() * 2.0).sum().backward();
    assert_eq!(p.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap(), vec![2.0; 12]);
}
