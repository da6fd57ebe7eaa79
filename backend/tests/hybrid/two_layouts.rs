//! The exchange scheme is a value of the layout (of its handle of the mesh), not a mode of the
//! mesh (issue 40 point 4): two layouts over one mesh keep their own schemes, whichever was
//! made last. (Constructing a layout used to set the scheme on the shared mesh, so the second
//! silently changed the first's matmuls.)

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::prelude::*;
use owt_hybrid::prelude::*;
use owt_hybrid::{Distributed, Exchange, Hybrid, MeshDevice, MeshLayout, Placement, PlanKind};

/// The collective a matmul of batch-sharded activities by a column-split weight uses on
/// `layout`'s device, from the ledger: the one that moved bytes.
fn exchanged_by(layout: &MeshLayout<Flex>) -> &'static str {
    let mesh = layout.device();
    mesh.reset_ledger();
    let x = Tensor::<Hybrid<Flex>, 2>::ones([4, 3], mesh).distribute(Placement::Shard(0));
    let w = Tensor::<Hybrid<Flex>, 2>::ones([3, 2], mesh).distribute(Placement::Shard(1));
    let y = x.matmul(w);
    assert_eq!(y.placement(), Placement::Shard(1));
    let ledger = mesh.ledger_snapshot();
    let moved = |c: &str| ledger.by_collective(c).bytes > 0;
    match (moved("all_gather"), moved("broadcast")) {
        (true, false) => "all_gather",
        (false, true) => "broadcast",
        other => panic!("expected one exchange, got {other:?}: {ledger:?}"),
    }
}

#[test]
fn two_layouts_over_one_mesh_keep_their_own_exchange_schemes() {
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2);
    let a = MeshLayout::<Flex>::new(mesh.clone(), PlanKind::WeirdTrick.plan(), Exchange::AllGather);
    let b = MeshLayout::<Flex>::new(mesh.clone(), PlanKind::WeirdTrick.plan(), Exchange::Broadcast);
    assert_eq!(exchanged_by(&a), "all_gather", "a keeps scheme a after b was made");
    assert_eq!(exchanged_by(&b), "broadcast");
    let again = MeshLayout::<Flex>::new(mesh.clone(), PlanKind::WeirdTrick.plan(), Exchange::AllGather);
    assert_eq!(exchanged_by(&b), "broadcast", "b keeps scheme b after another layout was made");
    assert_eq!(exchanged_by(&again), "all_gather");
    // One mesh throughout: the handles compare equal and the mesh itself keeps the default.
    assert!(a.device() == b.device() && b.device() == &mesh);
    assert_eq!(mesh.exchange(), Exchange::default());
    assert!(a.describe().contains("scheme a") && b.describe().contains("scheme b"));
}
