//! Bool ops of `Hybrid<B>` (masks): the same placement rules as floats.

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::BoolTensorOps;
use burn::tensor::{BoolDType, FloatDType, IntDType, Scalar, Shape, Slice, TensorData};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::mesh::MeshDevice;
use crate::ops::common;
use crate::ops::dispatch::{replicate_with, to_mesh, whole};
use crate::rules::Linearity;
use crate::tensor::kind::{BoolKind, FloatKind, IntKind};

type F<B> = HybridFloat<B>;
type I<B> = HybridInt<B>;
type Bo<B> = HybridBool<B>;

/// A bool op that is not linear (a pending "or" is made whole first).
fn unary<B: Backend, K2: crate::tensor::kind::ShardKind<B>>(
    op: &str,
    t: Bo<B>,
    f: impl Fn(B::BoolTensorPrimitive) -> K2::Prim + Sync,
) -> crate::tensor::dtensor::DTensor<B, K2> {
    common::unary::<B, BoolKind, K2>(op, t, Linearity::None, f)
}

/// A bool op on two masks, not linear.
fn binary<B: Backend>(
    op: &str,
    a: Bo<B>,
    b: Bo<B>,
    f: impl Fn(B::BoolTensorPrimitive, B::BoolTensorPrimitive) -> B::BoolTensorPrimitive + Sync,
) -> Bo<B> {
    common::binary::<B, BoolKind, BoolKind, BoolKind>(op, a, b, Linearity::None, f)
}

impl<B: Backend> BoolTensorOps<Self> for Hybrid<B> {
    fn bool_empty(shape: Shape, device: &MeshDevice<B::Device>, dtype: BoolDType) -> Bo<B> {
        replicate_with::<B, BoolKind>(device, |d| B::bool_empty(shape.clone(), d, dtype))
    }

    fn bool_zeros(shape: Shape, device: &MeshDevice<B::Device>, dtype: BoolDType) -> Bo<B> {
        replicate_with::<B, BoolKind>(device, |d| B::bool_zeros(shape.clone(), d, dtype))
    }

    fn bool_ones(shape: Shape, device: &MeshDevice<B::Device>, dtype: BoolDType) -> Bo<B> {
        replicate_with::<B, BoolKind>(device, |d| B::bool_ones(shape.clone(), d, dtype))
    }

    async fn bool_into_data(tensor: Bo<B>) -> Result<TensorData, ExecutionError> {
        B::bool_into_data(whole(tensor)).await
    }

    fn bool_from_data(data: TensorData, device: &MeshDevice<B::Device>) -> Bo<B> {
        replicate_with::<B, BoolKind>(device, |d| B::bool_from_data(data.clone(), d))
    }

    fn bool_into_int(tensor: Bo<B>, out_dtype: IntDType) -> I<B> {
        unary::<B, IntKind>("bool_into_int", tensor, |p| B::bool_into_int(p, out_dtype))
    }

    fn bool_into_float(tensor: Bo<B>, out_dtype: FloatDType) -> F<B> {
        unary::<B, FloatKind>("bool_into_float", tensor, |p| B::bool_into_float(p, out_dtype))
    }

    fn bool_device(tensor: &Bo<B>) -> MeshDevice<B::Device> {
        tensor.mesh.clone()
    }

    fn bool_to_device(tensor: Bo<B>, device: &MeshDevice<B::Device>) -> Bo<B> {
        to_mesh(tensor, device)
    }

    fn bool_reshape(tensor: Bo<B>, shape: Shape) -> Bo<B> {
        common::reshape(tensor, shape)
    }

    fn bool_slice(tensor: Bo<B>, slices: &[Slice]) -> Bo<B> {
        common::slice(tensor, slices)
    }

    fn bool_slice_assign(tensor: Bo<B>, slices: &[Slice], value: Bo<B>) -> Bo<B> {
        common::slice_assign("bool_slice_assign", tensor, slices, value, |t, s, v| B::bool_slice_assign(t, s, v))
    }

    fn bool_mask_where(tensor: Bo<B>, mask: Bo<B>, value: Bo<B>) -> Bo<B> {
        common::mask_where("bool_mask_where", tensor, mask, value, |t, m, v| B::bool_mask_where(t, m, v))
    }

    fn bool_mask_fill(tensor: Bo<B>, mask: Bo<B>, value: Scalar) -> Bo<B> {
        binary("bool_mask_fill", tensor, mask, |t, m| B::bool_mask_fill(t, m, value))
    }

    fn bool_gather(dim: usize, tensor: Bo<B>, indices: I<B>) -> Bo<B> {
        common::gather("bool_gather", dim, tensor, indices, |t, i| B::bool_gather(dim, t, i))
    }

    fn bool_scatter_or(dim: usize, tensor: Bo<B>, indices: I<B>, value: Bo<B>) -> Bo<B> {
        common::scatter("bool_scatter_or", dim, tensor, indices, value, |t, i, v| B::bool_scatter_or(dim, t, i, v))
    }

    fn bool_select(tensor: Bo<B>, dim: usize, indices: I<B>) -> Bo<B> {
        common::select("bool_select", dim, tensor, indices, |t, i| B::bool_select(t, dim, i))
    }

    fn bool_select_or(tensor: Bo<B>, dim: usize, indices: I<B>, value: Bo<B>) -> Bo<B> {
        common::select_add("bool_select_or", dim, tensor, indices, value, |t, i, v| B::bool_select_or(t, dim, i, v))
    }

    fn bool_equal(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary("bool_equal", lhs, rhs, |a, b| B::bool_equal(a, b))
    }

    fn bool_equal_elem(lhs: Bo<B>, rhs: Scalar) -> Bo<B> {
        unary("bool_equal_elem", lhs, |p| B::bool_equal_elem(p, rhs))
    }

    fn bool_not(tensor: Bo<B>) -> Bo<B> {
        unary("bool_not", tensor, |p| B::bool_not(p))
    }

    fn bool_and(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary("bool_and", lhs, rhs, |a, b| B::bool_and(a, b))
    }

    fn bool_or(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary("bool_or", lhs, rhs, |a, b| B::bool_or(a, b))
    }

    fn bool_swap_dims(tensor: Bo<B>, dim1: usize, dim2: usize) -> Bo<B> {
        let axes = common::swap_axes(tensor.shape.num_dims(), dim1, dim2);
        common::permute(tensor, &axes, |p| B::bool_swap_dims(p, dim1, dim2))
    }

    fn bool_permute(tensor: Bo<B>, axes: &[usize]) -> Bo<B> {
        common::permute(tensor, axes, |p| B::bool_permute(p, axes))
    }

    fn bool_flip(tensor: Bo<B>, axes: &[usize]) -> Bo<B> {
        common::flip("bool_flip", tensor, axes, |p| B::bool_flip(p, axes))
    }

    fn bool_expand(tensor: Bo<B>, shape: Shape) -> Bo<B> {
        common::expand(tensor, shape, |p, s| B::bool_expand(p, s))
    }

    fn bool_unfold(tensor: Bo<B>, dim: usize, size: usize, step: usize) -> Bo<B> {
        common::unfold("bool_unfold", tensor, dim, |p| B::bool_unfold(p, dim, size, step))
    }

    fn bool_cat(tensors: Vec<Bo<B>>, dim: usize) -> Bo<B> {
        common::cat(tensors, dim)
    }

    // Ops Burn gives a default body: each runs the inner backend's own op, by a rule where one
    // is natural, gathered otherwise (see float.rs).

    fn bool_repeat_dim(tensor: Bo<B>, dim: usize, times: usize) -> Bo<B> {
        common::along_dim::<B, BoolKind, BoolKind>("bool_repeat_dim", tensor, dim, |p| {
            B::bool_repeat_dim(p, dim, times)
        })
    }

    fn bool_not_equal(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary("bool_not_equal", lhs, rhs, |a, b| B::bool_not_equal(a, b))
    }

    fn bool_not_equal_elem(lhs: Bo<B>, rhs: Scalar) -> Bo<B> {
        unary("bool_not_equal_elem", lhs, |p| B::bool_not_equal_elem(p, rhs))
    }

    fn bool_xor(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary("bool_xor", lhs, rhs, |a, b| B::bool_xor(a, b))
    }

    fn bool_transpose(tensor: Bo<B>) -> Bo<B> {
        let n = tensor.shape.num_dims();
        let axes = common::swap_axes(n, n.saturating_sub(2), n.saturating_sub(1));
        common::permute(tensor, &axes, |p| B::bool_transpose(p))
    }

    fn bool_any(tensor: Bo<B>) -> Bo<B> {
        common::gathered::<B, BoolKind, BoolKind>("bool_any", tensor, |p| B::bool_any(p))
    }

    fn bool_any_dim(tensor: Bo<B>, dim: usize) -> Bo<B> {
        common::along_dim::<B, BoolKind, BoolKind>("bool_any_dim", tensor, dim, |p| B::bool_any_dim(p, dim))
    }

    fn bool_all(tensor: Bo<B>) -> Bo<B> {
        common::gathered::<B, BoolKind, BoolKind>("bool_all", tensor, |p| B::bool_all(p))
    }

    fn bool_all_dim(tensor: Bo<B>, dim: usize) -> Bo<B> {
        common::along_dim::<B, BoolKind, BoolKind>("bool_all_dim", tensor, dim, |p| B::bool_all_dim(p, dim))
    }

    /// The indices of every true element: their number depends on the values, so the mask is
    /// gathered and every rank finds them all (`Replicate` out).
    fn bool_argwhere(tensor: Bo<B>, out_dtype: IntDType) -> impl std::future::Future<Output = I<B>> + 'static + Send {
        let whole = crate::ops::dispatch::gathered_all::<B, BoolKind>("bool_argwhere", vec![Some(tensor)]);
        let t = whole.into_iter().next().flatten().expect("the mask");
        async move {
            let mesh = t.mesh.clone();
            let mut shards = Vec::with_capacity(t.shards.len());
            for p in t.shards {
                shards.push(B::bool_argwhere(p, out_dtype).await);
            }
            crate::ops::dispatch::assemble::<B, IntKind>(mesh, crate::spec::placement::Placement::Replicate, shards)
        }
    }
}
