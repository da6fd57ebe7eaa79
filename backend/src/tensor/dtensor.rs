//! The distributed tensor: a global shape, a placement along each dimension of its mesh and
//! one inner tensor per rank of this process.

use std::sync::{Arc, OnceLock};

use burn::tensor::backend::Backend;
use burn::tensor::{DType, Shape, Slice, TensorMetadata};

use crate::mesh::MeshDevice;
use crate::spec::placement::Placement;
use crate::tensor::kind::ShardKind;

/// A tensor of `Hybrid<B>`: what it is globally (shape, dtype), how it is laid out
/// (a placement along each dimension of its mesh) and the pieces of this process's ranks:
/// `shards[i]` is global rank `first + i`'s, on its device, where `first..first +
/// shards.len()` are the mesh's [`local_ranks`](MeshDevice::local_ranks) (every rank in a
/// one-process mesh).
///
/// On a mesh with dimensions across processes ([`MeshDevice::outer_dims`]: the nodes of a
/// mesh of nodes) the tensor is laid out along those first (`outer`, outermost first), which
/// leaves this process a part of it (`shape`: its view), and that part is laid out over the
/// process's ranks (`placement`). Everything inside a process (the rules of the innermost
/// dimension, the collectives among its ranks) sees only the view; Burn sees `global`. On a
/// 1-D mesh the two shapes are one.
pub struct DTensor<B: Backend, K: ShardKind<B>> {
    pub(crate) mesh: MeshDevice<B::Device>,
    /// This process's view: the global shape cut by the outer placements.
    pub(crate) shape: Shape,
    /// The whole tensor's shape, over every dimension of the mesh.
    pub(crate) global: Shape,
    pub(crate) dtype: DType,
    /// Along the mesh's innermost dimension (its ranks).
    pub(crate) placement: Placement,
    /// Along each outer dimension of the mesh, outermost first (empty on a 1-D mesh).
    pub(crate) outer: Vec<Placement>,
    pub(crate) shards: Vec<K::Prim>,
    /// The whole tensor on every local rank (indexed like `shards`), kept once a matmul has
    /// gathered this sharded tensor as its left operand. Shared by every clone, so the copy an
    /// autodiff graph saves for the backward pass finds the activities the forward pass
    /// exchanged and the weight gradient moves nothing (Krizhevsky 2014: each activity crosses
    /// once per direction). It lives as long as the tensor does: for an FC input, until the
    /// backward pass has used it.
    pub(crate) kept: Arc<OnceLock<Vec<K::Prim>>>,
}

impl<B: Backend, K: ShardKind<B>> Clone for DTensor<B, K> {
    fn clone(&self) -> Self {
        Self {
            mesh: self.mesh.clone(),
            shape: self.shape.clone(),
            global: self.global.clone(),
            dtype: self.dtype,
            placement: self.placement,
            outer: self.outer.clone(),
            shards: self.shards.clone(),
            kept: self.kept.clone(),
        }
    }
}

impl<B: Backend, K: ShardKind<B>> std::fmt::Debug for DTensor<B, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.outer.is_empty() {
            return write!(f, "DTensor<{}>{:?} {} on {:?}", K::NAME, &self.shape[..], self.placement, self.mesh);
        }
        let outer: Vec<String> = self.outer.iter().map(|p| p.to_string()).collect();
        write!(
            f,
            "DTensor<{}>{:?} [{}, {}] (view {:?}) on {:?}",
            K::NAME,
            &self.global[..],
            outer.join(", "),
            self.placement,
            &self.shape[..],
            self.mesh
        )
    }
}

impl<B: Backend, K: ShardKind<B>> TensorMetadata for DTensor<B, K> {
    fn dtype(&self) -> DType {
        self.dtype
    }
    /// The global shape (what Burn sees).
    fn shape(&self) -> Shape {
        self.global.clone()
    }
}

/// Bytes of an inner tensor (what a transfer of it moves).
pub(crate) fn bytes_of<P: TensorMetadata>(p: &P) -> u64 {
    (p.shape().num_elements() * p.dtype().size()) as u64
}

/// Slices covering all of `shape` except `range` on `dim`.
pub(crate) fn slices_along(shape: &Shape, dim: usize, range: std::ops::Range<usize>) -> Vec<Slice> {
    (0..shape.num_dims())
        .map(|d| {
            if d == dim {
                Slice::new(range.start as isize, Some(range.end as isize), 1)
            } else {
                Slice::new(0, Some(shape[d] as isize), 1)
            }
        })
        .collect()
}

impl<B: Backend, K: ShardKind<B>> DTensor<B, K> {
    /// Assembles a tensor from its parts; checks the shard count and per-rank shapes.
    pub(crate) fn from_parts(
        mesh: MeshDevice<B::Device>,
        shape: Shape,
        dtype: DType,
        placement: Placement,
        shards: Vec<K::Prim>,
    ) -> Self {
        assert_eq!(
            shards.len(),
            mesh.local_ranks().len(),
            "Hybrid: {} shards for a process holding {} of a mesh's {} ranks",
            shards.len(),
            mesh.local_ranks().len(),
            mesh.size()
        );
        let outer = vec![Placement::Replicate; mesh.outer_dims().len()];
        let global = shape.clone();
        let t = Self { mesh, shape, global, dtype, placement, outer, shards, kept: Arc::default() };
        if t.shards.iter().any(|s| s.shape().num_elements() == 0) {
            t.mesh.record_empty(&format!("{} {} {:?}", K::NAME, t.placement, &t.shape[..]));
        }
        debug_assert!(
            t.mesh.local_ranks().zip(&t.shards).all(|(r, s)| s.shape() == t.local_shape(r)),
            "Hybrid: shard shapes {:?} do not match {:?} {}",
            t.shards.iter().map(|s| s.shape()).collect::<Vec<_>>(),
            &t.shape[..],
            t.placement
        );
        t
    }

    /// This tensor laid out `outer` along the mesh's outer dimensions, its global shape
    /// `global` (its pieces and its view unchanged: what a caller that cut or combined the
    /// view along those dimensions says it is now).
    pub(crate) fn placed_outer(self, outer: Vec<Placement>, global: Shape) -> Self {
        debug_assert_eq!(outer.len(), self.mesh.outer_dims().len(), "a placement per outer dimension");
        Self { outer, global, ..self }
    }

    /// The placement along each dimension of the mesh, outermost first (one entry on a 1-D
    /// mesh).
    pub fn placements(&self) -> Vec<Placement> {
        let mut all = self.outer.clone();
        all.push(self.placement);
        all
    }

    /// Whether the tensor is whole along every outer dimension (always on a 1-D mesh).
    pub(crate) fn whole_across(&self) -> bool {
        self.outer.iter().all(|p| *p == Placement::Replicate)
    }

    /// The same value on every rank (each local rank's copy made by `make(global rank)`).
    pub(crate) fn replicated(mesh: MeshDevice<B::Device>, make: impl FnMut(usize) -> K::Prim) -> Self {
        let shards: Vec<K::Prim> = mesh.local_ranks().map(make).collect();
        let (shape, dtype) = (shards[0].shape(), shards[0].dtype());
        Self::from_parts(mesh, shape, dtype, Placement::Replicate, shards)
    }

    /// The mesh.
    pub fn mesh(&self) -> &MeshDevice<B::Device> {
        &self.mesh
    }

    /// The placement.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The inner tensors of this process's ranks, in rank order (every rank's in a
    /// one-process mesh; see [`MeshDevice::local_ranks`]).
    pub fn shards(&self) -> &[K::Prim] {
        &self.shards
    }

    /// Whether every rank keeps a whole copy of this sharded tensor (see the `kept` field):
    /// bringing it whole, or to any other shard, then moves nothing.
    pub fn is_kept_whole(&self) -> bool {
        self.kept.get().is_some()
    }

    /// The kept whole copy as a `Replicate` tensor, if there is one (laid out as this one
    /// along the outer dimensions).
    pub(crate) fn kept_whole(&self) -> Option<Self> {
        let pieces = self.kept.get()?.clone();
        let whole = Self::from_parts(self.mesh.clone(), self.shape.clone(), self.dtype, Placement::Replicate, pieces);
        Some(whole.placed_outer(self.outer.clone(), self.global.clone()))
    }

    /// Keeps `whole` (this tensor whole on every rank: a sharded tensor gathered, a pending
    /// sum reduced) with this tensor and its clones; a copy kept before stays.
    pub(crate) fn keep_whole(&self, whole: Vec<K::Prim>) {
        debug_assert!(whole.iter().all(|p| p.shape() == self.shape), "a kept copy is the whole tensor");
        if matches!(self.placement, Placement::Shard(_) | Placement::Partial(_)) {
            let _ = self.kept.set(whole);
        }
    }

    /// Number of ranks of the mesh (over every process).
    pub fn ranks(&self) -> usize {
        self.mesh.size()
    }

    /// The shape rank `rank` holds under the placement.
    pub fn local_shape(&self, rank: usize) -> Shape {
        crate::spec::placement::local_shape(&self.shape, self.placement, self.ranks(), rank)
    }

    /// Applies `f` to every rank's piece, keeping shape and placement (detach, grad flags).
    pub(crate) fn map_same(self, f: impl FnMut(K::Prim) -> K::Prim) -> Self {
        let shards = self.shards.into_iter().map(f).collect();
        Self { shards, ..self }
    }

    /// Like [`DTensor::map`] with a new placement as well; the view's shape and the outer
    /// layout stay.
    pub(crate) fn map_placed<K2: ShardKind<B>>(
        self,
        shape: Shape,
        placement: Placement,
        mut f: impl FnMut(usize, K::Prim) -> K2::Prim,
    ) -> DTensor<B, K2> {
        let shards: Vec<K2::Prim> = self.mesh.local_ranks().zip(self.shards).map(|(r, p)| f(r, p)).collect();
        let dtype = shards[0].dtype();
        let (outer, global) = (self.outer, self.global);
        DTensor::from_parts(self.mesh, shape, dtype, placement, shards).placed_outer(outer, global)
    }
}
