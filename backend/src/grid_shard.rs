//! Tensors sharded along the outer ("node") dimension of a 2-D mesh, FSDP-style: each node
//! stores its slice of a parameter along one dimension (`[Shard(d), p]`: the slice placed
//! `p` on the node's local ranks), gathers the whole of it over the nodes for a step's
//! compute ([`GridMesh::all_gather_over_nodes`]) and keeps only its slice of the summed
//! gradient ([`GridMesh::reduce_scatter_over_nodes`]), as PyTorch's FSDP does across the
//! data-parallel dimension. The two collectives move, between them, what one all-reduce of
//! the gradient moves; the node stores 1/N of the parameter and of its optimizer state.
//!
//! The collectives are the communication module's, along a column of the mesh (each local
//! rank with the ranks of the same local index on the other nodes), like
//! [`GridMesh::all_reduce_over_nodes`]; this file decides only how a piece is laid out before
//! it crosses and after. A piece replicated inside the node is cut over the local ranks first
//! ([`cut_dim`]), so it crosses the nodes once, and the result is all-gathered inside the
//! node. A slice placed `Shard(d)` inside the node on the very dimension the nodes split is
//! first gathered inside the node (its local pieces are not the whole tensor's local
//! pieces), then exchanged as a replicated one, then cut again.

use std::ops::Range;

use burn::prelude::*;
use burn::tensor::backend::DeviceOps;
use burn::tensor::{Shape, TensorMetadata, TensorPrimitive};

use crate::api::Distributed;
use crate::backend::Hybrid;
use crate::comm::over_nodes;
use crate::comm::Collective;
use crate::dtensor::{slices_along, DTensor};
use crate::grid::{weighed, GridMesh};
use crate::kind::{FloatKind, ShardKind};
use crate::ledger::Traffic;
use crate::placement::{shard_ranges, Placement, ReduceOp};

type Float<B> = DTensor<B, FloatKind>;

fn float_of<B: Backend, const N: usize>(t: Tensor<Hybrid<B>, N>) -> Float<B> {
    t.into_primitive().tensor()
}

fn tensor_of<B: Backend, const N: usize>(d: Float<B>) -> Tensor<Hybrid<B>, N> {
    Tensor::from_primitive(TensorPrimitive::Float(d))
}

/// `shape` with `dim` set to `len`.
fn with_len(shape: &Shape, dim: usize, len: usize) -> Shape {
    let mut dims = shape.to_vec();
    dims[dim] = len;
    Shape::from(dims)
}

/// The dim a replicated piece is cut along, locally and for free, before it crosses the nodes
/// sharded along `dim` (a tensor of `dims`, on nodes of `local` ranks), so that it crosses once
/// and not once per local rank: the first other dim with an entry per local rank. None on
/// one local rank, or where no other dim has enough entries (then every local rank sends
/// its whole copy). The summed or gathered pieces are then all-gathered inside the node, as
/// NCCL's hierarchical collectives do.
pub fn cut_dim(dims: &[usize], dim: usize, local: usize) -> Option<usize> {
    if local < 2 {
        return None;
    }
    (0..dims.len()).find(|&e| e != dim && dims[e] >= local)
}

impl<D: DeviceOps> GridMesh<D> {
    /// Where a replicated `t` crosses the nodes cut first ([`cut_dim`]).
    fn cut_for_nodes<B: Backend<Device = D>, const N: usize>(
        &self,
        t: &Tensor<Hybrid<B>, N>,
        dim: usize,
    ) -> Option<usize> {
        let [nodes, local] = self.shape();
        if nodes < 2 || t.placement() != Placement::Replicate {
            return None;
        }
        cut_dim(&t.dims(), dim, local)
    }

    /// The rows (along `dim`, `len` long) node `node` holds of a tensor sharded over the nodes.
    pub fn node_range(&self, len: usize, node: usize) -> Range<usize> {
        shard_ranges(len, self.shape()[0])[node].clone()
    }

    /// This node's slice along `dim` of `t` (a whole tensor, the same on every node): what a
    /// parameter placed `[Shard(dim), p]` stores. Local: nothing moves between nodes.
    pub fn node_slice<B: Backend<Device = D>, const N: usize>(
        &self,
        t: Tensor<Hybrid<B>, N>,
        dim: usize,
    ) -> Tensor<Hybrid<B>, N> {
        let p = t.placement();
        if p == Placement::Shard(dim) {
            return self.node_slice(t.distribute(Placement::Replicate), dim).distribute(p);
        }
        let range = self.node_range(t.dims()[dim], self.node());
        let d = float_of(t);
        let shards = d
            .shards
            .iter()
            .map(|s| <FloatKind as ShardKind<B>>::slice(s.clone(), &slices_along(&s.shape(), dim, range.clone())));
        let shards: Vec<_> = shards.collect();
        let shape = with_len(&d.shape, dim, range.len());
        tensor_of(DTensor::from_parts(d.mesh.clone(), shape, d.dtype, p, shards))
    }

    /// The whole of a tensor sharded over the nodes along `dim`: `t` is this node's slice
    /// (placed `p` on its local ranks); every node gets the slices of every node, in node
    /// order, placed `p`. Each local rank sends its piece to the same local rank of every
    /// other node: (N - 1) x its piece, recorded as `all_gather[node]`, every byte across
    /// nodes. A collective over the nodes.
    pub fn all_gather_over_nodes<B: Backend<Device = D>, const N: usize>(
        &self,
        t: Tensor<Hybrid<B>, N>,
        dim: usize,
    ) -> Tensor<Hybrid<B>, N> {
        let p = t.placement();
        if p == Placement::Shard(dim) {
            return self.all_gather_over_nodes(t.distribute(Placement::Replicate), dim).distribute(p);
        }
        if let Some(e) = self.cut_for_nodes(&t, dim) {
            let whole = self.all_gather_over_nodes(t.distribute(Placement::Shard(e)), dim);
            return whole.distribute(Placement::Replicate);
        }
        let d = float_of(t);
        if self.shape()[0] == 1 {
            return tensor_of(d);
        }
        let DTensor { mesh, shape, dtype, shards, .. } = d;
        let mut traffic = Traffic::default();
        let shards = over_nodes::all_gather::<B, FloatKind>(&self.columns(), shards, dim, &mut traffic);
        self.local().record(self.outer_collective(Collective::AllGather), traffic);
        let global = with_len(&shape, dim, shards[0].shape()[dim]);
        tensor_of(DTensor::from_parts(mesh, global, dtype, p, shards))
    }

    /// This node's slice along `dim` of the sum over the nodes of `t` (a whole tensor on each
    /// node, placed `p` on its local ranks), node n's weighted by `weights[n]` (1 each by
    /// default), summed in node order so that every node's slice is computed alike; placed
    /// `p`. Each local rank sends every other node its slice of its piece: the piece less
    /// its own slice, recorded as `reduce_scatter[node]`. A collective over the nodes.
    pub fn reduce_scatter_over_nodes<B: Backend<Device = D>, const N: usize>(
        &self,
        t: Tensor<Hybrid<B>, N>,
        dim: usize,
        weights: Option<&[f64]>,
    ) -> Tensor<Hybrid<B>, N> {
        let p = t.placement();
        if p == Placement::Shard(dim) || matches!(p, Placement::Partial(_)) {
            let whole = self.reduce_scatter_over_nodes(t.distribute(Placement::Replicate), dim, weights);
            return whole.distribute(p);
        }
        if let Some(e) = self.cut_for_nodes(&t, dim) {
            let slice = self.reduce_scatter_over_nodes(t.distribute(Placement::Shard(e)), dim, weights);
            return slice.distribute(Placement::Replicate);
        }
        let DTensor { mesh, shape, dtype, shards, .. } = float_of(t);
        let mut traffic = Traffic::default();
        let weigh = weighed::<B>(weights);
        let shards = over_nodes::reduce_scatter::<B, FloatKind>(&self.columns(), shards, dim, &weigh, ReduceOp::Sum, &mut traffic);
        self.local().record(self.outer_collective(Collective::ReduceScatter), traffic);
        let global = with_len(&shape, dim, self.node_range(shape[dim], self.node()).len());
        tensor_of(DTensor::from_parts(mesh, global, dtype, p, shards))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::MeshDevice;
    use burn::backend::flex::FlexDevice;
    use burn::backend::Flex;

    type H = Hybrid<Flex>;

    fn values(t: Tensor<H, 2>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    #[test]
    fn slices_gather_back_to_the_whole_and_sums_scatter_by_node() {
        // A 7 x 8 tensor (uneven slices) on 3 nodes of 2 local ranks, every inner placement: node n's slice
        // along each dim, gathered back; the weighted sum over the nodes (node n holds the
        // tensor times n + 1) cut to node n's slice.
        let whole: Vec<f32> = (0..56).map(|i| i as f32).collect();
        for dim in [0, 1] {
            for p in [Placement::Replicate, Placement::Shard(0), Placement::Shard(1)] {
                let seen = GridMesh::<FlexDevice>::threaded(
                    3,
                    |_| MeshDevice::virtual_ranks(FlexDevice, 2),
                    |grid| {
                        let mesh = grid.local().clone();
                        let t = Tensor::<H, 2>::from_data(TensorData::new(whole.clone(), [7, 8]), &mesh);
                        let slice = grid.node_slice(t.clone().distribute(p), dim);
                        assert_eq!(slice.placement(), p);
                        let range = grid.node_range([7, 8][dim], grid.node());
                        assert_eq!(values(slice.clone()), values(t.clone().slice_dim(dim, range.clone())));
                        let back = grid.all_gather_over_nodes(slice, dim);
                        assert_eq!((back.placement(), back.dims()), (p, [7, 8]));
                        assert_eq!(values(back), whole, "dim {dim} {p}");
                        let mine = t.clone().mul_scalar(grid.node() as f32 + 1.0).distribute(p);
                        let weights = [0.5, 0.25, 0.25];
                        let summed = grid.reduce_scatter_over_nodes(mine, dim, Some(&weights));
                        assert_eq!(summed.placement(), p);
                        // 0.5 x 1 + 0.25 x 2 + 0.25 x 3 = 1.75 times the slice.
                        let want = values(t.slice_dim(dim, range).mul_scalar(1.75));
                        assert_eq!(values(summed), want, "dim {dim} {p}");
                        grid.ledger_snapshot()
                    },
                );
                // Each node sends (N - 1) = 2 copies of its slice's pieces to gather, and all
                // but its slice of each piece to scatter, 4 bytes a value: summed over nodes,
                // 2 x the whole gathered and (N - 1) x the whole scattered: the pieces of
                // one copy, whatever the placement inside the node (a replicated one is cut
                // over the local ranks first, and all-gathered inside the node after).
                let ledger = &seen[0];

                let gathered = ledger.by_collective("all_gather[node]");
                let scattered = ledger.by_collective("reduce_scatter[node]");
                assert_eq!(gathered.bytes, 2 * 56 * 4, "dim {dim} {p}");
                assert_eq!(scattered.bytes, 2 * 56 * 4, "dim {dim} {p}");
                assert_eq!(gathered.cross_process_bytes, gathered.bytes);
            }
        }
    }
}
