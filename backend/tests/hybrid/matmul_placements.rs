//! Matmul under every pair of input placements (whole, or split along any dimension), 2-D and
//! batched, with batches that broadcast (size 1) on either side: the product equals one
//! device's, and no pair runs gathered for want of a rule (each operand is moved to what the
//! rule needs: a batch shard's own rows, a contraction split, or whole).

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::prelude::*;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type H = Hybrid<Flex>;

fn values<const D: usize>(shape: [usize; D], salt: f32) -> TensorData {
    let n: usize = shape.iter().product();
    TensorData::new((0..n).map(|v| ((v as f32) * 0.37 + salt).sin()).collect::<Vec<_>>(), shape)
}

/// Whole, and split along each dimension of `shape` that splits over `ranks`.
fn placements(shape: &[usize], ranks: usize) -> Vec<Placement> {
    let mut all = vec![Placement::Replicate];
    all.extend((0..shape.len()).filter(|&d| shape[d] >= ranks).map(Placement::Shard));
    all
}

fn every_pair<const D: usize>(lhs: [usize; D], rhs: [usize; D], ranks: usize) -> usize {
    let mesh = MeshDevice::virtual_ranks(FlexDevice, ranks);
    let (a, b) = (values(lhs, 0.1), values(rhs, 0.7));
    let want = Tensor::<Flex, D>::from_data(a.clone(), &FlexDevice)
        .matmul(Tensor::<Flex, D>::from_data(b.clone(), &FlexDevice))
        .into_data();
    let mut pairs = 0;
    for pa in placements(&lhs, ranks) {
        for pb in placements(&rhs, ranks) {
            let x = Tensor::<H, D>::from_data(a.clone(), &mesh).distribute(pa);
            let w = Tensor::<H, D>::from_data(b.clone(), &mesh).distribute(pb);
            let before = mesh.ledger_snapshot().total_fallbacks();
            let got = x.matmul(w).into_data();
            let at = format!("{lhs:?} {pa:?} @ {rhs:?} {pb:?} on {ranks} ranks");
            assert_eq!(mesh.ledger_snapshot().total_fallbacks(), before, "{at} ran gathered");
            assert_eq!(got.shape, want.shape, "{at}");
            // A split contraction sums in another order: within f32 rounding of the sums.
            got.assert_approx_eq::<f32>(&want, burn::tensor::Tolerance::absolute(1e-5));
            pairs += 1;
        }
    }
    pairs
}

#[test]
fn every_pair_of_placements_multiplies_as_one_device_does() {
    let mut pairs = 0;
    for ranks in [2, 3] {
        pairs += every_pair([6, 4], [4, 5], ranks);
        pairs += every_pair([4, 3, 6], [4, 6, 3], ranks);
        pairs += every_pair([1, 3, 6], [4, 6, 3], ranks);
        pairs += every_pair([4, 3, 6], [1, 6, 3], ranks);
        pairs += every_pair([3, 5, 4], [3, 4, 6], ranks);
    }
    assert!(pairs > 100, "{pairs} pairs");
}
