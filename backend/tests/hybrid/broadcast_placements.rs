//! Binary elementwise ops under every pair of input placements where the operands broadcast
//! (an outer product's column and row, a matrix against a row, a column or a lower-rank
//! operand): each equals one device's result bit for bit, and no pair runs gathered for want
//! of a rule (an operand split along another dimension is gathered where it broadcasts along
//! the lead's split, re-split where it spans it).

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::prelude::*;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type H = Hybrid<Flex>;

fn values(shape: &[usize], salt: f32) -> TensorData {
    let n: usize = shape.iter().product();
    TensorData::new((0..n).map(|v| ((v as f32) * 0.37 + salt).sin()).collect::<Vec<_>>(), shape.to_vec())
}

/// Whole, and split along each dimension of `shape` that splits over `ranks`.
fn placements(shape: &[usize], ranks: usize) -> Vec<Placement> {
    let mut all = vec![Placement::Replicate];
    all.extend((0..shape.len()).filter(|&d| shape[d] >= ranks).map(Placement::Shard));
    all
}

fn ops<B: Backend, const D: usize, const E: usize>(a: Tensor<B, D>, b: Tensor<B, E>) -> Vec<Tensor<B, D>> {
    let b = b.unsqueeze::<D>();
    vec![a.clone().add(b.clone()), a.clone().sub(b.clone()), a.clone().mul(b.clone()), a.div(b.add_scalar(3.0))]
}

fn every_pair<const D: usize, const E: usize>(lhs: &[usize], rhs: &[usize], ranks: usize) -> usize {
    let mesh = MeshDevice::virtual_ranks(FlexDevice, ranks);
    let (a, b) = (values(lhs, 0.1), values(rhs, 0.7));
    let want: Vec<TensorData> =
        ops(Tensor::<Flex, D>::from_data(a.clone(), &FlexDevice), Tensor::<Flex, E>::from_data(b.clone(), &FlexDevice))
            .into_iter()
            .map(|t| t.into_data())
            .collect();
    let mut pairs = 0;
    for pa in placements(lhs, ranks) {
        for pb in placements(rhs, ranks) {
            let x = Tensor::<H, D>::from_data(a.clone(), &mesh).distribute(pa);
            let y = Tensor::<H, E>::from_data(b.clone(), &mesh).distribute(pb);
            let before = mesh.ledger_snapshot().total_fallbacks();
            let got: Vec<TensorData> = ops(x, y).into_iter().map(|t| t.into_data()).collect();
            let at = format!("{lhs:?} {pa:?} with {rhs:?} {pb:?} on {ranks} ranks");
            assert_eq!(mesh.ledger_snapshot().total_fallbacks(), before, "{at} ran gathered");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{at}, op {i} (add, sub, mul, div)");
            }
            pairs += 1;
        }
    }
    pairs
}

#[test]
fn every_pair_of_placements_broadcasts_as_one_device_does() {
    let mut pairs = 0;
    for ranks in [2, 3] {
        pairs += every_pair::<2, 2>(&[4, 1], &[1, 6], ranks);
        pairs += every_pair::<2, 2>(&[4, 6], &[1, 6], ranks);
        pairs += every_pair::<2, 2>(&[4, 6], &[4, 1], ranks);
        pairs += every_pair::<2, 2>(&[5, 6], &[5, 6], ranks);
        pairs += every_pair::<3, 2>(&[3, 4, 6], &[4, 6], ranks);
        pairs += every_pair::<3, 1>(&[3, 4, 6], &[6], ranks);
        pairs += every_pair::<3, 3>(&[3, 4, 1], &[3, 1, 6], ranks);
    }
    assert!(pairs > 100, "{pairs} pairs");
}
