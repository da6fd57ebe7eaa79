//! Meshes and Meta devices live as long as a handle does (a clone, a tensor, a module) and are
//! freed with the last one; their ids are handed out again, so a process may make any number
//! of them. And a whole batch meeting a data-parallel convolution is sharded on arrival.

use std::panic::{catch_unwind, AssertUnwindSafe};

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::backend::{Device, DeviceOps};
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::Distribution;
use owt_hybrid::{Distributed, DryRun, Hybrid, MeshDevice, Placement};
use owt_meta::MetaDevice;

type H = Hybrid<Flex>;

/// Whether Burn can still find a device by its id.
fn findable<D: DeviceOps>(device: &D) -> bool {
    let id = device.to_id();
    catch_unwind(AssertUnwindSafe(|| D::from_id(id))).is_ok()
}

#[test]
fn meshes_are_freed_with_their_last_handle_and_ids_are_reused() {
    // More meshes than 16-bit ids: each freed before the next is made.
    for i in 0..100_000 {
        let mesh = MeshDevice::virtual_ranks(FlexDevice, 2);
        if i % 10_000 == 0 {
            let t = Tensor::<H, 1>::ones([4], &mesh).distribute(Placement::Shard(0));
            assert_eq!(t.into_data().to_vec::<f32>().unwrap(), vec![1.0; 4]);
        }
    }
    // A tensor keeps its mesh alive after every other handle is gone; then it goes too.
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2);
    let t = Tensor::<H, 1>::ones([6], &mesh).distribute(Placement::Shard(0));
    let probe = mesh.clone();
    drop(mesh);
    assert!(findable(&probe));
    let id = probe.to_id();
    drop(probe);
    assert!(catch_unwind(|| MeshDevice::<FlexDevice>::from_id(id)).is_ok(), "the tensor holds the mesh");
    drop(t);
    assert!(catch_unwind(|| MeshDevice::<FlexDevice>::from_id(id)).is_err(), "freed with its last tensor");
    // The default mesh is one mesh, however often it is asked for.
    assert_eq!(MeshDevice::<FlexDevice>::default(), MeshDevice::<FlexDevice>::default());
}

#[test]
fn meta_devices_and_dry_runs_are_freed() {
    for _ in 0..100_000 {
        let d = MetaDevice::new();
        assert_ne!(d.id(), 0, "id 0 is the default device's");
    }
    let d = MetaDevice::new();
    let id = d.to_id();
    drop(d);
    assert!(catch_unwind(|| MetaDevice::from_id(id)).is_err());
    // A dry run's devices label their ops from the mesh, which holds the devices: dropping
    // the dry run frees both.
    let dry = DryRun::new(3);
    let (mesh_id, rank_id) = (dry.mesh().to_id(), dry.mesh().rank_device(0).to_id());
    drop(dry);
    assert!(catch_unwind(|| MeshDevice::<MetaDevice>::from_id(mesh_id)).is_err(), "the dry run's mesh is freed");
    assert!(catch_unwind(|| MetaDevice::from_id(rank_id)).is_err(), "its devices are freed");
}

#[test]
fn a_whole_batch_is_sharded_on_arrival_at_a_data_parallel_convolution() {
    type A = Autodiff<H>;
    let device = FlexDevice;
    let x = Tensor::<Flex, 4>::random([6, 3, 9, 9], Distribution::Normal(0.0, 1.0), &device);
    let w = Tensor::<Flex, 4>::random([4, 3, 3, 3], Distribution::Normal(0.0, 1.0), &device);
    let b = Tensor::<Flex, 1>::random([4], Distribution::Normal(0.0, 1.0), &device);
    let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
    let reference = conv2d(x.clone(), w.clone(), Some(b.clone()), options.clone());
    for k in [2, 3, 4] {
        let mesh = MeshDevice::virtual_ranks(device, k);
        let xh = Tensor::<A, 4>::from_data(x.to_data(), &mesh);
        let wh = Tensor::<A, 4>::from_data(w.to_data(), &mesh).require_grad();
        let bh = Tensor::<A, 1>::from_data(b.to_data(), &mesh).require_grad();
        assert_eq!(xh.placement(), Placement::Replicate);
        mesh.reset_ledger();
        let y = conv2d(xh, wh.clone(), Some(bh.clone()), options.clone());
        assert_eq!(y.placement(), Placement::Shard(0), "K={k}: each rank convolves its own images");
        let rows: usize = y.local_shapes().iter().map(|s| s[0]).sum();
        assert_eq!(rows, 6, "K={k}: the ranks' pieces are the batch once, not K times");
        let grads = y.clone().sum().backward();
        assert_eq!(wh.grad(&grads).unwrap().placement(), Placement::PARTIAL_SUM, "K={k}: summands per batch shard");
        let ledger = mesh.ledger_snapshot();
        assert_eq!(ledger.total_fallbacks(), 0, "K={k}: {:?}", ledger.fallbacks);
        let got = y.inner().into_data().to_vec::<f32>().unwrap();
        let want = reference.to_data().to_vec::<f32>().unwrap();
        let gap = got.iter().zip(&want).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(gap <= 1e-5, "K={k}: output differs by {gap}");
    }
}
