//! Gather, scatter_add and select_add along each dimension under every placement of the tensor, the
//! indices and the values (whole, or split along any dimension): each equals one device's
//! result, and no combination that splits only other dimensions runs gathered for want of a
//! rule (operands split along different dimensions are re-split to one layout).

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::prelude::*;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type H = Hybrid<Flex>;

const SHAPE: [usize; 2] = [4, 6];

fn values(salt: f32) -> TensorData {
    let n: usize = SHAPE.iter().product();
    TensorData::new((0..n).map(|v| ((v as f32) * 0.37 + salt).sin()).collect::<Vec<_>>(), SHAPE)
}

/// Indices into dimension `dim` of `SHAPE`, repeating so that scatter_add sums collisions.
fn indices(dim: usize) -> TensorData {
    let n: usize = SHAPE.iter().product();
    TensorData::new((0..n).map(|v| ((v * 7 + 3) % SHAPE[dim]) as i64).collect::<Vec<_>>(), SHAPE)
}

/// gather, scatter_add, and select_add of the values' first two rows or columns.
fn ops<B: Backend>(dim: usize, t: Tensor<B, 2>, i: Tensor<B, 2, Int>, v: Tensor<B, 2>) -> [Tensor<B, 2>; 3] {
    use burn::tensor::IndexingUpdateOp;
    let rows = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![2i64, 0], [2]), &t.device());
    let picked = v.clone().narrow(dim, 1, 2);
    [
        t.clone().gather(dim, i.clone()),
        t.clone().scatter(dim, i, v, IndexingUpdateOp::Add),
        t.select_assign(dim, rows, picked, IndexingUpdateOp::Add),
    ]
}

#[test]
fn gather_and_scatter_under_every_placement_compute_what_one_device_does() {
    let mut combos = 0;
    for ranks in [2, 3] {
        let mesh = MeshDevice::virtual_ranks(FlexDevice, ranks);
        let all: Vec<Placement> = [Placement::Replicate, Placement::Shard(0), Placement::Shard(1)]
            .into_iter()
            .filter(|p| p.shard_dim().is_none_or(|d| SHAPE[d] >= ranks))
            .collect();
        for dim in 0..2 {
            let want = ops::<Flex>(
                dim,
                Tensor::from_data(values(0.1), &FlexDevice),
                Tensor::from_data(indices(dim), &FlexDevice),
                Tensor::from_data(values(0.7), &FlexDevice),
            )
            .map(|t| t.into_data());
            for &pt in &all {
                for &pi in &all {
                    for &pv in &all {
                        let t = Tensor::<H, 2>::from_data(values(0.1), &mesh).distribute(pt);
                        let i = Tensor::<H, 2, Int>::from_data(indices(dim), &mesh).distribute(pi);
                        let v = Tensor::<H, 2>::from_data(values(0.7), &mesh).distribute(pv);
                        let before = mesh.ledger_snapshot().total_fallbacks();
                        let got = ops(dim, t, i, v).map(|t| t.into_data());
                        let at = format!("dim {dim}: tensor {pt:?}, indices {pi:?}, values {pv:?} on {ranks} ranks");
                        // An operand split along the indexed dimension may be gathered.
                        let splits_dim = [pt, pi, pv].contains(&Placement::Shard(dim));
                        if !splits_dim {
                            let fell = mesh.ledger_snapshot().total_fallbacks() - before;
                            assert_eq!(fell, 0, "{at} ran gathered");
                        }
                        assert_eq!(got[0], want[0], "{at}: gather");
                        got[1].assert_approx_eq::<f32>(&want[1], burn::tensor::Tolerance::absolute(1e-6));
                        assert_eq!(got[2], want[2], "{at}: select_add");
                        combos += 1;
                    }
                }
            }
        }
    }
    assert!(combos > 50, "{combos}");
}
