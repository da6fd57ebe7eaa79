//! Float pieces cross ranks in bf16 or f16 when the mesh handle says so (issue 42 point 1, the
//! collectives): the gathered values are the pieces rounded once, sums are taken in f32 after
//! the rounding, and the ledger counts the 2 bytes an element that really move.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::{Distribution, FloatDType};
use owt_hybrid::{Distributed, Exchange, Hybrid, LedgerSnapshot, MeshDevice, Placement, WirePrecision};

type H = Hybrid<Flex>;
type A = Autodiff<H>;

fn values(t: Tensor<Flex, 2>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().unwrap()
}

#[test]
fn a_gather_in_bf16_hands_every_rank_the_pieces_rounded_once_at_half_the_bytes() {
    let x = Tensor::<Flex, 2>::random([6, 5], Distribution::Normal(0.0, 1.0), &FlexDevice);
    let rounded = values(x.clone().cast(FloatDType::BF16).cast(FloatDType::F32));
    assert_ne!(rounded, values(x.clone()), "bf16 rounds these values");
    for (wire, want) in [(WirePrecision::Native, values(x.clone())), (WirePrecision::Bf16, rounded)] {
        let mesh = MeshDevice::virtual_ranks(FlexDevice, 3).with_wire(wire);
        let t = Tensor::<H, 2>::from_data(x.to_data(), &mesh).distribute(Placement::Shard(0));
        let whole = t.redistribute(Placement::Replicate);
        assert_eq!(whole.clone().into_data().dtype, burn::tensor::DType::F32, "widened back on arrival");
        assert_eq!(whole.into_data().to_vec::<f32>().unwrap(), want, "{wire}");
        // Each of 3 ranks sends its 2 rows of 5 to the 2 others.
        let size = if wire == WirePrecision::Native { 4 } else { 2 };
        assert_eq!(mesh.ledger_snapshot().by_collective("all_gather").bytes, 3 * 2 * 2 * 5 * size);
    }
}

/// One step of a column-split linear layer on batch shards (the weird trick's FC layer):
/// loss, weight gradient and the ledger, on a mesh of 2 ranks sending in `wire`, activities
/// exchanged by `scheme`.
fn fc_step(wire: WirePrecision, scheme: Exchange, x: &TensorData, w: &TensorData) -> (f32, Vec<f32>, LedgerSnapshot) {
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2).with_wire(wire).with_exchange(scheme);
    let x = Tensor::<A, 2>::from_data(x.clone(), &mesh).distribute(Placement::Shard(0));
    let w = Tensor::<A, 2>::from_data(w.clone(), &mesh).distribute(Placement::Shard(1)).require_grad();
    let y = x.matmul(w.clone());
    let loss = (y.clone() * y).mean();
    let grads = loss.backward();
    // The step's traffic, before the reads (exact whatever the wire) add theirs.
    let ledger = mesh.ledger_snapshot();
    let dw = w.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
    (loss.into_scalar(), dw, ledger)
}

#[test]
fn a_step_in_bf16_moves_half_the_bytes_entry_by_entry_and_stays_near_f32() {
    let x = Tensor::<Flex, 2>::random([8, 16], Distribution::Normal(0.0, 1.0), &FlexDevice).into_data();
    let w = Tensor::<Flex, 2>::random([16, 12], Distribution::Normal(0.0, 0.3), &FlexDevice).into_data();
    for scheme in [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices] {
        let (loss32, dw32, ledger32) = fc_step(WirePrecision::Native, scheme, &x, &w);
        for wire in [WirePrecision::Bf16, WirePrecision::F16] {
            let (loss, dw, ledger) = fc_step(wire, scheme, &x, &w);
            let (a, b) = (ledger32.as_text(), ledger.as_text());
            assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "{wire}: the same collectives");
            assert!(!a.is_empty());
            for (key, t32) in &a {
                let t = b[key];
                assert_eq!((t.bytes * 2, t.messages), (t32.bytes, t32.messages), "{wire}: {key:?}");
            }
            // bf16 keeps 8 bits of mantissa: a relative error of 2^-8 per rounding, a few roundings.
            let gap = (loss - loss32).abs() / loss32.abs();
            assert!(gap > 0.0 && gap < 2e-2, "{wire}: loss {loss} against {loss32} (gap {gap:e})");
            let scale = dw32.iter().fold(0f32, |m, v| m.max(v.abs()));
            let worst = dw.iter().zip(&dw32).fold(0f32, |m, (a, b)| m.max((a - b).abs())) / scale;
            assert!(worst < 3e-2, "{wire}: weight gradient within {worst:e} of f32's");
        }
    }
}

#[test]
fn the_wire_precision_is_the_layouts_and_leaves_the_mesh_and_other_layouts_alone() {
    use owt_hybrid::prelude::*;
    use owt_hybrid::{MeshLayout, PlanKind};
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2);
    let plain = MeshLayout::<Flex>::new(mesh.clone(), PlanKind::WeirdTrick.plan(), Exchange::AllGather);
    let halved = plain.clone().with_wire(WirePrecision::Bf16);
    assert_eq!(
        (halved.device().wire(), plain.device().wire(), mesh.wire()),
        (WirePrecision::Bf16, WirePrecision::Native, WirePrecision::Native)
    );
    assert!(halved.describe().ends_with(", wire bf16") && !plain.describe().contains("wire"));
    assert!(halved.device() == &mesh, "the same mesh, its ranks and ledger");
}

#[test]
fn a_tensor_read_back_or_moved_comes_back_exactly_whatever_the_wire() {
    // A checkpoint gathers column-split weights to save them: that read is not a step's
    // exchange, and a 16-bit wire must not round it.
    let x = Tensor::<Flex, 2>::random([4, 6], Distribution::Normal(0.0, 1.0), &FlexDevice);
    for wire in [WirePrecision::Bf16, WirePrecision::F16] {
        let mesh = MeshDevice::virtual_ranks(FlexDevice, 3).with_wire(wire);
        let t = Tensor::<H, 2>::from_data(x.to_data(), &mesh).distribute(Placement::Shard(1));
        assert_eq!(t.clone().into_data().to_vec::<f32>().unwrap(), values(x.clone()), "{wire}: read back");
        let other = MeshDevice::virtual_ranks(FlexDevice, 2);
        assert_eq!(t.to_device(&other).into_data().to_vec::<f32>().unwrap(), values(x.clone()), "{wire}: moved");
        // The step's own gather does round.
        let t = Tensor::<H, 2>::from_data(x.to_data(), &mesh).distribute(Placement::Shard(1));
        assert_ne!(t.redistribute(Placement::Replicate).into_data().to_vec::<f32>().unwrap(), values(x.clone()));
    }
}
