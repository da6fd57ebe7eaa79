//! Counter-based dropout on a mesh: every rank computes only its part of the mask, nothing
//! moves, and the mask is bit for bit the one a single device draws, for K = 1..4 and every
//! layout an FC input has under the plans (batch shards, column shards, whole).

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
use owt_models::{CounterDropout, DropoutKey};

type H = Autodiff<Hybrid<Flex>>;
type Ref = Autodiff<Flex>;

/// Uneven sizes, so shards differ in length and a row or column offset off by one shows.
const ROWS: usize = 13;
const COLS: usize = 37;

#[test]
fn every_rank_draws_its_part_of_the_one_device_mask_without_moving_anything() {
    let device = Default::default();
    let x = Tensor::<Ref, 2>::random([ROWS, COLS], Distribution::Uniform(-1.0, 1.0), &device);
    let data = x.clone().into_data();
    let d = CounterDropout::new(0.5);
    for (key, layer) in [(DropoutKey::new(0, 0), "fc6"), (DropoutKey::new(5, 17).from_row(64), "fc7")] {
        let want_mask = d.mask(&x, key, layer).into_data();
        let want_out = d.forward(x.clone(), key, layer).into_data();
        for k in 1..=4 {
            for placement in [Placement::Shard(0), Placement::Shard(1), Placement::Replicate] {
                let mesh = MeshDevice::virtual_ranks(Default::default(), k);
                let xh = Tensor::<H, 2>::from_data(data.clone(), &mesh).distribute(placement);
                mesh.reset_ledger();
                let mask = d.mask(&xh, key, layer);
                let out = d.forward(xh.clone(), key, layer);
                let what = format!("K={k} {placement} {layer}");
                let ledger = mesh.ledger_snapshot();
                assert_eq!(ledger.total().bytes, 0, "{what}: the mask moved data: {ledger:?}");
                assert_eq!(ledger.total_fallbacks(), 0, "{what}: fallbacks");
                assert_eq!(mask.placement(), placement, "{what}: the mask is not in the input's layout");
                assert_eq!(out.placement(), placement, "{what}: the output left the input's layout");
                assert_eq!(out.local_shapes(), xh.local_shapes(), "{what}: per-rank work");
                assert_eq!(mask.into_data(), want_mask, "{what}: mask");
                assert_eq!(out.into_data(), want_out, "{what}: output");
            }
        }
    }
}
