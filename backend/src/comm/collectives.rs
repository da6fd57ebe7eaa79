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

use super::axis::Axis;
use super::ledger_key::Collective;
use super::process_group::collective_failed;
use super::wire;
use crate::comm::ledger::Traffic;
use crate::comm::transport::Transport;
use crate::mesh::MeshDevice;
use crate::mutation::{self, Mutation};
use crate::tensor::dtensor::{bytes_of, slices_along, DTensor};
use crate::tensor::kind::{holds_values, ShardKind};
use crate::tensor::placement::{can_shard, shard_ranges, Placement};

pub use crate::tensor::placement::ReduceOp;

pub use crate::comm::ledger::names;

/// One piece leaving global rank `src` (one of this process's) for global rank `dst`; `key`
/// orders the pieces a rank receives in one collective (the order a reduction adds them in).
pub(crate) struct Outgoing<P> {
    pub key: usize,
    pub src: usize,
    pub dst: usize,
    pub piece: P,
}

/// Delivers `sends`, each from one of this process's ranks of `axis`, and returns what each
/// of this process's ranks received (by local index: `[r - first]`), ordered by key. Pieces
/// between ranks of this process move by the axis's transport; pieces for another process's
/// ranks are read back to the host and cross in the group's one all-to-all, written in
/// [`wire`]'s format (every process calls `route` for every collective, in the same order,
/// which the same program guarantees). Counts every piece whose ranks differ
/// ([`Traffic::count`]): the one place a collective's bytes are counted, along any axis.
pub(crate) fn route<B: Backend, K: ShardKind<B>>(
    axis: &(impl Axis<B::Device> + ?Sized),
    sends: Vec<Outgoing<K::Prim>>,
    traffic: &mut Traffic,
) -> Vec<Vec<(usize, K::Prim)>> {
    let local = axis.local_ranks();
    let processes = axis.group().size();
    let mut inbox: Vec<Vec<(usize, K::Prim)>> = local.clone().map(|_| Vec::new()).collect();
    let crossing = processes > 1;
    let mut outgoing: Vec<Vec<u8>> = vec![Vec::new(); if crossing { processes } else { 0 }];
    for Outgoing { key, src, dst, piece } in sends {
        debug_assert!(axis.is_local(src), "rank {src} sends from another process");
        if src == dst {
            inbox[dst - local.start].push((key, piece));
            continue;
        }
        traffic.count(bytes_of(&piece), axis.process_of(src) != axis.process_of(dst));
        if axis.is_local(dst) {
            let (from, to) = (axis.rank_device(src), axis.rank_device(dst));
            let moved = if axis.transport() == Transport::DeviceToDevice && from != to {
                // The source is held until the fence is issued, so its memory cannot go back
                // to the pool before later work on its device waits for the send.
                let moved = K::to_device(piece.clone(), to, Transport::DeviceToDevice);
                axis.after_send(from);
                drop(piece);
                moved
            } else {
                K::to_device(piece, to, axis.transport())
            };
            inbox[dst - local.start].push((key, moved));
        } else {
            let data = if holds_values::<B>() {
                wire::Payload::Values(K::into_host(piece))
            } else {
                wire::Payload::ShapeOnly(piece.dtype(), piece.shape())
            };
            let parcel = wire::Parcel { key: key as u64, dst: dst as u64, data };
            wire::write(&mut outgoing[axis.process_of(dst)], &parcel);
        }
    }
    if crossing {
        let me = axis.group().rank();
        let incoming = axis.group().all_to_all(outgoing).unwrap_or_else(|e| collective_failed(e, &axis.describe()));
        for (p, buffer) in incoming.into_iter().enumerate() {
            if p == me {
                continue;
            }
            for wire::Parcel { key, dst, data } in wire::read_all(&buffer) {
                let dst = dst as usize;
                assert!(axis.is_local(dst), "Hybrid: process {p} sent a piece for rank {dst}, not this process's");
                let device = axis.rank_device(dst);
                let piece = match data {
                    wire::Payload::Values(data) => K::from_host(data, device),
                    wire::Payload::ShapeOnly(dtype, shape) => K::unset(shape, dtype, device),
                };
                inbox[dst - local.start].push((key as usize, piece));
            }
        }
    }
    for pieces in &mut inbox {
        pieces.sort_by_key(|(key, _)| *key);
    }
    inbox
}

/// The length of a sharded dimension over the whole mesh, from this process's ranks' share
/// `local` of it: the sum over processes (an exchange of one number each when the mesh spans
/// processes; `local` itself inside one). Shape bookkeeping, not tensor traffic: the ledger
/// does not count it.
pub(crate) fn global_extent<D: burn::tensor::backend::DeviceOps>(mesh: &MeshDevice<D>, local: usize) -> usize {
    if mesh.processes() == 1 {
        return local;
    }
    let mine = (local as u64).to_le_bytes().to_vec();
    let incoming = mesh
        .group()
        .all_to_all(vec![mine; mesh.processes()])
        .unwrap_or_else(|e| collective_failed(e, &Axis::describe(mesh)));
    incoming.iter().map(|b| u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as usize).sum()
}

/// Every rank's piece to every rank, keyed by the sending rank.
fn to_every_rank<P: Clone>(mesh_size: usize, local: std::ops::Range<usize>, pieces: &[P]) -> Vec<Outgoing<P>> {
    local
        .zip(pieces)
        .flat_map(|(src, piece)| (0..mesh_size).map(move |dst| Outgoing { key: src, src, dst, piece: piece.clone() }))
        .collect()
}

/// The pieces of a route's inbox, without their keys.
pub(crate) fn unkeyed<P>(pieces: Vec<(usize, P)>) -> Vec<P> {
    pieces.into_iter().map(|(_, p)| p).collect()
}

/// Concatenates pieces along `dim`, leaving out empty ones (uneven shards of tiny tensors).
pub(crate) fn cat_nonempty<B: Backend, K: ShardKind<B>>(mut parts: Vec<K::Prim>, dim: usize) -> K::Prim {
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

/// `t` through `f`, a change of its layout among the ranks of each process, keeping its layout
/// along the mesh's outer dimensions and its global shape (`f` sees only this process's view).
fn keep_outer<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    f: impl FnOnce(DTensor<B, K>) -> DTensor<B, K>,
) -> DTensor<B, K> {
    if t.outer.is_empty() {
        return f(t);
    }
    let (outer, global) = (t.outer.clone(), t.global.clone());
    f(t).placed_outer(outer, global)
}

/// `Shard(dim)` to `Replicate` along the mesh's ranks: every rank receives every other rank's
/// slice and concatenates (see [`redistribute`] for the layout along outer dimensions).
pub fn all_gather<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    keep_outer(t, |t| all_gather_view(t, dim))
}

/// `Partial` to `Shard(dim)` along the mesh's ranks: rank r receives every other rank's r-th
/// slice and reduces. A dimension shorter than the mesh is not split: the result is
/// all-reduced to `Replicate`.
pub fn reduce_scatter<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    keep_outer(t, |t| reduce_scatter_view(t, dim))
}

/// `Partial` to `Replicate` along the mesh's ranks by the placement's reduction: a ring
/// (2(K-1)/K of the tensor per rank), or every summand whole to every rank for a tensor with
/// fewer elements than ranks; reduced in rank order, so every rank computes the same value.
pub fn all_reduce<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
    keep_outer(t, all_reduce_view)
}

/// `Replicate` to `Shard(dim)` along the mesh's ranks: each rank keeps its slice, no
/// communication; a dimension shorter than the mesh stays `Replicate`.
pub fn shard_locally<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    keep_outer(t, |t| shard_locally_view(t, dim))
}

/// `Replicate` to `Partial(op)` along the mesh's ranks, no communication: for a sum rank 0
/// keeps the value and the others hold zeros; for a maximum every rank keeps it.
pub fn partial_locally<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, op: ReduceOp) -> DTensor<B, K> {
    keep_outer(t, |t| partial_locally_view(t, op))
}

/// `t` laid out as `target` along the mesh's ranks (its innermost dimension), by the cheapest
/// route this module knows; its layout along outer dimensions stays:
///
/// | from \ to | Replicate | Shard(d) | Partial |
/// |---|---|---|---|
/// | Replicate | - | local slice (none if dim d is shorter than the mesh) | local (rank 0 keeps it) |
/// | Shard(e) | all_gather(e) | all_gather(e) + local slice (d != e) | all_gather + local |
/// | Partial | all_reduce | reduce_scatter(d) (all_reduce if dim d is shorter than the mesh) | all_reduce + local (another reduction) |
pub fn redistribute<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, target: Placement) -> DTensor<B, K> {
    keep_outer(t, |t| redistribute_view(t, target))
}

/// `Shard(dim)` to `Replicate`: every rank receives every other rank's slice and concatenates.
fn all_gather_view<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    assert_eq!(t.placement, Placement::Shard(dim), "all_gather({dim}) needs Shard({dim}), got {}", t.placement);
    let mut traffic = Traffic::default();
    let sends = to_every_rank(t.ranks(), t.mesh.local_ranks(), &t.shards);
    let shards: Vec<K::Prim> = route::<B, K>(&t.mesh, sends, &mut traffic)
        .into_iter()
        .map(|got| cat_nonempty::<B, K>(unkeyed(got), dim))
        .collect();
    t.mesh.record(Collective::AllGather, traffic);
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
fn reduce_scatter_view<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
    let op = reduce_op_of(&t, "reduce_scatter");
    if !can_shard(t.shape[dim], t.ranks()) {
        return all_reduce_view(t);
    }
    let mut traffic = Traffic::default();
    let out = reduce_scatter_op(t, dim, op, &mut traffic);
    out.mesh.record(Collective::ReduceScatter, traffic);
    out
}

fn reduce_scatter_op<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    dim: usize,
    op: ReduceOp,
    traffic: &mut Traffic,
) -> DTensor<B, K> {
    let k = t.ranks();
    let local = t.mesh.local_ranks();
    let ranges = shard_ranges(t.shape[dim], k);
    let mut sends = Vec::new();
    for (src, shard) in local.clone().zip(&t.shards) {
        for (dst, range) in ranges.iter().enumerate() {
            // An empty slice stays where it is: its rank's result is its own empty slice.
            if !range.is_empty() {
                let piece = K::slice(shard.clone(), &slices_along(&t.shape, dim, range.clone()));
                sends.push(Outgoing { key: src, src, dst, piece });
            }
        }
    }
    let inbox = route::<B, K>(&t.mesh, sends, traffic);
    let shards: Vec<K::Prim> = inbox
        .into_iter()
        .zip(local)
        .map(|(got, dst)| {
            if ranges[dst].is_empty() {
                let own = &t.shards[dst - t.mesh.local_ranks().start];
                return K::slice(own.clone(), &slices_along(&t.shape, dim, ranges[dst].clone()));
            }
            unkeyed(got).into_iter().reduce(|a, b| combine::<B, K>(a, b, op)).expect("at least one rank")
        })
        .collect();
    DTensor::from_parts(t.mesh, t.shape, t.dtype, Placement::Shard(dim), shards)
}

/// `Partial` to `Replicate` by the placement's reduction: a ring all-reduce (reduce-scatter,
/// then all-gather, over the flattened tensor), moving 2(K-1)/K of the tensor per rank. A
/// tensor with fewer elements than ranks (a scalar loss, a correct count) has no ring slice
/// for every rank: each rank receives every other rank's summand whole and reduces them in
/// rank order, so every rank computes the same value.
fn all_reduce_view<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
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
    let sends = to_every_rank(scattered.ranks(), scattered.mesh.local_ranks(), &scattered.shards);
    let shards: Vec<K::Prim> = route::<B, K>(&scattered.mesh, sends, &mut traffic)
        .into_iter()
        .map(|got| K::reshape(cat_nonempty::<B, K>(unkeyed(got), 0), shape.clone()))
        .collect();
    scattered.mesh.record(Collective::AllReduce, traffic);
    DTensor::from_parts(scattered.mesh, shape, scattered.dtype, Placement::Replicate, shards)
}

/// The sum by the inner backend's own all-reduce across the ranks' devices (NCCL on CUDA),
/// where the mesh has one for this kind; recorded as the ring it replaces (the same bytes).
fn all_reduce_on_devices<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> Result<DTensor<B, K>, DTensor<B, K>> {
    let DTensor { mesh, shape, global, dtype, placement, outer, shards, kept } = t;
    match K::device_all_reduce(&mesh, shards) {
        Ok(summed) => {
            mesh.record(Collective::AllReduce, ring_traffic(&mesh, shape.num_elements(), dtype.size()));
            Ok(DTensor::from_parts(mesh, shape, dtype, Placement::Replicate, summed))
        }
        Err(shards) => Err(DTensor { mesh, shape, global, dtype, placement, outer, shards, kept }),
    }
}

/// What this process's ranks send in the ring all-reduce of `elements` values of `size` bytes
/// (a reduce-scatter of the flattened tensor's K slices, then their all-gather): exactly what
/// [`all_reduce`]'s own ring records, so a device all-reduce that replaces it leaves the same
/// ledger, the bytes that cross processes included.
fn ring_traffic<D: burn::tensor::backend::DeviceOps>(mesh: &MeshDevice<D>, elements: usize, size: usize) -> Traffic {
    let slices = shard_ranges(elements, mesh.size());
    let mut traffic = Traffic::default();
    for src in mesh.local_ranks() {
        for dst in (0..mesh.size()).filter(|&dst| dst != src) {
            // The reduce-scatter sends dst's slice to dst; the all-gather sends src's own.
            let across = mesh.process_of(src) != mesh.process_of(dst);
            traffic.count((slices[dst].len() * size) as u64, across);
            traffic.count((slices[src].len() * size) as u64, across);
        }
    }
    traffic
}

/// The all-reduce of tiny tensors: every summand to every rank, reduced in rank order.
fn all_reduce_whole<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, op: ReduceOp) -> DTensor<B, K> {
    let mut traffic = Traffic::default();
    let sends = to_every_rank(t.ranks(), t.mesh.local_ranks(), &t.shards);
    let shards: Vec<K::Prim> = route::<B, K>(&t.mesh, sends, &mut traffic)
        .into_iter()
        .map(|got| unkeyed(got).into_iter().reduce(|a, b| combine::<B, K>(a, b, op)).expect("at least one rank"))
        .collect();
    t.mesh.record(Collective::AllReduce, traffic);
    DTensor::from_parts(t.mesh, t.shape, t.dtype, Placement::Replicate, shards)
}

/// One rank's tensor to every rank: `Replicate` from `root`'s copy. `p` is `Some` on the
/// process that holds `root` (its piece) and `None` on every other.
pub fn broadcast<B: Backend, K: ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    p: Option<K::Prim>,
    root: usize,
) -> DTensor<B, K> {
    assert_eq!(p.is_some(), mesh.is_local(root), "broadcast: the piece is given on root {root}'s process only");
    let mut traffic = Traffic::default();
    let sends = match p {
        Some(p) => (0..mesh.size()).map(|dst| Outgoing { key: root, src: root, dst, piece: p.clone() }).collect(),
        None => Vec::new(),
    };
    let mut inbox = route::<B, K>(mesh, sends, &mut traffic).into_iter();
    let out =
        DTensor::replicated(mesh.clone(), |_| inbox.next().and_then(|mut got| got.pop()).expect("root's piece").1);
    mesh.record(Collective::Broadcast, traffic);
    out
}

/// Point-to-point: `p` from rank `from` to rank `to`. `p` is `Some` on `from`'s process;
/// the result is `Some` on `to`'s.
pub fn send<B: Backend, K: ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    p: Option<K::Prim>,
    from: usize,
    to: usize,
) -> Option<K::Prim> {
    assert_eq!(p.is_some(), mesh.is_local(from), "send: the piece is given on rank {from}'s process only");
    let mut traffic = Traffic::default();
    let sends = p.map(|piece| vec![Outgoing { key: from, src: from, dst: to, piece }]).unwrap_or_default();
    let inbox = route::<B, K>(mesh, sends, &mut traffic);
    mesh.record(Collective::Send, traffic);
    let first = mesh.local_ranks().start;
    inbox.into_iter().enumerate().find(|(i, _)| first + i == to).and_then(|(_, mut got)| got.pop()).map(|(_, p)| p)
}

/// `Replicate` to `Shard(dim)`: each rank keeps its slice. No communication. A dimension
/// shorter than the mesh is not split: the tensor stays `Replicate` (see [`can_shard`]).
fn shard_locally_view<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, dim: usize) -> DTensor<B, K> {
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
fn partial_locally_view<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, op: ReduceOp) -> DTensor<B, K> {
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
fn redistribute_view<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, target: Placement) -> DTensor<B, K> {
    if t.placement == target {
        return t;
    }
    // A kept whole copy (see `DTensor::kept`) makes any layout a local one.
    if let Some(whole) = t.kept_whole() {
        return redistribute_view(whole, target);
    }
    if t.ranks() == 1 {
        let mut t = t;
        t.placement = target;
        return t;
    }
    match (t.placement, target) {
        (Placement::Replicate, Placement::Shard(d)) => shard_locally_view(t, d),
        (Placement::Replicate, Placement::Partial(op)) => partial_locally_view(t, op),
        (Placement::Shard(e), Placement::Replicate) => all_gather_view(t, e),
        (Placement::Shard(e), Placement::Shard(d)) => shard_locally_view(all_gather_view(t, e), d),
        (Placement::Shard(e), Placement::Partial(op)) => partial_locally_view(all_gather_view(t, e), op),
        (Placement::Partial(_), Placement::Replicate) => all_reduce_view(t),
        (Placement::Partial(_), Placement::Shard(d)) => reduce_scatter_view(t, d),
        (Placement::Partial(_), Placement::Partial(op)) => partial_locally_view(all_reduce_view(t), op),
        (from, to) => unreachable!("redistribute {from} -> {to}"),
    }
}
