//! Distributed tensors made straight from host data: each rank uploads only the piece its
//! placement gives it (a batch shard, not the whole batch), so feeding a mesh moves each
//! image from the host once. Nothing crosses ranks, so nothing is recorded in the ledger.

use burn::backend::Autodiff;
use burn::tensor::backend::{get_device_settings, Backend};
use burn::tensor::{DType, Int, Shape, Tensor, TensorData, TensorPrimitive};

use crate::backend::Hybrid;
use crate::mesh::MeshDevice;
use crate::spec::placement::{can_shard, shard_ranges, Placement, ReduceOp};
use crate::tensor::dtensor::DTensor;
use crate::tensor::kind::{FloatKind, IntKind, ShardKind};

/// The rows `range` of dimension `dim` of row-major host data.
pub(crate) fn host_slice(data: &TensorData, dim: usize, range: std::ops::Range<usize>) -> TensorData {
    let shape = &data.shape;
    let elem = data.dtype.size();
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product::<usize>() * elem;
    let rows = shape[dim];
    let bytes = data.as_bytes();
    let mut out = Vec::with_capacity(outer * range.len() * inner);
    for o in 0..outer {
        out.extend_from_slice(&bytes[(o * rows + range.start) * inner..(o * rows + range.end) * inner]);
    }
    let mut local: Shape = shape.clone();
    local[dim] = range.len();
    TensorData::from_bytes_vec(out, local, data.dtype)
}

/// The pieces of `data` under `placement`, one per rank (a pending sum: rank 0 holds the
/// value, the others zeros of the same shape and type; a pending maximum: every rank holds it).
fn pieces(data: TensorData, placement: Placement, ranks: usize) -> (Placement, Vec<TensorData>) {
    match placement {
        Placement::Shard(d) if ranks > 1 && can_shard(data.shape[d], ranks) => {
            let pieces = shard_ranges(data.shape[d], ranks).into_iter().map(|r| host_slice(&data, d, r)).collect();
            (placement, pieces)
        }
        Placement::Partial(ReduceOp::Max) if ranks > 1 => (placement, vec![data; ranks]),
        Placement::Partial(ReduceOp::Sum) if ranks > 1 => {
            let zeros = TensorData::from_bytes_vec(vec![0; data.as_bytes().len()], data.shape.clone(), data.dtype);
            let mut pieces = vec![data];
            pieces.extend((1..ranks).map(|_| zeros.clone()));
            (placement, pieces)
        }
        // One rank, Replicate, or a dimension shorter than the mesh: whole on every rank.
        _ => (Placement::Replicate, vec![data; ranks]),
    }
}

/// Which rows of a batch this process's ranks take under an input placement: the rows a
/// process of a job must read and upload (all of them in a job of one process, or when the
/// input is not split by rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSplit {
    ranks: usize,
    local: std::ops::Range<usize>,
    sharded: bool,
}

impl RowSplit {
    /// Every row (one process).
    pub fn whole() -> Self {
        Self { ranks: 1, local: 0..1, sharded: false }
    }

    /// The rows of this process's ranks of `mesh` for an input laid out as `placement`.
    pub fn of<D: burn::tensor::backend::DeviceOps>(mesh: &MeshDevice<D>, placement: Placement) -> Self {
        let sharded = placement == Placement::Shard(0) && mesh.processes() > 1;
        Self { ranks: mesh.size(), local: mesh.local_ranks(), sharded }
    }

    /// Block `index` of `parts` equal blocks of rows (a node's share on a 2-D mesh).
    pub fn block(parts: usize, index: usize) -> Self {
        Self { ranks: parts, local: index..index + 1, sharded: parts > 1 }
    }

    /// The rows of a batch of `total` images this process takes.
    pub fn rows(&self, total: usize) -> std::ops::Range<usize> {
        if !self.sharded || !can_shard(total, self.ranks) {
            return 0..total;
        }
        let ranges = shard_ranges(total, self.ranks);
        ranges[self.local.start].start..ranges[self.local.end - 1].end
    }
}

/// `t`, made on a mesh of nodes from rows `rows` of a batch of `total` (this node's block, as
/// [`RowSplit::block`] names it), as the whole batch split by rows over the nodes: laid out
/// `Shard(0)` along the mesh's outer dimension, its global shape the whole batch's. Where the
/// rows are the whole batch (a batch shorter than the nodes, or every node given it whole)
/// it is whole along the nodes.
pub(crate) fn node_block<B: Backend, const D: usize>(
    t: Tensor<Hybrid<B>, D>,
    rows: std::ops::Range<usize>,
    total: usize,
) -> Tensor<Hybrid<B>, D> {
    let t = t.into_primitive().tensor();
    Tensor::from_primitive(TensorPrimitive::Float(block_of(t, rows, total)))
}

/// [`node_block`] of an int tensor (labels, or pixels as bytes).
pub(crate) fn node_block_int<B: Backend>(
    t: DTensor<B, IntKind>,
    rows: std::ops::Range<usize>,
    total: usize,
) -> DTensor<B, IntKind> {
    block_of(t, rows, total)
}

fn block_of<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    rows: std::ops::Range<usize>,
    total: usize,
) -> DTensor<B, K> {
    if rows == (0..total) {
        return t;
    }
    assert_eq!(t.outer.len(), 1, "Hybrid: a node's block of rows on a mesh of nodes");
    assert_eq!(t.shape[0], rows.len(), "Hybrid: {} rows of data for rows {rows:?}", t.shape[0]);
    let mut global = t.shape.clone();
    global[0] = total;
    t.placed_outer(vec![Placement::Shard(0)], global)
}

fn upload<B: Backend, K: ShardKind<B>>(
    data: TensorData,
    rows: std::ops::Range<usize>,
    total: usize,
    placement: Placement,
    mesh: &MeshDevice<B::Device>,
    make: impl Fn(TensorData, &B::Device) -> K::Prim,
) -> DTensor<B, K> {
    if rows != (0..total) {
        // This process's rows only: each local rank's piece is a block of them.
        let want = RowSplit::of(mesh, placement).rows(total);
        assert_eq!(
            rows, want,
            "Hybrid: rows {rows:?} of a batch of {total} uploaded; this process's ranks take {want:?}"
        );
        assert_eq!(data.shape[0], rows.len(), "Hybrid: {} rows of data for rows {rows:?}", data.shape[0]);
        let ranges = shard_ranges(total, mesh.size());
        let (mut shape, dtype) = (data.shape.clone(), data.dtype);
        shape[0] = total;
        let shards = mesh
            .local_ranks()
            .map(|r| {
                let piece = host_slice(&data, 0, ranges[r].start - rows.start..ranges[r].end - rows.start);
                make(piece, mesh.rank_device(r))
            })
            .collect();
        return DTensor::from_parts(mesh.clone(), shape, dtype, placement, shards);
    }
    let (shape, dtype) = (data.shape.clone(), data.dtype);
    let (placement, pieces) = pieces(data, placement, mesh.size());
    // Only this process's ranks' pieces are uploaded.
    let local = mesh.local_ranks();
    let shards = pieces
        .into_iter()
        .enumerate()
        .filter(|(r, _)| local.contains(r))
        .map(|(r, p)| make(p, mesh.rank_device(r)))
        .collect();
    DTensor::from_parts(mesh.clone(), shape, dtype, placement, shards)
}

/// Tensors that can be built on a mesh straight into a placement from host data.
///
/// ```
/// use burn::backend::Flex;
/// use burn::prelude::*;
/// use burn::tensor::{DType, TensorData};
/// use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement, Upload};
///
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let pixels = TensorData::new(vec![0u8; 4 * 28 * 28], [4, 1, 28, 28]);
/// let images = Tensor::<Hybrid<Flex>, 4, Int>::upload(pixels, Placement::Shard(0), &mesh, Some(DType::U8));
/// assert_eq!(images.local_shapes(), vec![vec![2, 1, 28, 28]; 2]); // each rank got its 2 images
/// ```
pub trait Upload<D>: Sized {
    /// `data` laid out as `placement` on `mesh`, each rank uploading only its own piece. The
    /// element type is `dtype`, or the mesh's default for the tensor kind when `None` (so
    /// `DType::U8` images stay bytes on the device). A dimension shorter than the mesh is not
    /// split: such a tensor is `Replicate`.
    fn upload(data: TensorData, placement: Placement, mesh: &MeshDevice<D>, dtype: Option<DType>) -> Self {
        let n = data.shape.first().copied().unwrap_or(1);
        Self::upload_rows(data, 0..n, n, placement, mesh, dtype)
    }

    /// [`Upload::upload`] from rows `rows` (along dimension 0) of a tensor of `total` rows:
    /// the rows this process's ranks take ([`RowSplit::rows`]) in a job of several processes,
    /// so a process reads and uploads only its share of a batch; all of them otherwise.
    fn upload_rows(
        data: TensorData,
        rows: std::ops::Range<usize>,
        total: usize,
        placement: Placement,
        mesh: &MeshDevice<D>,
        dtype: Option<DType>,
    ) -> Self;
}

impl<B: Backend, const N: usize> Upload<B::Device> for Tensor<Hybrid<B>, N> {
    fn upload_rows(
        data: TensorData,
        rows: std::ops::Range<usize>,
        total: usize,
        placement: Placement,
        mesh: &MeshDevice<B::Device>,
        dtype: Option<DType>,
    ) -> Self {
        let dtype = dtype.unwrap_or_else(|| get_device_settings::<Hybrid<B>>(mesh).float_dtype.into());
        let t = upload::<B, FloatKind>(data.convert_dtype(dtype), rows, total, placement, mesh, |p, d| {
            B::float_from_data(p, d)
        });
        Tensor::from_primitive(TensorPrimitive::Float(t))
    }
}

impl<B: Backend, const N: usize> Upload<B::Device> for Tensor<Hybrid<B>, N, Int> {
    fn upload_rows(
        data: TensorData,
        rows: std::ops::Range<usize>,
        total: usize,
        placement: Placement,
        mesh: &MeshDevice<B::Device>,
        dtype: Option<DType>,
    ) -> Self {
        let dtype = dtype.unwrap_or_else(|| get_device_settings::<Hybrid<B>>(mesh).int_dtype.into());
        let t = upload::<B, IntKind>(data.convert_dtype(dtype), rows, total, placement, mesh, |p, d| {
            B::int_from_data(p, d)
        });
        Tensor::from_primitive(t)
    }
}

impl<B: Backend, const N: usize> Upload<B::Device> for Tensor<Autodiff<Hybrid<B>>, N> {
    /// A leaf without gradient tracking (input data).
    fn upload_rows(
        data: TensorData,
        rows: std::ops::Range<usize>,
        total: usize,
        placement: Placement,
        mesh: &MeshDevice<B::Device>,
        dtype: Option<DType>,
    ) -> Self {
        Tensor::from_inner(Tensor::<Hybrid<B>, N>::upload_rows(data, rows, total, placement, mesh, dtype))
    }
}

impl<B: Backend, const N: usize> Upload<B::Device> for Tensor<Autodiff<Hybrid<B>>, N, Int> {
    fn upload_rows(
        data: TensorData,
        rows: std::ops::Range<usize>,
        total: usize,
        placement: Placement,
        mesh: &MeshDevice<B::Device>,
        dtype: Option<DType>,
    ) -> Self {
        let t = Tensor::<Hybrid<B>, N, Int>::upload_rows(data, rows, total, placement, mesh, dtype);
        Tensor::from_primitive(t.into_primitive())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_slices_take_rows_of_any_dimension() {
        let data = TensorData::new((0..24u8).collect::<Vec<_>>(), [2, 3, 4]);
        let mid = host_slice(&data, 1, 1..3);
        assert_eq!(mid.shape.to_vec(), vec![2, 2, 4]);
        assert_eq!(mid.to_vec::<u8>().unwrap(), vec![4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23]);
        let first = host_slice(&data, 0, 1..2);
        assert_eq!(first.to_vec::<u8>().unwrap(), (12..24).collect::<Vec<u8>>());
        let last = host_slice(&data, 2, 3..4);
        assert_eq!(last.to_vec::<u8>().unwrap(), vec![3, 7, 11, 15, 19, 23]);
    }

    #[test]
    fn short_dimensions_stay_whole() {
        let data = TensorData::new(vec![1.0f32, 2.0], [1, 2]);
        let (placement, pieces) = pieces(data, Placement::Shard(0), 3);
        assert_eq!(placement, Placement::Replicate);
        assert!(pieces.iter().all(|p| p.num_elements() == 2));
    }
}
