//! The public face of placements on Burn tensors: distribute a tensor, read its placement,
//! look at its per-rank pieces. Works on `Hybrid<B>` and `Autodiff<Hybrid<B>>` tensors.

use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorMetadata, TensorPrimitive};

use crate::backend::{Hybrid, HybridFloat};
use crate::comm::collectives::redistribute;
use crate::spec::placement::Placement;

/// Placement control on float tensors of a `Hybrid` backend.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::prelude::*;
/// use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
///
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 3);
/// let t = Tensor::<Autodiff<Hybrid<Flex>>, 2>::ones([7, 2], &mesh).distribute(Placement::Shard(0));
/// assert_eq!(t.placement(), Placement::Shard(0));
/// assert_eq!(t.local_shapes(), vec![vec![3, 2], vec![2, 2], vec![2, 2]]);
/// assert_eq!(mesh.ledger_snapshot().total().bytes, 0, "Replicate to Shard is a local slice");
/// ```
pub trait Distributed: Sized {
    /// This tensor laid out as `placement` (moving data through the collectives as needed;
    /// Replicate to Shard is free).
    fn distribute(self, placement: Placement) -> Self;
    /// [`Distributed::distribute`] as a differentiable op: on `Autodiff<Hybrid<B>>` the
    /// backward pass brings the gradient back to this tensor's placement by the dual
    /// collective (an all-gather's gradient is reduce-scattered, a slice's all-gathered, a
    /// re-shard's re-sharded back; a pending sum's gradient is the whole gradient on every
    /// rank). Elsewhere the same as `distribute`.
    fn redistribute(self, placement: Placement) -> Self {
        self.distribute(placement)
    }
    /// The current placement along the mesh's own ranks (its innermost dimension: every rank
    /// of a 1-D mesh).
    fn placement(&self) -> Placement;
    /// The placement along every dimension of the mesh, outermost first (one entry on a 1-D
    /// mesh; `[node, local]` on a mesh of nodes).
    fn placements(&self) -> Vec<Placement>;
    /// This tensor laid out as `placement` along outer dimension `dim` of its mesh (0 for the
    /// nodes of a mesh of nodes), its layout along the other dimensions kept (a pending sum
    /// inside each node made whole there first): Replicate to Shard is a local cut, Shard to
    /// Replicate an all-gather over the processes along the dimension, Partial to Replicate
    /// or Shard an all-reduce or reduce-scatter over them. A collective along the dimension.
    fn distribute_along(self, dim: usize, placement: Placement) -> Self;
    /// [`Distributed::distribute_along`] as a differentiable op: on `Autodiff<Hybrid<B>>` the
    /// backward pass brings the gradient back to this tensor's placement along the dimension
    /// by the dual collective (an all-gather over the nodes has its gradient reduce-scattered
    /// over them: the FSDP-style pair, Megatron's mappings across nodes). Elsewhere the same
    /// as `distribute_along`.
    fn redistribute_along(self, dim: usize, placement: Placement) -> Self {
        self.distribute_along(dim, placement)
    }
    /// This tensor laid out as `placements`, one per dimension of its mesh, outermost first:
    /// first along the mesh's own ranks, then along each outer dimension from the innermost
    /// out (so a pending sum is summed inside each node before it crosses the nodes).
    fn distribute_all(self, placements: &[Placement]) -> Self {
        let (inner, outer) = placements.split_last().expect("a placement per mesh dimension");
        let mut t = self.distribute(*inner);
        for (j, p) in outer.iter().enumerate().rev() {
            t = t.distribute_along(j, *p);
        }
        t
    }
    /// The shape each of this process's ranks holds, in rank order (every rank's when the
    /// mesh is in one process).
    fn local_shapes(&self) -> Vec<Vec<usize>>;
}

fn float_of<B: Backend, const D: usize>(t: &Tensor<Hybrid<B>, D>) -> HybridFloat<B> {
    match t.clone().into_primitive() {
        TensorPrimitive::Float(p) => p,
        TensorPrimitive::QFloat(_) => unreachable!("Hybrid has no quantized tensors"),
    }
}

impl<B: Backend, const D: usize> Distributed for Tensor<Hybrid<B>, D> {
    fn distribute(self, placement: Placement) -> Self {
        let t = float_of(&self);
        Tensor::from_primitive(TensorPrimitive::Float(redistribute(t, placement)))
    }

    fn placement(&self) -> Placement {
        float_of(self).placement()
    }

    fn placements(&self) -> Vec<Placement> {
        float_of(self).placements()
    }

    fn distribute_along(self, dim: usize, placement: Placement) -> Self {
        let t = float_of(&self);
        Tensor::from_primitive(TensorPrimitive::Float(along(t, dim, placement)))
    }

    fn local_shapes(&self) -> Vec<Vec<usize>> {
        float_of(self).shards().iter().map(|s| s.shape().to_vec()).collect()
    }
}

/// `t` laid out `placement` along outer dimension `dim`, named in a panic where the mesh has
/// no such dimension.
fn along<B: Backend, K: crate::tensor::kind::ShardKind<B>>(
    t: crate::tensor::dtensor::DTensor<B, K>,
    dim: usize,
    placement: Placement,
) -> crate::tensor::dtensor::DTensor<B, K> {
    let dims = t.mesh().outer_dims().len();
    assert!(dim < dims, "Hybrid: outer dimension {dim} of a mesh with {dims} outer dimensions");
    crate::comm::along::redistribute_along(t, dim, placement)
}

impl<B: Backend, const D: usize> Distributed for Tensor<Autodiff<Hybrid<B>>, D> {
    /// Distributes the value. A tensor that requires a gradient (a parameter) stays the same
    /// leaf in its new layout: the copy shares the leaf's node in the autodiff graph, so its
    /// gradient is the leaf's, whether the parameter is placed once before training or
    /// distributed inside a forward pass. A tensor computed inside a graph is redistributed
    /// differentiably ([`Distributed::redistribute`]), so the gradient still reaches what it
    /// was computed from. Anything else is just moved.
    fn distribute(self, placement: Placement) -> Self {
        let require_grad = self.is_require_grad();
        let in_graph = !self.clone().into_primitive().tensor().node.requirement.is_none();
        if require_grad {
            let mut leaf = self.into_primitive().tensor();
            leaf.primitive = redistribute(leaf.primitive, placement);
            return Tensor::from_primitive(TensorPrimitive::Float(leaf));
        }
        if in_graph {
            return self.redistribute(placement);
        }
        Tensor::from_inner(self.inner().distribute(placement))
    }

    fn redistribute(self, placement: Placement) -> Self {
        crate::autodiff::redistribute::redistribute(self, placement)
    }

    fn placement(&self) -> Placement {
        self.clone().inner().placement()
    }

    fn placements(&self) -> Vec<Placement> {
        self.clone().inner().placements()
    }

    /// As [`Distributed::distribute`] does: a parameter stays the same leaf, a tensor computed
    /// in a graph is moved differentiably (its gradient brought back along the dimension by
    /// the dual collective: a gather's gradient reduce-scattered), anything else just moved.
    fn distribute_along(self, dim: usize, placement: Placement) -> Self {
        let require_grad = self.is_require_grad();
        let in_graph = !self.clone().into_primitive().tensor().node.requirement.is_none();
        if require_grad {
            let mut leaf = self.into_primitive().tensor();
            leaf.primitive = along(leaf.primitive, dim, placement);
            return Tensor::from_primitive(TensorPrimitive::Float(leaf));
        }
        if in_graph {
            return self.redistribute_along(dim, placement);
        }
        Tensor::from_inner(self.inner().distribute_along(dim, placement))
    }

    fn redistribute_along(self, dim: usize, placement: Placement) -> Self {
        let dims = self.clone().inner().placements().len() - 1;
        assert!(dim < dims, "Hybrid: outer dimension {dim} of a mesh with {dims} outer dimensions");
        crate::autodiff::redistribute::redistribute_along(self, dim, placement)
    }

    fn local_shapes(&self) -> Vec<Vec<usize>> {
        self.clone().inner().local_shapes()
    }
}

/// Int tensors (labels, indices) and bool tensors (masks): the same primitive on `Hybrid<B>`
/// and `Autodiff<Hybrid<B>>`.
macro_rules! int_distributed {
    ($kind:ty; $($backend:ty),*) => {$(
        impl<B: Backend, const D: usize> Distributed for Tensor<$backend, D, $kind> {
            fn distribute(self, placement: Placement) -> Self {
                Tensor::from_primitive(redistribute(self.into_primitive(), placement))
            }

            fn placement(&self) -> Placement {
                self.clone().into_primitive().placement()
            }

            fn placements(&self) -> Vec<Placement> {
                self.clone().into_primitive().placements()
            }

            fn distribute_along(self, dim: usize, placement: Placement) -> Self {
                Tensor::from_primitive(along(self.into_primitive(), dim, placement))
            }

            fn local_shapes(&self) -> Vec<Vec<usize>> {
                self.clone().into_primitive().shards().iter().map(|s| s.shape().to_vec()).collect()
            }
        }
    )*};
}

int_distributed!(burn::tensor::Int; Hybrid<B>, Autodiff<Hybrid<B>>);
int_distributed!(burn::tensor::Bool; Hybrid<B>, Autodiff<Hybrid<B>>);

/// A `Partial` tensor whose rank `r` holds `summands[r]` (one per rank, all of one shape): its
/// value is their sum: what a contraction over a sharded dimension produces; tests use it for
/// pending sums whose pieces really differ (a tensor `distribute`d to `Partial` keeps its value
/// on rank 0 and zeros elsewhere, which hides rules that treat summands wrongly).
///
/// ```
/// use burn::backend::Flex;
/// use burn::tensor::TensorData;
/// use owt_hybrid::{partial_from_summands, Distributed, MeshDevice, Placement};
///
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let parts = vec![TensorData::from([1.0f32, 2.0]), TensorData::from([10.0f32, 20.0])];
/// let t = partial_from_summands::<Flex, 1>(parts, &mesh);
/// assert_eq!(t.placement(), Placement::PARTIAL_SUM);
/// assert_eq!(t.into_data().to_vec::<f32>().unwrap(), vec![11.0, 22.0]);
/// ```
pub fn partial_from_summands<B: Backend, const D: usize>(
    summands: Vec<burn::tensor::TensorData>,
    mesh: &crate::MeshDevice<B::Device>,
) -> Tensor<Hybrid<B>, D> {
    assert_eq!(
        summands.len(),
        mesh.size(),
        "one summand per rank: {} summands for {} ranks",
        summands.len(),
        mesh.size()
    );
    let shape = summands[0].shape.clone();
    assert!(summands.iter().all(|s| s.shape == shape), "every summand must have the shape {shape:?}");
    let dtype = burn::tensor::backend::get_device_settings::<Hybrid<B>>(mesh).float_dtype.into();
    let shards = summands
        .into_iter()
        .enumerate()
        .filter(|(r, _)| mesh.is_local(*r))
        .map(|(r, s)| B::float_from_data(s.convert_dtype(dtype), mesh.rank_device(r)))
        .collect();
    let t = crate::tensor::dtensor::DTensor::from_parts(mesh.clone(), shape, dtype, Placement::PARTIAL_SUM, shards);
    Tensor::from_primitive(TensorPrimitive::Float(t))
}
