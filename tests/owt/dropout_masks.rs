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

/// Each rank's share of the work, seen in the ops each rank ran (shape-only Meta devices): no
/// op on any rank is larger than that rank's part of the input, and the part-sized ops of all
/// ranks add up to one device's, so no rank computes the whole mask and slices it.
#[test]
fn each_rank_computes_only_its_own_part_of_the_mask() {
    use owt_hybrid::DryRun;
    use owt_meta::{Meta, MetaDevice, OpCost};
    let d = CounterDropout::new(0.5);
    let key = DropoutKey::new(5, 17);
    // Ops larger than a whole row or column (the row and column index vectors, which every
    // rank computes whole, are no larger than that).
    let big = |costs: &[OpCost]| costs.iter().map(|c| c.flops).filter(|f| *f > COLS.max(ROWS) as u64).sum::<u64>();
    let one = MetaDevice::new();
    let x = Tensor::<Autodiff<Meta>, 2>::zeros([ROWS, COLS], &one);
    one.reset_costs();
    let _ = d.forward(x, key, "fc6");
    let single = big(&one.costs());
    assert!(single >= 10 * (ROWS * COLS) as u64, "the mask is a dozen ops over the input: {single}");
    for k in 2..=4 {
        for placement in [Placement::Shard(0), Placement::Shard(1)] {
            let what = format!("K={k} {placement}");
            let dry = DryRun::new(k);
            let x = Tensor::<Autodiff<Hybrid<Meta>>, 2>::zeros([ROWS, COLS], dry.mesh()).distribute(placement);
            let parts: Vec<u64> = x.local_shapes().iter().map(|s| (s[0] * s[1]) as u64).collect();
            dry.begin_step();
            let _ = d.forward(x, key, "fc6");
            let report = dry.report();
            assert_eq!(report.ledger.total().bytes, 0, "{what}: moved data");
            for (r, costs) in report.costs.iter().enumerate() {
                let largest = costs.iter().map(|c| c.flops).max().unwrap_or(0);
                assert_eq!(largest, parts[r], "{what}: rank {r}'s largest op is not its part");
            }
            let total: u64 = report.costs.iter().map(|c| big(c)).sum();
            assert_eq!(total, single, "{what}: the ranks' work is not one device's, split");
        }
    }
}
