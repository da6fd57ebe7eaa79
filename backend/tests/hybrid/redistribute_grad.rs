//! `redistribute` is differentiable on `Autodiff<Hybrid<Flex>>`: for every pair of placements
//! on K = 2, 3, 4 the gradient through it equals Flex's (where there is nothing to
//! redistribute), comes back in the input's placement (whole for a pending sum), and
//! `distribute` inside a graph no longer cuts the gradient.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::{Module, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::{Distribution, Tolerance};
use owt_hybrid::{partial_from_summands, Distributed, Hybrid, MeshDevice, Placement};

type A = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

fn loss<B: burn::tensor::backend::Backend>(y: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 1> {
    // Not linear, so the gradient depends on the value: w + 2 y.
    (y.clone() * w).sum() + (y.clone() * y).sum()
}

/// `x` as a pending sum of K random, different summands.
fn summands_of(x: &TensorData, mesh: &MeshDevice<FlexDevice>) -> Tensor<Hybrid<Flex>, 2> {
    let k = mesh.size();
    let whole = Tensor::<Flex, 2>::from_data(x.clone(), &FlexDevice);
    let mut parts: Vec<Tensor<Flex, 2>> =
        (1..k).map(|_| Tensor::random(whole.dims(), Distribution::Normal(0.0, 1.0), &FlexDevice)).collect();
    let rest = parts.iter().fold(whole, |acc, p| acc - p.clone());
    parts.insert(0, rest);
    partial_from_summands(parts.into_iter().map(|p| p.into_data()).collect(), mesh)
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
                // A pending sum whose ranks hold different summands, not the value on rank 0.
                let start = match from {
                    Placement::Partial(_) => Tensor::from_inner(summands_of(&x, &mesh)),
                    _ => Tensor::<H, 2>::from_data(x.clone(), &mesh).distribute(from),
                };
                assert_eq!(start.placement(), from, "{what}");
                let leaf = start.require_grad();
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

/// A layer that places its own weight inside its forward pass.
#[derive(Module, Debug)]
struct SplitInForward<B: burn::tensor::backend::Backend> {
    weight: Param<Tensor<B, 2>>,
}

/// `distribute` of a parameter inside a forward pass keeps the gradient flowing to the
/// parameter (before, the distributed copy was a new leaf and the parameter got no gradient).
#[test]
fn a_parameter_distributed_inside_the_forward_pass_still_gets_its_gradient() {
    let w = Tensor::<Flex, 2>::random([5, 4], Distribution::Normal(0.0, 1.0), &FlexDevice).into_data();
    let x = Tensor::<Flex, 2>::random([6, 5], Distribution::Normal(0.0, 1.0), &FlexDevice).into_data();
    let reference = SplitInForward::<A> { weight: Param::from_data(w.clone(), &FlexDevice) };
    let y = Tensor::<A, 2>::from_data(x.clone(), &FlexDevice).matmul(reference.weight.val());
    let grads = GradientsParams::from_grads(y.powf_scalar(2.0).sum().backward(), &reference);
    let want = grads.get::<Flex, 2>(reference.weight.id).unwrap().into_data();
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2);
    let layer = SplitInForward::<H> { weight: Param::from_data(w, &mesh) };
    let split = layer.weight.val().distribute(Placement::Shard(1));
    let xh = Tensor::<H, 2>::from_data(x, &mesh).distribute(Placement::Shard(0));
    let y = xh.matmul(split);
    let grads = GradientsParams::from_grads(y.powf_scalar(2.0).sum().backward(), &layer);
    let got = grads.get::<Hybrid<Flex>, 2>(layer.weight.id).expect("the parameter has its gradient");
    got.into_data().assert_approx_eq::<f32>(&want, Tolerance::default());
}
