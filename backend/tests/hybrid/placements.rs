//! Placements round-trip, shards have the design's sizes, and collectives move exactly the
//! bytes the ledger says.

use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type H = Hybrid<Flex>;

fn mesh(k: usize) -> MeshDevice<burn::backend::flex::FlexDevice> {
    MeshDevice::virtual_ranks(Default::default(), k)
}

fn values<const D: usize>(t: Tensor<H, D>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().unwrap()
}

#[test]
fn every_placement_reads_back_the_global_tensor() {
    let reference = Tensor::<Flex, 2>::random([10, 6], Distribution::Normal(0.0, 1.0), &Default::default());
    let data = reference.to_data();
    for k in 1..=4 {
        let m = mesh(k);
        let t = Tensor::<H, 2>::from_data(data.clone(), &m);
        assert_eq!(t.placement(), Placement::Replicate);
        for placement in [Placement::Shard(0), Placement::Shard(1), Placement::PARTIAL_SUM, Placement::Replicate] {
            let d = t.clone().distribute(placement);
            assert_eq!(d.placement(), placement);
            assert_eq!(values(d), data.to_vec::<f32>().unwrap(), "K={k} {placement}");
        }
    }
}

#[test]
fn shards_are_uneven_as_designed() {
    let m = mesh(4);
    let t = Tensor::<H, 2>::zeros([10, 3], &m).distribute(Placement::Shard(0));
    let rows: Vec<usize> = t.local_shapes().iter().map(|s| s[0]).collect();
    assert_eq!(rows, vec![3, 3, 2, 2]);
    let t = Tensor::<H, 2>::zeros([2, 10], &m).distribute(Placement::Shard(1));
    let cols: Vec<usize> = t.local_shapes().iter().map(|s| s[1]).collect();
    assert_eq!(cols, vec![3, 3, 2, 2]);
}

#[test]
fn ledger_counts_the_analytic_volume_of_each_collective() {
    let k = 4;
    let m = mesh(k);
    let (rows, cols) = (12usize, 5usize);
    let bytes = (rows * cols * 4) as u64;
    let t = Tensor::<H, 2>::ones([rows, cols], &m);

    // Replicate -> Shard is free.
    m.reset_ledger();
    let sharded = t.clone().distribute(Placement::Shard(0));
    assert_eq!(m.ledger_snapshot().total().bytes, 0);

    // all_gather: every rank receives the K-1 slices it lacks.
    let _ = sharded.clone().distribute(Placement::Replicate);
    let s = m.ledger_snapshot();
    assert_eq!(s.by_collective("all_gather").bytes, (k as u64 - 1) * bytes);
    assert_eq!(s.by_collective("all_gather").messages, (k * (k - 1)) as u64);

    // all_reduce (ring): reduce-scatter then all-gather, 2(K-1)/K of the tensor per rank, of a
    // real pending sum (every rank holds a different summand).
    m.reset_ledger();
    let partial = summands_of::<2>(&[rows, cols], k, &m);
    let want = (0..rows * cols).map(|i| i as f32 * k as f32).collect::<Vec<_>>();
    let whole = {
        let _phase = m.phase("grad-sync");
        partial.distribute(Placement::Replicate)
    };
    let s = m.ledger_snapshot();
    assert_eq!(values(whole), want);
    assert_eq!(s.by_collective("all_reduce").bytes, 2 * (k as u64 - 1) * bytes);
    assert_eq!(s.by_phase("grad-sync").bytes, 2 * (k as u64 - 1) * bytes);
    assert_eq!(s.by_phase("-").bytes, 0);
}

/// A pending sum whose rank r holds `i + r * 0.5 - (K-1) * 0.25` at element i (different on
/// every rank, exactly representable), so the sum is `K * i`.
fn summands_of<const D: usize>(
    shape: &[usize],
    k: usize,
    m: &MeshDevice<burn::backend::flex::FlexDevice>,
) -> Tensor<H, D> {
    let n: usize = shape.iter().product();
    let summands = (0..k)
        .map(|r| {
            let v: Vec<f32> = (0..n).map(|i| i as f32 + r as f32 * 0.5 - (k - 1) as f32 * 0.25).collect();
            TensorData::new(v, shape.to_vec())
        })
        .collect();
    owt_hybrid::partial_from_summands::<Flex, D>(summands, m)
}

#[test]
fn partial_sums_are_summed_once() {
    let m = mesh(3);
    // Three different summands per element; element i sums to 3i: the value is [0, 3, 6].
    let t = summands_of::<1>(&[3], 3, &m);
    assert_eq!(t.placement(), Placement::PARTIAL_SUM);
    // Linear ops keep the summands; the read-back sums them exactly once.
    let y = (t.clone() * 2.0 + t.clone()).sum();
    assert_eq!(values(y), vec![27.0]);
    // A non-linear op resolves the sum first (summand by summand it would differ).
    let z = t.clone().exp();
    let want: Vec<f32> = [0.0f32, 3.0, 6.0].iter().map(|v| v.exp()).collect();
    assert_eq!(values(z), want);
    // A product of two pending sums is the product of the sums, not the sum of products.
    assert_eq!(values(t.clone() * t), vec![0.0, 9.0, 36.0]);
}

#[test]
#[should_panic(expected = "not on the same device")]
fn tensors_of_two_meshes_cannot_meet() {
    let a = Tensor::<H, 1>::ones([3], &mesh(2));
    let b = Tensor::<H, 1>::ones([3], &mesh(2));
    let _ = a + b;
}

#[test]
fn the_default_device_is_one_rank_on_the_inner_default() {
    let a = MeshDevice::<burn::backend::flex::FlexDevice>::default();
    let b = MeshDevice::<burn::backend::flex::FlexDevice>::default();
    assert_eq!(a.size(), 1);
    assert_eq!(a, b, "Default must name the same mesh every time");
    assert_ne!(a, mesh(1), "a mesh made by a call is a new mesh");
    // Tensors created with the default device work like plain Flex tensors.
    let t = Tensor::<H, 1>::from_data([1.0f32, 2.0], &Default::default());
    assert_eq!(values(t * 2.0), vec![2.0, 4.0]);
}
