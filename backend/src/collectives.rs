//! Every transfer between ranks, in one place: all_gather, reduce_scatter, all_reduce,
//! broadcast and send, built on the inner backend's device transfers and recorded in the
//! mesh's ledger (bytes = elements x element size of every piece that lands on another rank;
//! one message per piece). Placement changes without communication (Replicate to Shard by
//! local slicing) live here too, so the full redistribution table is in one file.
//!
//! No collective makes an empty piece: a dimension shorter than the mesh is never split
//! ([`can_shard`]); tensors with fewer elements than ranks are all-reduced by sending every
//! summand whole instead of by ring slices.

use burn::tensor::backend::Backend;
use burn::tensor::TensorMetadata;

use crate::dtensor::{bytes_of, slices_along, DTensor};
use crate::kind::ShardKind;
use crate::ledger::Traffic;
use crate::mesh::MeshDevice;
use crate::mutation::{self, Mutation};
use crate::placement::{can_shard, shard_ranges, Placement};

pub use crate::placement::ReduceOp;

pub use crate::ledger::names;

/// Moves `p` from rank `from` to rank `to`, counting it under `collective` unless from == to.
fn transfer<B: Backend, K: ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    p: K::Prim,
    from: usize,
    to: usize,
    traffic: &mut Traffic,
) -> K::Prim {
    if from == to {
        return p;
    }
    traffic.bytes += bytes_of(&p);
    traffic.messages += 1;
    K::to_device(p, mesh.rank_device(to), mesh.transport())
}

/// Concatenates pieces along `dim`, leaving out empty ones (uneven shards of tiny tensors).
fn cat_nonempty<B: Backend, K: ShardKind<B>>(mut parts: Vec<K::Prim>, dim: usize) -> K::Prim {
    if parts.len() > 1 {
        let nonempty: Vec<K::Prim> = parts.iter().filter(|p| p.shape().num_elements() > 0).cloned().collect();
        if !nonempty.is_empty() {
            parts = nonempty;
        }
    }
    if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        K::cat(parts, dim)
    }
}

/// `Shard(dim)` to `Replicate`: every rank receives every other rank's slice and concatenates.
pub fn all_gather<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    assert_eq!(t.placement, Placement::Shard(dim), "all_gather({dim}) needs Shard({dim}), got {}", t.placement);
    let k = t.ranks();
    let mut traffic = Traffic::default();
    let shards: Vec<K::Prim> = (0..k)
        .map(|dst| {
            let parts =
                (0..k).map(|src| transfer::<B, K>(&t.mesh, t.shards[src].clone(), src, dst, &mut traffic)).collect();
            cat_nonempty::<B, K>(parts, dim)
        })
        .collect();
    t.mesh.record(names::ALL_GATHER, traffic);
    DTensor::from_parts(t.mesh, t.shape, t.dtype, Placement::Replicate, shards)
}

fn combine<B: Backend, K: ShardKind<B>>(a: K::Prim, b: K::Prim, op: ReduceOp) -> K::Prim {
    match op {
        ReduceOp::Sum => K::add(a, b),
        ReduceOp::Max => K::max(a, b),
    }
}

/// The reduction of a `Partial` tensor (panics on any other placement).
fn reduce_op_of<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>, what: &str) -> ReduceOp {
    match t.placement {
        Placement::Partial(op) => op,
        p => panic!("{what} needs Partial, got {p}"),
    }
}

/// `Partial` to `Shard(dim)`: rank r receives every other rank's r-th slice and reduces. A
/// dimension shorter than the mesh is not split: the result is all-reduced to `Replicate`.
pub fn reduce_scatter<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    let op = reduce_op_of(&t, "reduce_scatter");
    if !can_shard(t.shape[dim], t.ranks()) {
        return all_reduce(t);
    }
    let mut traffic = Traffic::default();
    let out = reduce_scatter_op(t, dim, op, &mut traffic);
    out.mesh.record(names::REDUCE_SCATTER, traffic);
    out
}

fn reduce_scatter_op<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    dim: usize,
    op: ReduceOp,
    traffic: &mut Traffic,
) -> DTensor<B, K> {
    let k = t.ranks();
    let ranges = shard_ranges(t.shape[dim], k);
    let shards: Vec<K::Prim> = (0..k)
        .map(|dst| {
            let slices = slices_along(&t.shape, dim, ranges[dst].clone());
            (0..k)
                .map(|src| {
                    let piece = K::slice(t.shards[src].clone(), &slices);
                    if ranges[dst].is_empty() {
                        piece
                    } else {
                        transfer::<B, K>(&t.mesh, piece, src, dst, traffic)
                    }
                })
                .reduce(|a, b| combine::<B, K>(a, b, op))
                .expect("at least one rank")
        })
        .collect();
    DTensor::from_parts(t.mesh, t.shape, t.dtype, Placement::Shard(dim), shards)
}

/// `Partial` to `Replicate` by the placement's reduction: a ring all-reduce (reduce-scatter,
/// then all-gather, over the flattened tensor), moving 2(K-1)/K of the tensor per rank. A
/// tensor with fewer elements than ranks (a scalar loss, a correct count) has no ring slice
/// for every rank: each rank receives every other rank's summand whole and reduces them in
/// rank order, so every rank computes the same value.
pub fn all_reduce<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
    let op = reduce_op_of(&t, "all_reduce");
    if t.ranks() > 1 && mutation::active(Mutation::MissingAllReduce) {
        let mut t = t;
        t.placement = Placement::Replicate;
        return t;
    }
    if t.ranks() > 1 && !can_shard(t.shape.num_elements(), t.ranks()) {
        return all_reduce_whole(t, op);
    }
    let t = if op == ReduceOp::Sum && t.ranks() > 1 {
        match all_reduce_on_devices(t) {
            Ok(done) => return done,
            Err(t) => t,
        }
    } else {
        t
    };
    let shape = t.shape.clone();
    let flat = burn::tensor::Shape::new([shape.num_elements()]);
    let flat_t = t.map::<K>(flat.clone(), |_, p| K::reshape(p, flat.clone()));
    let mut traffic = Traffic::default();
    let scattered = reduce_scatter_op(flat_t, 0, op, &mut traffic);
    let k = scattered.ranks();
    let shards: Vec<K::Prim> = (0..k)
        .map(|dst| {
            let parts = (0..k)
                .map(|src| transfer::<B, K>(&scattered.mesh, scattered.shards[src].clone(), src, dst, &mut traffic))
                .collect();
            K::reshape(cat_nonempty::<B, K>(parts, 0), shape.clone())
        })
        .collect();
    scattered.mesh.record(names::ALL_REDUCE, traffic);
    DTensor::from_parts(scattered.mesh, shape, scattered.dtype, Placement::Replicate, shards)
}

/// The sum by the inner backend's own all-reduce across the ranks' devices (NCCL on CUDA),
/// where the mesh has one for this kind; recorded as the ring it replaces (the same bytes).
fn all_reduce_on_devices<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> Result<DTensor<B, K>, DTensor<B, K>> {
    let DTensor { mesh, shape, dtype, placement, shards, kept } = t;
    match K::device_all_reduce(&mesh, shards) {
        Ok(summed) => {
            let k = mesh.size() as u64;
            let piece = (shape.num_elements() * dtype.size()) as u64;
            mesh.record(names::ALL_REDUCE, Traffic { bytes: 2 * (k - 1) * piece, messages: 2 * k * (k - 1) });
            Ok(DTensor::from_parts(mesh, shape, dtype, Placement::Replicate, summed))
        }
        Err(shards) => Err(DTensor { mesh, shape, dtype, placement, shards, kept }),
    }
}

/// The all-reduce of tiny tensors: every summand to every rank, reduced in rank order.
fn all_reduce_whole<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, op: ReduceOp) -> DTensor<B, K> {
    let k = t.ranks();
    let mut traffic = Traffic::default();
    let shards: Vec<K::Prim> = (0..k)
        .map(|dst| {
            (0..k)
                .map(|src| transfer::<B, K>(&t.mesh, t.shards[src].clone(), src, dst, &mut traffic))
                .reduce(|a, b| combine::<B, K>(a, b, op))
                .expect("at least one rank")
        })
        .collect();
    t.mesh.record(names::ALL_REDUCE, traffic);
    DTensor::from_parts(t.mesh, t.shape, t.dtype, Placement::Replicate, shards)
}

/// One rank's tensor to every rank: `Replicate` from `root`'s copy.
pub fn broadcast<B: Backend, K: ShardKind<B>>(mesh: &MeshDevice<B::Device>, p: K::Prim, root: usize) -> DTensor<B, K> {
    let mut traffic = Traffic::default();
    let out = DTensor::replicated(mesh.clone(), |dst| transfer::<B, K>(mesh, p.clone(), root, dst, &mut traffic));
    mesh.record(names::BROADCAST, traffic);
    out
}

/// Point-to-point: `p` from rank `from` to rank `to`.
pub fn send<B: Backend, K: ShardKind<B>>(mesh: &MeshDevice<B::Device>, p: K::Prim, from: usize, to: usize) -> K::Prim {
    let mut traffic = Traffic::default();
    let out = transfer::<B, K>(mesh, p, from, to, &mut traffic);
    mesh.record(names::SEND, traffic);
    out
}

/// `Replicate` to `Shard(dim)`: each rank keeps its slice. No communication. A dimension
/// shorter than the mesh is not split: the tensor stays `Replicate` (see [`can_shard`]).
pub fn shard_locally<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    assert_eq!(t.placement, Placement::Replicate, "local sharding needs Replicate, got {}", t.placement);
    if !can_shard(t.shape[dim], t.ranks()) {
        return t;
    }
    let ranges = shard_ranges(t.shape[dim], t.ranks());
    let shape = t.shape.clone();
    t.map_placed::<K>(shape.clone(), Placement::Shard(dim), |r, p| {
        K::slice(p, &slices_along(&shape, dim, ranges[r].clone()))
    })
}

/// `Replicate` to `Partial(op)`: for a sum rank 0 keeps the value and the others hold zeros;
/// for a maximum every rank keeps it. No communication.
pub fn partial_locally<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, op: ReduceOp) -> DTensor<B, K> {
    assert_eq!(t.placement, Placement::Replicate, "local partial needs Replicate, got {}", t.placement);
    let shape = t.shape.clone();
    t.map_placed::<K>(
        shape,
        Placement::Partial(op),
        |r, p| {
            if r == 0 || op == ReduceOp::Max {
                p
            } else {
                K::zeros_like(&p)
            }
        },
    )
}

/// Any placement to `target`, by the cheapest route this module knows:
///
/// | from \ to | Replicate | Shard(d) | Partial |
/// |---|---|---|---|
/// | Replicate | - | local slice (none if dim d is shorter than the mesh) | local (rank 0 keeps it) |
/// | Shard(e) | all_gather(e) | all_gather(e) + local slice (d != e) | all_gather + local |
/// | Partial | all_reduce | reduce_scatter(d) (all_reduce if dim d is shorter than the mesh) | all_reduce + local (another reduction) |
pub fn redistribute<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, target: Placement) -> DTensor<B, K> {
    if t.placement == target {
        return t;
    }
    // A kept whole copy (see `DTensor::kept`) makes any layout a local one.
    if let Some(whole) = t.kept_whole() {
        return redistribute(whole, target);
    }
    if t.ranks() == 1 {
        let mut t = t;
        t.placement = target;
        return t;
    }
    match (t.placement, target) {
        (Placement::Replicate, Placement::Shard(d)) => shard_locally(t, d),
        (Placement::Replicate, Placement::Partial(op)) => partial_locally(t, op),
        (Placement::Shard(e), Placement::Replicate) => all_gather(t, e),
        (Placement::Shard(e), Placement::Shard(d)) => shard_locally(all_gather(t, e), d),
        (Placement::Shard(e), Placement::Partial(op)) => partial_locally(all_gather(t, e), op),
        (Placement::Partial(_), Placement::Replicate) => all_reduce(t),
        (Placement::Partial(_), Placement::Shard(d)) => reduce_scatter(t, d),
        (Placement::Partial(_), Placement::Partial(op)) => partial_locally(all_reduce(t), op),
        (from, to) => unreachable!("redistribute {from} -> {to}"),
    }
}
