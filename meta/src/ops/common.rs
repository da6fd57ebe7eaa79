//! Op bodies shared by the float, int and bool op files: each computes an output shape and
//! dtype and logs the op by the conventions of [`crate::cost`].

use burn::tensor::{DType, Shape, Slice, TensorData};

use crate::cost::ceil_log2;
use crate::device::MetaDevice;
use crate::shapes;
use crate::tensor::MetaTensor;

/// Flex's index dtype (argmax of ints, pooling indices, int sorts): `isize` on this target.
#[cfg(target_pointer_width = "64")]
pub(crate) const INDEX_DTYPE: DType = DType::I64;
/// Flex's index dtype (argmax of ints, pooling indices, int sorts): `isize` on this target.
#[cfg(target_pointer_width = "32")]
pub(crate) const INDEX_DTYPE: DType = DType::I32;

/// A new tensor of `shape` and `dtype` on `device`, logged as writing it whole (or nothing
/// when `written` is false, as for `empty`).
pub(crate) fn create(op: &'static str, shape: Shape, dtype: DType, device: &MetaDevice, written: bool) -> MetaTensor {
    let out = MetaTensor::new(shape, dtype, device.clone());
    device.record(op, 0, 0, if written { out.bytes() } else { 0 });
    out
}

/// A tensor with the shape and dtype of `data` (which is not kept).
pub(crate) fn from_data(op: &'static str, data: &TensorData, device: &MetaDevice) -> MetaTensor {
    create(op, data.shape.clone(), data.dtype, device, true)
}

/// The data a read of `t` gives: zeros (false for bools) of its shape and dtype.
pub(crate) fn into_data(op: &'static str, t: MetaTensor) -> TensorData {
    t.device.record(op, 0, t.bytes(), 0);
    TensorData::full_dtype(t.shape.clone(), 0i64, t.dtype)
}

/// Elementwise op of one tensor keeping shape and dtype.
pub(crate) fn unary(op: &'static str, t: MetaTensor) -> MetaTensor {
    let out = t.like(t.shape.clone(), t.dtype);
    MetaTensor::elementwise(op, &[&t], out)
}

/// Elementwise op of one tensor keeping its shape, output `dtype`.
pub(crate) fn unary_to(op: &'static str, t: MetaTensor, dtype: DType) -> MetaTensor {
    let out = t.like(t.shape.clone(), dtype);
    MetaTensor::elementwise(op, &[&t], out)
}

/// Elementwise op of two broadcast tensors, output `dtype`.
pub(crate) fn binary(op: &'static str, lhs: MetaTensor, rhs: MetaTensor, dtype: DType) -> MetaTensor {
    let out = lhs.like(shapes::broadcast(op, &lhs.shape, &rhs.shape), dtype);
    MetaTensor::elementwise(op, &[&lhs, &rhs], out)
}

/// Elementwise select of `tensor` and `value` under a broadcast `mask`, `tensor`'s dtype.
pub(crate) fn mask_where(op: &'static str, tensor: MetaTensor, mask: MetaTensor, value: MetaTensor) -> MetaTensor {
    let shape = shapes::broadcast(op, &shapes::broadcast(op, &tensor.shape, &mask.shape), &value.shape);
    let out = tensor.like(shape, tensor.dtype);
    MetaTensor::elementwise(op, &[&tensor, &mask, &value], out)
}

/// Reduction of dimension `dim` to size 1, output `dtype`.
pub(crate) fn reduce_dim(op: &'static str, t: MetaTensor, dim: usize, dtype: DType) -> MetaTensor {
    let out = t.like(shapes::reduce_dim(op, &t.shape, dim), dtype);
    MetaTensor::reduction(op, &[&t], out)
}

/// Reduction of every element to a one-element rank-1 tensor, output `dtype`.
pub(crate) fn reduce_all(op: &'static str, t: MetaTensor, dtype: DType) -> MetaTensor {
    let out = t.like(shapes::scalar(), dtype);
    MetaTensor::reduction(op, &[&t], out)
}

/// Cumulative op along `dim`: same shape and dtype, counted as a reduction.
pub(crate) fn scan(op: &'static str, t: MetaTensor, dim: usize) -> MetaTensor {
    shapes::check_dim(op, &t.shape, dim);
    let out = t.like(t.shape.clone(), t.dtype);
    MetaTensor::reduction(op, &[&t], out)
}

/// `k` indices per lane of dimension `dim` (top-k), output `dtype`.
pub(crate) fn topk(op: &'static str, t: MetaTensor, dim: usize, k: usize, dtype: DType) -> MetaTensor {
    let out = t.like(shapes::with_dim(op, &t.shape, dim, k), dtype);
    MetaTensor::reduction(op, &[&t], out)
}

/// A sort along `dim` keeping the shape, output `dtype`: input elements × ⌈log2 len⌉ flops.
pub(crate) fn sort(op: &'static str, t: &MetaTensor, dim: usize, dtype: DType) -> MetaTensor {
    shapes::check_dim(op, &t.shape, dim);
    let out = t.like(t.shape.clone(), dtype);
    let flops = t.numel() as u64 * ceil_log2(t.shape[dim]);
    MetaTensor::log(op, &[t], out, flops)
}

/// Values of `shape` and `t`'s dtype with their indices in `index_dtype` (max/min with
/// indices, sorts with indices): one log entry writing both.
pub(crate) fn with_indices(
    op: &'static str,
    t: &MetaTensor,
    shape: Shape,
    index_dtype: DType,
    flops: u64,
) -> (MetaTensor, MetaTensor) {
    let values = t.like(shape.clone(), t.dtype);
    let indices = t.like(shape, index_dtype);
    t.device.record(op, flops, t.bytes(), values.bytes() + indices.bytes());
    (values, indices)
}

/// [`with_indices`] for a reduction of dimension `dim` to size 1.
pub(crate) fn reduce_dim_with_indices(
    op: &'static str,
    t: MetaTensor,
    dim: usize,
    index_dtype: DType,
) -> (MetaTensor, MetaTensor) {
    let shape = shapes::reduce_dim(op, &t.shape, dim);
    with_indices(op, &t, shape, index_dtype, t.numel() as u64)
}

/// [`with_indices`] for a sort along `dim`.
pub(crate) fn sort_with_indices(
    op: &'static str,
    t: MetaTensor,
    dim: usize,
    index_dtype: DType,
) -> (MetaTensor, MetaTensor) {
    shapes::check_dim(op, &t.shape, dim);
    let flops = t.numel() as u64 * ceil_log2(t.shape[dim]);
    with_indices(op, &t, t.shape.clone(), index_dtype, flops)
}

/// A view with another shape, same dtype (0 flops, 0 bytes).
pub(crate) fn view(op: &'static str, t: MetaTensor, shape: Shape) -> MetaTensor {
    let out = t.like(shape, t.dtype);
    MetaTensor::view(op, &t, out)
}

/// `tensors` concatenated along `dim` (a copy).
pub(crate) fn cat(op: &'static str, tensors: Vec<MetaTensor>, dim: usize) -> MetaTensor {
    let shape = shapes::cat(op, tensors.iter().map(|t| &t.shape), dim);
    let out = tensors[0].like(shape, tensors[0].dtype);
    let inputs: Vec<&MetaTensor> = tensors.iter().collect();
    MetaTensor::movement(op, &inputs, out)
}

/// A copy of `t` with another shape (flip, repeat), same dtype.
pub(crate) fn copy(op: &'static str, t: MetaTensor, shape: Shape) -> MetaTensor {
    let out = t.like(shape, t.dtype);
    MetaTensor::movement(op, &[&t], out)
}

/// `slice_assign`: `tensor` with `value` written into the slices (a copy, `tensor`'s shape).
pub(crate) fn slice_assign(op: &'static str, tensor: MetaTensor, slices: &[Slice], value: MetaTensor) -> MetaTensor {
    let region = shapes::slice(op, &tensor.shape, slices);
    assert_eq!(region, value.shape, "{op}: value {:?} does not fill the slices {region:?}", value.shape);
    let out = tensor.like(tensor.shape.clone(), tensor.dtype);
    MetaTensor::movement(op, &[&tensor, &value], out)
}

/// `gather` along `dim`: the indices' shape, the tensor's dtype (a copy).
pub(crate) fn gather(op: &'static str, dim: usize, tensor: MetaTensor, indices: MetaTensor) -> MetaTensor {
    shapes::check_dim(op, &tensor.shape, dim);
    assert_eq!(tensor.shape.num_dims(), indices.shape.num_dims(), "{op}: ranks of tensor and indices differ");
    let out = tensor.like(indices.shape.clone(), tensor.dtype);
    MetaTensor::movement(op, &[&tensor, &indices], out)
}

/// `select` along `dim`: dimension `dim` becomes the number of indices (a copy).
pub(crate) fn select(op: &'static str, tensor: MetaTensor, dim: usize, indices: MetaTensor) -> MetaTensor {
    let out = tensor.like(shapes::with_dim(op, &tensor.shape, dim, indices.numel()), tensor.dtype);
    MetaTensor::movement(op, &[&tensor, &indices], out)
}

/// Scatter-style accumulation into `tensor` (scatter_add, select_add, scatter_or): the
/// tensor's shape and dtype, one op per element of `value`.
pub(crate) fn accumulate(op: &'static str, tensor: MetaTensor, indices: MetaTensor, value: MetaTensor) -> MetaTensor {
    let out = tensor.like(tensor.shape.clone(), tensor.dtype);
    let flops = value.numel() as u64;
    MetaTensor::log(op, &[&tensor, &indices, &value], out, flops)
}

/// `gather_nd`: `indices[..m-1] ++ data[k..]` where `k` is the indices' last dimension.
pub(crate) fn gather_nd(op: &'static str, data: MetaTensor, indices: MetaTensor) -> MetaTensor {
    let m = indices.shape.num_dims();
    assert!(m >= 1, "{op}: indices need a last dimension");
    let k = indices.shape[m - 1];
    assert!(k <= data.shape.num_dims(), "{op}: {k} index components for data {:?}", data.shape);
    let mut dims = indices.shape[..m - 1].to_vec();
    dims.extend_from_slice(&data.shape[k..]);
    let out = data.like(Shape::from(dims), data.dtype);
    MetaTensor::movement(op, &[&data, &indices], out)
}

/// The unfold view of `t` (Flex returns a strided view: 0 flops, 0 bytes).
pub(crate) fn unfold(op: &'static str, t: MetaTensor, dim: usize, size: usize, step: usize) -> MetaTensor {
    let shape = shapes::unfold(op, &t.shape, dim, size, step);
    view(op, t, shape)
}

/// `to_device`: the same tensor re-tagged with `device` (0 flops, 0 bytes).
pub(crate) fn to_device(op: &'static str, t: MetaTensor, device: &MetaDevice) -> MetaTensor {
    t.device.record(op, 0, 0, 0);
    MetaTensor::new(t.shape, t.dtype, device.clone())
}

/// The matmul of `lhs` `[.., m, k]` and `rhs` `[.., k, n]`: 2·batch·m·n·k flops, `lhs`'s dtype.
pub(crate) fn matmul(op: &'static str, lhs: MetaTensor, rhs: MetaTensor) -> MetaTensor {
    let shape = shapes::matmul(op, &lhs.shape, &rhs.shape);
    let k = lhs.shape[lhs.shape.num_dims() - 1] as u64;
    let flops = 2 * shape.num_elements() as u64 * k;
    let out = lhs.like(shape, lhs.dtype);
    MetaTensor::log(op, &[&lhs, &rhs], out, flops)
}
