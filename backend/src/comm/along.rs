//! A tensor's layout changed along an outer dimension of its mesh (the nodes of a mesh of
//! nodes): the same table as [`super::collectives::redistribute`] gives along a mesh's own
//! ranks, run by the same collectives over pieces with the column of the mesh as their axis
//! ([`Columns`]: each local rank with the ranks of the same local index on the other nodes),
//! recorded as the collective over the dimension's name (`all_reduce[node]`).
//!
//! What decides how a piece crosses is the tensor's layout inside the node, and this file is
//! where that is decided:
//! - a pending sum inside the node is made whole there first, so every node adds whole values
//!   (a node whose rows split over its ranks and one whose rows did not would otherwise add a
//!   summand to a whole value);
//! - a piece replicated inside the node is cut over the local ranks first ([`cut_dim`]; for a
//!   sum, [`sums_by_slices`]), so it crosses the nodes once and not once per local rank, and
//!   the result is all-gathered inside the node after, as NCCL's hierarchical collectives do;
//! - a piece split inside the node on the very dimension the nodes split is gathered inside
//!   the node first (its local pieces are not the whole tensor's local pieces), then split
//!   again after.
//!
//! Nothing here is weighted: a tensor's global shape is the whole mesh's, so a mean over the
//! batch already divides by the whole batch and the sum over the nodes is a plain sum.

use burn::tensor::backend::Backend;
use burn::tensor::{Shape, TensorMetadata};

use super::axis::Columns;
use super::collectives::{all_reduce_pieces, gather_pieces, redistribute, reduce_scatter_pieces, ReduceOp};
use crate::ledger::Collective;
use crate::ledger::Traffic;
use crate::mesh::grid::{cut_dim, sums_by_slices};
use crate::spec::placement::{can_shard, shard_ranges, Placement};
use crate::tensor::dtensor::{slices_along, DTensor};
use crate::tensor::kind::ShardKind;

/// `shape` with `dim` set to `len`.
fn with_len(shape: &Shape, dim: usize, len: usize) -> Shape {
    let mut dims = shape.to_vec();
    dims[dim] = len;
    Shape::from(dims)
}

/// `t` laid out `target` along outer dimension `j` of its mesh (see the module docs); its
/// layout inside each node is what it was, or whole there where it was a pending sum. A
/// collective over the processes along the dimension.
pub(crate) fn redistribute_along<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    j: usize,
    target: Placement,
) -> DTensor<B, K> {
    let from = t.outer[j];
    if from == target {
        return t;
    }
    if t.mesh.outer_dims()[j].size() == 1 {
        let mut t = t;
        t.outer[j] = target;
        return t;
    }
    use Placement::*;
    match (from, target) {
        (Replicate, Shard(d)) => cut(t, j, d),
        (Replicate, Partial(op)) => partial(t, j, op),
        (Shard(e), Replicate) => gather(t, j, e),
        (Shard(e), Shard(d)) => cut(gather(t, j, e), j, d),
        (Shard(e), Partial(op)) => partial(gather(t, j, e), j, op),
        (Partial(op), Replicate) => reduce(t, j, op),
        (Partial(op), Shard(d)) => reduce_scatter(t, j, op, d),
        (Partial(from_op), Partial(op)) => partial(reduce(t, j, from_op), j, op),
        (Replicate, Replicate) => t,
    }
}

/// The column of the mesh along outer dimension `j` (one outer dimension is supported).
fn column<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>, j: usize) -> Columns<'_, B::Device> {
    assert_eq!(j, 0, "Hybrid: one outer dimension is supported");
    let dim = &t.mesh.outer_dims()[j];
    Columns { nodes: &dim.group, local: &t.mesh, name: &dim.name }
}

/// This node's slice along `d` of a tensor whole along the dimension: local, nothing moves. A
/// dimension shorter than the nodes is not split (the tensor stays whole along it).
fn cut<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, j: usize, d: usize) -> DTensor<B, K> {
    let nodes = &t.mesh.outer_dims()[j];
    if !can_shard(t.shape[d], nodes.size()) {
        return t;
    }
    let inner = t.placement;
    if inner == Placement::Shard(d) {
        return within(cut(within(t, Placement::Replicate), j, d), inner);
    }
    let range = shard_ranges(t.shape[d], nodes.size())[nodes.index()].clone();
    let view = with_len(&t.shape, d, range.len());
    let (mut outer, global) = (t.outer.clone(), t.global.clone());
    outer[j] = Placement::Shard(d);
    let shards = t.shards.into_iter().map(|s| {
        let slices = slices_along(&s.shape(), d, range.clone());
        K::slice(s, &slices)
    });
    DTensor::from_parts(t.mesh, view, t.dtype, inner, shards.collect()).placed_outer(outer, global)
}

/// `t` laid out `p` inside each node, its outer layout kept.
fn within<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, p: Placement) -> DTensor<B, K> {
    redistribute(t, p)
}

/// A pending sum inside the node made whole there.
fn resolved<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
    if t.placement.is_partial() {
        within(t, Placement::Replicate)
    } else {
        t
    }
}

/// The whole of a tensor sharded along `e` over the nodes: every node gets every node's
/// slices, in node order, laid out inside the node as it was.
fn gather<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, j: usize, e: usize) -> DTensor<B, K> {
    let t = resolved(t);
    let inner = t.placement;
    if inner == Placement::Shard(e) {
        return within(gather(within(t, Placement::Replicate), j, e), inner);
    }
    let local = t.mesh.size();
    if inner == Placement::Replicate {
        if let Some(c) = cut_dim(&t.shape, e, local) {
            return within(gather(within(t, Placement::Shard(c)), j, e), Placement::Replicate);
        }
    }
    let mut traffic = Traffic::default();
    let name = t.mesh.outer_dims()[j].name.clone();
    let shards = gather_pieces::<B, K>(&column(&t, j), t.shards.clone(), e, &mut traffic);
    t.mesh.record(Collective::AllGather.over(&name), traffic);
    let (mut outer, global) = (t.outer.clone(), t.global.clone());
    outer[j] = Placement::Replicate;
    let view = with_len(&t.shape, e, global[e]);
    DTensor::from_parts(t.mesh, view, t.dtype, inner, shards).placed_outer(outer, global)
}

/// The reduction over the nodes of a pending one: every node gets it, whole inside the node
/// or laid out as it was there.
fn reduce<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, j: usize, op: ReduceOp) -> DTensor<B, K> {
    let t = resolved(t);
    let shape = [t.mesh.outer_dims()[j].size(), t.mesh.size()];
    let rows = if t.shape.num_dims() > 0 { t.shape[0] } else { 1 };
    if sums_by_slices(t.placement, rows, shape) {
        return within(reduce(within(t, Placement::Shard(0)), j, op), Placement::Replicate);
    }
    let mut traffic = Traffic::default();
    let name = t.mesh.outer_dims()[j].name.clone();
    let shards = all_reduce_pieces::<B, K>(&column(&t, j), t.shards.clone(), op, &mut traffic);
    t.mesh.record(Collective::AllReduce.over(&name), traffic);
    let (mut outer, global) = (t.outer.clone(), t.global.clone());
    outer[j] = Placement::Replicate;
    DTensor::from_parts(t.mesh, t.shape, t.dtype, t.placement, shards).placed_outer(outer, global)
}

/// This node's slice along `d` of the reduction over the nodes of a pending one (whole, where
/// `d` is shorter than the nodes).
fn reduce_scatter<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, j: usize, op: ReduceOp, d: usize) -> DTensor<B, K> {
    let nodes = t.mesh.outer_dims()[j].clone();
    if !can_shard(t.shape[d], nodes.size()) {
        return reduce(t, j, op);
    }
    let t = resolved(t);
    let inner = t.placement;
    if inner == Placement::Shard(d) {
        return within(reduce_scatter(within(t, Placement::Replicate), j, op, d), inner);
    }
    if inner == Placement::Replicate {
        if let Some(c) = cut_dim(&t.shape, d, t.mesh.size()) {
            return within(reduce_scatter(within(t, Placement::Shard(c)), j, op, d), Placement::Replicate);
        }
    }
    let mut traffic = Traffic::default();
    let shards = reduce_scatter_pieces::<B, K>(&column(&t, j), t.shards.clone(), d, op, &mut traffic);
    t.mesh.record(Collective::ReduceScatter.over(&nodes.name), traffic);
    let (mut outer, global) = (t.outer.clone(), t.global.clone());
    outer[j] = Placement::Shard(d);
    let view = with_len(&t.shape, d, shard_ranges(t.shape[d], nodes.size())[nodes.index()].len());
    DTensor::from_parts(t.mesh, view, t.dtype, inner, shards).placed_outer(outer, global)
}

/// A whole tensor as a pending reduction along the nodes: node 0 keeps the value and the
/// others hold zeros (a sum), or every node keeps it (a maximum). Local.
fn partial<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, j: usize, op: ReduceOp) -> DTensor<B, K> {
    let keeps = op == ReduceOp::Max || t.mesh.outer_dims()[j].index() == 0;
    let mut t = if keeps {
        t
    } else {
        // Zeros now: a whole copy kept with the value (`DTensor::kept`) is not this one's.
        let mut zeros = t.map_same(|p| K::zeros_like(&p));
        zeros.kept = Default::default();
        zeros
    };
    t.outer[j] = Placement::Partial(op);
    t
}

/// The length along `d` of the whole tensor whose slice along outer dimension `j` this node
/// holds `len` of: the sum over the nodes (an exchange of one number each). Shape
/// bookkeeping, not tensor traffic: the ledger does not count it.
pub(crate) fn extent_along<D: burn::tensor::backend::DeviceOps>(
    mesh: &crate::mesh::MeshDevice<D>,
    j: usize,
    len: usize,
) -> usize {
    let dim = &mesh.outer_dims()[j];
    crate::transport::process_group::summed_over(dim.group.as_ref(), len, &format!("over the {} dimension", dim.name))
}
