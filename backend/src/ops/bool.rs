//! Bool ops of `Hybrid<B>` (masks): the same placement rules as floats.

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::BoolTensorOps;
use burn::tensor::{BoolDType, FloatDType, IntDType, Scalar, Shape, Slice, TensorData};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::kind::{BoolKind, FloatKind, IntKind};
use crate::mesh::MeshDevice;
use crate::ops::float::{replicate_with, to_mesh, whole};
use crate::placement::Placement;
use crate::rules::{binary, fallback, gather_for, unary, Linearity};
use crate::shape_rules;

type F<B> = HybridFloat<B>;
type I<B> = HybridInt<B>;
type Bo<B> = HybridBool<B>;

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
        unary::<B, BoolKind, IntKind>(tensor, |p| B::bool_into_int(p, out_dtype))
    }

    fn bool_into_float(tensor: Bo<B>, out_dtype: FloatDType) -> F<B> {
        unary::<B, BoolKind, FloatKind>(tensor, |p| B::bool_into_float(p, out_dtype))
    }

    fn bool_device(tensor: &Bo<B>) -> MeshDevice<B::Device> {
        tensor.mesh.clone()
    }

    fn bool_to_device(tensor: Bo<B>, device: &MeshDevice<B::Device>) -> Bo<B> {
        to_mesh(tensor, device)
    }

    fn bool_reshape(tensor: Bo<B>, shape: Shape) -> Bo<B> {
        shape_rules::reshape(tensor, shape)
    }

    fn bool_slice(tensor: Bo<B>, slices: &[Slice]) -> Bo<B> {
        shape_rules::slice(tensor, slices)
    }

    fn bool_slice_assign(tensor: Bo<B>, slices: &[Slice], value: Bo<B>) -> Bo<B> {
        let (tensor, value) = (gather_for("bool_slice_assign", tensor), gather_for("bool_slice_assign", value));
        let mesh = tensor.mesh.clone();
        let shards =
            tensor.shards.into_iter().zip(value.shards).map(|(t, v)| B::bool_slice_assign(t, slices, v)).collect();
        crate::rules::assemble(mesh, Placement::Replicate, shards)
    }

    fn bool_mask_where(tensor: Bo<B>, mask: Bo<B>, value: Bo<B>) -> Bo<B> {
        crate::rules::mask_where("bool_mask_where", tensor, mask, value, |t, m, v| B::bool_mask_where(t, m, v))
    }

    fn bool_mask_fill(tensor: Bo<B>, mask: Bo<B>, value: Scalar) -> Bo<B> {
        binary::<B, BoolKind, BoolKind, BoolKind>("bool_mask_fill", tensor, mask, Linearity::None, |t, m| {
            B::bool_mask_fill(t, m, value)
        })
    }

    fn bool_gather(dim: usize, tensor: Bo<B>, indices: I<B>) -> Bo<B> {
        crate::rules::gather_along("bool_gather", dim, tensor, indices, |t, i| B::bool_gather(dim, t, i))
    }

    fn bool_scatter_or(dim: usize, tensor: Bo<B>, indices: I<B>, value: Bo<B>) -> Bo<B> {
        crate::rules::gathered3("bool_scatter_or", tensor, indices, value, |t, i, v| B::bool_scatter_or(dim, t, i, v))
    }

    fn bool_select(tensor: Bo<B>, dim: usize, indices: I<B>) -> Bo<B> {
        crate::rules::select_along("bool_select", dim, tensor, indices, |t, i| B::bool_select(t, dim, i))
    }

    fn bool_select_or(tensor: Bo<B>, dim: usize, indices: I<B>, value: Bo<B>) -> Bo<B> {
        crate::rules::gathered3("bool_select_or", tensor, indices, value, |t, i, v| B::bool_select_or(t, dim, i, v))
    }

    fn bool_equal(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary::<B, BoolKind, BoolKind, BoolKind>("bool_equal", lhs, rhs, Linearity::None, |a, b| B::bool_equal(a, b))
    }

    fn bool_equal_elem(lhs: Bo<B>, rhs: Scalar) -> Bo<B> {
        unary(lhs, |p| B::bool_equal_elem(p, rhs))
    }

    fn bool_not(tensor: Bo<B>) -> Bo<B> {
        unary(tensor, |p| B::bool_not(p))
    }

    fn bool_and(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary::<B, BoolKind, BoolKind, BoolKind>("bool_and", lhs, rhs, Linearity::None, |a, b| B::bool_and(a, b))
    }

    fn bool_or(lhs: Bo<B>, rhs: Bo<B>) -> Bo<B> {
        binary::<B, BoolKind, BoolKind, BoolKind>("bool_or", lhs, rhs, Linearity::None, |a, b| B::bool_or(a, b))
    }

    fn bool_swap_dims(tensor: Bo<B>, dim1: usize, dim2: usize) -> Bo<B> {
        let axes = shape_rules::swap_axes(tensor.shape.num_dims(), dim1, dim2);
        shape_rules::permute(tensor, &axes, |p| B::bool_swap_dims(p, dim1, dim2))
    }

    fn bool_permute(tensor: Bo<B>, axes: &[usize]) -> Bo<B> {
        shape_rules::permute(tensor, axes, |p| B::bool_permute(p, axes))
    }

    fn bool_flip(tensor: Bo<B>, axes: &[usize]) -> Bo<B> {
        match tensor.placement {
            Placement::Shard(d) if axes.contains(&d) => fallback("bool_flip", tensor, |p| B::bool_flip(p, axes)),
            _ => unary(tensor, |p| B::bool_flip(p, axes)),
        }
    }

    fn bool_expand(tensor: Bo<B>, shape: Shape) -> Bo<B> {
        shape_rules::expand(tensor, shape, |p, s| B::bool_expand(p, s))
    }

    fn bool_unfold(tensor: Bo<B>, dim: usize, size: usize, step: usize) -> Bo<B> {
        fallback("bool_unfold", tensor, |p| B::bool_unfold(p, dim, size, step))
    }

    fn bool_cat(tensors: Vec<Bo<B>>, dim: usize) -> Bo<B> {
        shape_rules::cat(tensors, dim)
    }
}
