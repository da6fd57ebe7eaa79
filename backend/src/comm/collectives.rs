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
use crate::ledger::Collective;
use crate::ledger::Traffic;
use crate::mesh::MeshDevice;
use crate::mutation::{self, Mutation};
use crate::spec::placement::{can_shard, shard_ranges, Placement};
use crate::tensor::dtensor::{bytes_of, slices_along, DTensor};
use crate::tensor::kind::{holds_values, ShardKind};
use crate::transport::process_group::{collective_failed, summed_over};
use crate::transport::wire;
use crate::transport::Transport;

pub use crate::spec::placement::ReduceOp;

pub use crate::ledger::names;

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
    summed_over(mesh.group().as_ref(), local, &Axis::describe(mesh))
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
    let shards = gather_pieces::<B, K>(&t.mesh, t.shards.clone(), dim, &mut traffic);
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
    let shards = reduce_scatter_pieces::<B, K>(&t.mesh, t.shards.clone(), dim, op, &mut traffic);
    t.mesh.record(Collective::ReduceScatter, traffic);
    DTensor::from_parts(t.mesh, t.shape, t.dtype, Placement::Shard(dim), shards)
}

/// `Partial` to `Replicate` by the placement's reduction: a ring all-reduce (reduce-scatter,
/// then all-gather, over the flattened tensor), moving 2(K-1)/K of the tensor per rank, or
/// the inner backend's own device all-reduce where it has one (NCCL on CUDA). A tensor with
/// fewer elements than ranks (a scalar loss, a correct count) is reduced from whole summands
/// (see [`all_reduce_pieces`]).
fn all_reduce_view<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
    let op = reduce_op_of(&t, "all_reduce");
    if t.ranks() > 1 && mutation::active(Mutation::MissingAllReduce) {
        let mut t = t;
        t.placement = Placement::Replicate;
        return t;
    }
    // The device's own all-reduce sums in the tensor's precision: a wire precision is the ring's.
    let native = t.mesh.wire().on_wire(t.dtype) == t.dtype;
    let t = if native && op == ReduceOp::Sum && t.ranks() > 1 && can_shard(t.shape.num_elements(), t.ranks()) {
        match all_reduce_on_devices(t) {
            Ok(done) => return done,
            Err(t) => t,
        }
    } else {
        t
    };
    let mut traffic = Traffic::default();
    let shards = all_reduce_pieces::<B, K>(&t.mesh, t.shards.clone(), op, &mut traffic);
    t.mesh.record(Collective::AllReduce, traffic);
    DTensor::from_parts(t.mesh, t.shape, t.dtype, Placement::Replicate, shards)
}

/// Each of this process's ranks' piece (`pieces[r - first]`) concatenated along `dim` with the
/// pieces of its peers along `axis`, in their order: every piece crosses to every peer.
pub(crate) fn gather_pieces<B: Backend, K: ShardKind<B>>(
    axis: &(impl Axis<B::Device> + ?Sized),
    pieces: Vec<K::Prim>,
    dim: usize,
    traffic: &mut Traffic,
) -> Vec<K::Prim> {
    let (pieces, home) = onto_wire::<B, K>(axis, pieces);
    to_every_peer::<B, K>(axis, pieces, traffic)
        .into_iter()
        .map(|got| off_wire::<B, K>(cat_nonempty::<B, K>(got, dim), home))
        .collect()
}

/// Each of this process's ranks' piece sent whole to each of its peers along `axis`: what
/// every local rank received, in the peers' order.
fn to_every_peer<B: Backend, K: ShardKind<B>>(
    axis: &(impl Axis<B::Device> + ?Sized),
    pieces: Vec<K::Prim>,
    traffic: &mut Traffic,
) -> Vec<Vec<K::Prim>> {
    let mut sends = Vec::new();
    for (src, piece) in axis.local_ranks().zip(pieces) {
        let key = axis.position(src);
        for dst in axis.peers(src) {
            sends.push(Outgoing { key, src, dst, piece: piece.clone() });
        }
    }
    route::<B, K>(axis, sends, traffic).into_iter().map(unkeyed).collect()
}

/// Pieces received in a wire precision, widened to `home` and reduced by `op` in the order
/// they came (the peers'), so every rank computes the same value.
fn reduced<B: Backend, K: ShardKind<B>>(got: Vec<K::Prim>, home: Option<burn::tensor::DType>, op: ReduceOp) -> K::Prim {
    got.into_iter()
        .map(|p| off_wire::<B, K>(p, home))
        .reduce(|a, b| combine::<B, K>(a, b, op))
        .expect("a piece from every peer")
}

/// `pieces` in the precision they cross `axis` in (see [`crate::WirePrecision`]: a rank's own piece
/// too, so every rank computes from the same values), and the dtype to widen them back to
/// where that differs from theirs.
fn onto_wire<B: Backend, K: ShardKind<B>>(
    axis: &(impl Axis<B::Device> + ?Sized),
    pieces: Vec<K::Prim>,
) -> (Vec<K::Prim>, Option<burn::tensor::DType>) {
    let Some(home) = pieces.first().map(|p| p.dtype()) else { return (pieces, None) };
    let wire = axis.wire().on_wire(home);
    if wire == home {
        return (pieces, None);
    }
    (pieces.into_iter().map(|p| K::cast(p, wire)).collect(), Some(home))
}

/// A piece that crossed in a wire precision widened back to its tensor's dtype `home`.
fn off_wire<B: Backend, K: ShardKind<B>>(p: K::Prim, home: Option<burn::tensor::DType>) -> K::Prim {
    match home {
        Some(dtype) => K::cast(p, dtype),
        None => p,
    }
}

/// Each of this process's ranks' slice along `dim` (its position's, by [`shard_ranges`] over
/// its peers along `axis`) of the reduction (`op`) of its peers' pieces, reduced in the peers'
/// order so every rank computes the same value: each piece less its own slice crosses. An
/// empty slice stays where it is (its rank's result is its own empty slice).
pub(crate) fn reduce_scatter_pieces<B: Backend, K: ShardKind<B>>(
    axis: &(impl Axis<B::Device> + ?Sized),
    pieces: Vec<K::Prim>,
    dim: usize,
    op: ReduceOp,
    traffic: &mut Traffic,
) -> Vec<K::Prim> {
    let local = axis.local_ranks();
    let (pieces, home) = onto_wire::<B, K>(axis, pieces);
    let mut sends = Vec::new();
    let mut own_empty = Vec::with_capacity(pieces.len());
    for (src, piece) in local.clone().zip(&pieces) {
        let shape = piece.shape();
        let peers = axis.peers(src);
        let ranges = shard_ranges(shape[dim], peers.len());
        for (dst, range) in peers.into_iter().zip(&ranges) {
            if !range.is_empty() {
                let slice = K::slice(piece.clone(), &slices_along(&shape, dim, range.clone()));
                sends.push(Outgoing { key: axis.position(src), src, dst, piece: slice });
            }
        }
        let mine = ranges[axis.position(src)].clone();
        own_empty.push(mine.is_empty().then(|| K::slice(piece.clone(), &slices_along(&shape, dim, mine))));
    }
    route::<B, K>(axis, sends, traffic)
        .into_iter()
        .zip(own_empty)
        .map(|(got, empty)| match empty {
            Some(empty) => off_wire::<B, K>(empty, home),
            None => reduced::<B, K>(unkeyed(got), home, op),
        })
        .collect()
}

/// Each of this process's ranks' piece reduced (`op`) with its peers' along `axis`, in the
/// peers' order: a ring's volume (a reduce-scatter of the flattened piece, then an
/// all-gather: 2 (K - 1) / K of each piece per rank over K peers); a piece with fewer
/// elements than peers has no ring slice for every peer, so every summand goes whole to every
/// peer instead, in its own precision (see [`crate::WirePrecision`]).
pub(crate) fn all_reduce_pieces<B: Backend, K: ShardKind<B>>(
    axis: &(impl Axis<B::Device> + ?Sized),
    pieces: Vec<K::Prim>,
    op: ReduceOp,
    traffic: &mut Traffic,
) -> Vec<K::Prim> {
    let Some(first) = axis.local_ranks().next() else { return pieces };
    let peers = axis.peers(first).len();
    let elements = pieces.first().map_or(0, |p| p.shape().num_elements());
    if peers > 1 && !can_shard(elements, peers) {
        // Readouts (a step's loss, its correct count), not activities or gradients: a few
        // bytes, kept in their own precision whatever the wire's, so a loss reads the same.
        return to_every_peer::<B, K>(axis, pieces, traffic)
            .into_iter()
            .map(|got| reduced::<B, K>(got, None, op))
            .collect();
    }
    let shapes: Vec<_> = pieces.iter().map(|p| p.shape()).collect();
    let flat = pieces
        .into_iter()
        .map(|p| {
            let n = p.shape().num_elements();
            K::reshape(p, burn::tensor::Shape::new([n]))
        })
        .collect();
    let slices = reduce_scatter_pieces::<B, K>(axis, flat, 0, op, traffic);
    gather_pieces::<B, K>(axis, slices, 0, traffic).into_iter().zip(shapes).map(|(p, s)| K::reshape(p, s)).collect()
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
    let empty = shape.num_elements() == 0;
    t.map_placed::<K>(shape.clone(), Placement::Shard(dim), |r, p| {
        if empty {
            // A fresh empty piece, not a view into an empty buffer at an offset (Flex 0.21's
            // reductions index such a view's storage and panic).
            let mut piece = shape.clone();
            piece[dim] = ranges[r].len();
            return K::zeros_shaped(&p, piece);
        }
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
        (Placement::Partial(_), Placement::Replicate) => {
            // The sum is kept with the pending tensor and its clones, so each of its uses after
            // the first finds it (a batch normalisation's statistics feed several ops): one
            // all-reduce per pending tensor, however many ops read it whole.
            let pending = t.clone();
            let whole = all_reduce_view(t);
            pending.keep_whole(whole.shards.clone());
            whole
        }
        (Placement::Partial(_), Placement::Shard(d)) => reduce_scatter_view(t, d),
        (Placement::Partial(_), Placement::Partial(op)) => partial_locally_view(all_reduce_view(t), op),
        (from, to) => unreachable!("redistribute {from} -> {to}"),
    }
}
