//! The activities an exchange keeps with a sharded left operand (`DTensor::kept`) are the
//! whole operand in order: the weight gradient of an FC layer, which reads them instead of
//! exchanging the input again, equals one device's under schemes a, b and c and K = 2..4, and
//! so does a second product with an operand kept by an exchange along its other dimension.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::{Distribution, Tolerance};
use owt_hybrid::{Distributed, Exchange, Hybrid, MeshDevice, Placement};

type A = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

/// Uneven sizes, so a block or row out of place shows.
const ROWS: usize = 10;
const INNER: usize = 7;
const COLS: usize = 6;

fn random(shape: [usize; 2]) -> TensorData {
    Tensor::<Flex, 2>::random(shape, Distribution::Normal(0.0, 1.0), &FlexDevice).into_data()
}

const SCHEMES: [Exchange; 3] = [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices];

#[test]
fn the_weight_gradient_from_the_kept_inputs_is_one_devices() {
    let (x, w, g) = (random([ROWS, INNER]), random([INNER, COLS]), random([ROWS, COLS]));
    let (fx, fw) = (
        Tensor::<A, 2>::from_data(x.clone(), &FlexDevice).require_grad(),
        Tensor::<A, 2>::from_data(w.clone(), &FlexDevice).require_grad(),
    );
    let grads = (fx.clone().matmul(fw.clone()) * Tensor::from_data(g.clone(), &FlexDevice)).sum().backward();
    let (want_x, want_w) = (fx.grad(&grads).unwrap().into_data(), fw.grad(&grads).unwrap().into_data());
    for scheme in SCHEMES {
        for k in 2..=4 {
            let what = format!("scheme {} K={k}", scheme.letter());
            let mesh = MeshDevice::virtual_ranks(FlexDevice, k).with_exchange(scheme);
            let hx = Tensor::<H, 2>::from_data(x.clone(), &mesh).distribute(Placement::Shard(0)).require_grad();
            let hw = Tensor::<H, 2>::from_data(w.clone(), &mesh).distribute(Placement::Shard(1)).require_grad();
            let y = hx.clone().matmul(hw.clone());
            assert_eq!(y.placement(), Placement::Shard(1), "{what}");
            let dy = Tensor::<H, 2>::from_data(g.clone(), &mesh).distribute(Placement::Shard(1));
            mesh.reset_ledger();
            let grads = (y * dy).sum().backward();
            // Nothing of x crosses again for its weight gradient: the input gradient's
            // reduce-scatter and the loss's reductions are the backward pass's only traffic.
            let ledger = mesh.ledger_snapshot();
            assert_eq!(ledger.by_collective("all_gather").bytes, 0, "{what}: x exchanged again: {ledger:?}");
            assert_eq!(ledger.by_collective("broadcast").bytes, 0, "{what}: x exchanged again: {ledger:?}");
            let gw = hw.grad(&grads).unwrap();
            assert_eq!(gw.placement(), Placement::Shard(1), "{what}");
            gw.into_data().assert_approx_eq::<f32>(&want_w, Tolerance::default());
            hx.grad(&grads).unwrap().into_data().assert_approx_eq::<f32>(&want_x, Tolerance::default());
        }
    }
}

#[test]
fn an_operand_kept_by_an_exchange_along_its_columns_is_whole_and_in_order() {
    // `xt` split by columns (its contraction dimension) meets column-split right operands
    // twice: the first product exchanges it (along dim 1) and keeps it, the second reads the
    // kept copy.
    let (xt, r1, r2) = (random([INNER, ROWS]), random([ROWS, COLS]), random([ROWS, COLS]));
    let want = |r: &TensorData| {
        Tensor::<Flex, 2>::from_data(xt.clone(), &FlexDevice)
            .matmul(Tensor::from_data(r.clone(), &FlexDevice))
            .into_data()
    };
    let (want1, want2) = (want(&r1), want(&r2));
    for scheme in SCHEMES {
        for k in 2..=4 {
            let what = format!("scheme {} K={k}", scheme.letter());
            let mesh = MeshDevice::virtual_ranks(FlexDevice, k).with_exchange(scheme);
            let hxt = Tensor::<Hybrid<Flex>, 2>::from_data(xt.clone(), &mesh).distribute(Placement::Shard(1));
            let on =
                |r: &TensorData| Tensor::<Hybrid<Flex>, 2>::from_data(r.clone(), &mesh).distribute(Placement::Shard(1));
            let first = hxt.clone().matmul(on(&r1));
            mesh.reset_ledger();
            let second = hxt.matmul(on(&r2));
            assert_eq!(mesh.ledger_snapshot().total().bytes, 0, "{what}: the second product moved the operand again");
            first.into_data().assert_approx_eq::<f32>(&want1, Tolerance::default());
            second.into_data().assert_approx_eq::<f32>(&want2, Tolerance::default());
        }
    }
}
