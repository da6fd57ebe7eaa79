//! The collectives along the outer dimension of a 2-D mesh: each of this node's local ranks
//! with the ranks of the same local index on every other node (a column of the mesh). They
//! are [`route`]'s collectives like the ones inside a mesh (the same wire format, the same
//! counting, each piece in its own dtype), differing only in their axis ([`Columns`]); the
//! pieces of the nodes are reduced in node order, so every node computes the same values.
//! `along.rs` decides how a tensor's pieces are laid out before they cross and after.

use burn::tensor::backend::Backend;
use burn::tensor::TensorMetadata;

use super::axis::Columns;
use super::collectives::{cat_nonempty, route, unkeyed, Outgoing};
use super::ledger::Traffic;
use crate::tensor::dtensor::slices_along;
use crate::tensor::kind::ShardKind;
use crate::tensor::placement::{shard_ranges, ReduceOp};

/// Each local rank's piece, concatenated along `dim` with the pieces of the same local rank
/// on every node, in node order: (N - 1) x each piece crosses.
pub(crate) fn all_gather<B: Backend, K: ShardKind<B>>(
    axis: &Columns<'_, B::Device>,
    pieces: Vec<K::Prim>,
    dim: usize,
    traffic: &mut Traffic,
) -> Vec<K::Prim> {
    let me = axis.nodes.rank();
    let mut sends = Vec::new();
    for (l, piece) in pieces.into_iter().enumerate() {
        for n in 0..axis.nodes.size() {
            sends.push(Outgoing { key: me, src: axis.rank_of(l), dst: axis.rank_at(n, l), piece: piece.clone() });
        }
    }
    route::<B, K>(axis, sends, traffic).into_iter().map(|got| cat_nonempty::<B, K>(unkeyed(got), dim)).collect()
}

/// Each local rank's slice along `dim` (this node's, by [`shard_ranges`] over the nodes) of
/// the reduction (`op`) of the pieces of the same local rank on every node: each piece less
/// its own slice crosses.
pub(crate) fn reduce_scatter<B: Backend, K: ShardKind<B>>(
    axis: &Columns<'_, B::Device>,
    pieces: Vec<K::Prim>,
    dim: usize,
    op: ReduceOp,
    traffic: &mut Traffic,
) -> Vec<K::Prim> {
    let me = axis.nodes.rank();
    let mut sends = Vec::new();
    for (l, piece) in pieces.iter().enumerate() {
        let shape = piece.shape();
        for (n, range) in shard_ranges(shape[dim], axis.nodes.size()).into_iter().enumerate() {
            let slice = K::slice(piece.clone(), &slices_along(&shape, dim, range));
            sends.push(Outgoing { key: me, src: axis.rank_of(l), dst: axis.rank_at(n, l), piece: slice });
        }
    }
    route::<B, K>(axis, sends, traffic)
        .into_iter()
        .map(|got| {
            let pieces = got.into_iter().map(|(_, p)| p);
            match op {
                ReduceOp::Sum => pieces.reduce(K::add),
                ReduceOp::Max => pieces.reduce(K::max),
            }
            .expect("a slice from every node")
        })
        .collect()
}

/// Each local rank's piece reduced (`op`: summed or the maximum taken) with the pieces of
/// the same local rank on every node: a ring's volume (a reduce-scatter of the
/// flattened piece over the N nodes, then an all-gather: 2 (N - 1) / N of each piece per rank).
pub(crate) fn all_reduce<B: Backend, K: ShardKind<B>>(
    axis: &Columns<'_, B::Device>,
    pieces: Vec<K::Prim>,
    op: ReduceOp,
    traffic: &mut Traffic,
) -> Vec<K::Prim> {
    let shapes: Vec<_> = pieces.iter().map(|p| p.shape()).collect();
    let flat = pieces
        .into_iter()
        .map(|p| {
            let n = p.shape().num_elements();
            K::reshape(p, burn::tensor::Shape::new([n]))
        })
        .collect();
    let slices = reduce_scatter::<B, K>(axis, flat, 0, op, traffic);
    all_gather::<B, K>(axis, slices, 0, traffic).into_iter().zip(shapes).map(|(p, s)| K::reshape(p, s)).collect()
}
