//! Int ops of `Hybrid<B>` (labels, indices, argmax results): the same placement rules as floats.

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::IntTensorOps;
use burn::tensor::{BoolDType, Distribution, FloatDType, IntDType, Scalar, Shape, Slice, TensorData};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::collectives::{broadcast, redistribute};
use crate::kind::{BoolKind, FloatKind, IntKind};
use crate::mesh::MeshDevice;
use crate::ops::float::{align_indexed, replicate_with, to_mesh, whole};
use crate::placement::Placement;
use crate::rules::{binary, fallback, gather_for, linear, reduce_dim, resolve_partial, unary, Linearity, ShardedReduce};
use crate::shape_rules;

type F<B> = HybridFloat<B>;
type I<B> = HybridInt<B>;
type Bo<B> = HybridBool<B>;

macro_rules! unary_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(tensor: I<B>) -> I<B> {
            unary(tensor, |p| B::$name(p))
        }
    )*};
}

macro_rules! scalar_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(lhs: I<B>, rhs: Scalar) -> I<B> {
            unary(lhs, |p| B::$name(p, rhs))
        }
    )*};
}

macro_rules! binary_ops {
    ($($name:ident : $lin:expr),* $(,)?) => {$(
        fn $name(lhs: I<B>, rhs: I<B>) -> I<B> {
            binary::<B, IntKind, IntKind, IntKind>(stringify!($name), lhs, rhs, $lin, |a, b| B::$name(a, b))
        }
    )*};
}

macro_rules! cmp_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(lhs: I<B>, rhs: I<B>, out_dtype: BoolDType) -> Bo<B> {
            binary::<B, IntKind, IntKind, BoolKind>(stringify!($name), lhs, rhs, Linearity::None, |a, b| B::$name(a, b, out_dtype))
        }
    )*};
}

macro_rules! cmp_elem_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(lhs: I<B>, rhs: Scalar, out_dtype: BoolDType) -> Bo<B> {
            unary::<B, IntKind, BoolKind>(lhs, |p| B::$name(p, rhs, out_dtype))
        }
    )*};
}

macro_rules! along_dim_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(tensor: I<B>, dim: usize) -> I<B> {
            reduce_dim::<B, IntKind, IntKind>(stringify!($name), tensor, dim, ShardedReduce::Gather, |p| B::$name(p, dim))
        }
    )*};
}

impl<B: Backend> IntTensorOps<Self> for Hybrid<B> {
    fn int_empty(shape: Shape, device: &MeshDevice<B::Device>, dtype: IntDType) -> I<B> {
        replicate_with::<B, IntKind>(device, |d| B::int_empty(shape.clone(), d, dtype))
    }

    fn int_zeros(shape: Shape, device: &MeshDevice<B::Device>, dtype: IntDType) -> I<B> {
        replicate_with::<B, IntKind>(device, |d| B::int_zeros(shape.clone(), d, dtype))
    }

    fn int_ones(shape: Shape, device: &MeshDevice<B::Device>, dtype: IntDType) -> I<B> {
        replicate_with::<B, IntKind>(device, |d| B::int_ones(shape.clone(), d, dtype))
    }

    async fn int_into_data(tensor: I<B>) -> Result<TensorData, ExecutionError> {
        B::int_into_data(whole(tensor)).await
    }

    fn int_from_data(data: TensorData, device: &MeshDevice<B::Device>) -> I<B> {
        replicate_with::<B, IntKind>(device, |d| B::int_from_data(data.clone(), d))
    }

    fn int_device(tensor: &I<B>) -> MeshDevice<B::Device> {
        tensor.mesh.clone()
    }

    fn int_to_device(tensor: I<B>, device: &MeshDevice<B::Device>) -> I<B> {
        to_mesh(tensor, device)
    }

    fn int_reshape(tensor: I<B>, shape: Shape) -> I<B> {
        shape_rules::reshape(tensor, shape)
    }

    fn int_slice(tensor: I<B>, slices: &[Slice]) -> I<B> {
        shape_rules::slice(tensor, slices)
    }

    fn int_slice_assign(tensor: I<B>, slices: &[Slice], value: I<B>) -> I<B> {
        let (tensor, value) = (resolve_partial(gather_for("int_slice_assign", tensor)), resolve_partial(gather_for("int_slice_assign", value)));
        let mesh = tensor.mesh.clone();
        let shards = tensor.shards.into_iter().zip(value.shards).map(|(t, v)| B::int_slice_assign(t, slices, v)).collect();
        crate::rules::assemble(mesh, Placement::Replicate, shards)
    }

    fn int_into_float(tensor: I<B>, out_dtype: FloatDType) -> F<B> {
        linear::<B, IntKind, FloatKind>(tensor, |p| B::int_into_float(p, out_dtype))
    }

    fn int_mask_where(tensor: I<B>, mask: Bo<B>, value: I<B>) -> I<B> {
        let (tensor, mask, value, placement) = crate::rules::align3("int_mask_where", tensor, mask, value);
        let mesh = tensor.mesh.clone();
        let shards = tensor
            .shards
            .into_iter()
            .zip(mask.shards)
            .zip(value.shards)
            .map(|((t, m), v)| B::int_mask_where(t, m, v))
            .collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn int_mask_fill(tensor: I<B>, mask: Bo<B>, value: Scalar) -> I<B> {
        binary::<B, IntKind, BoolKind, IntKind>("int_mask_fill", tensor, mask, Linearity::None, |t, m| B::int_mask_fill(t, m, value))
    }

    fn int_gather(dim: usize, tensor: I<B>, indices: I<B>) -> I<B> {
        let (tensor, indices, placement) = align_indexed("int_gather", tensor, indices, dim);
        let mesh = tensor.mesh.clone();
        let shards = tensor.shards.into_iter().zip(indices.shards).map(|(t, i)| B::int_gather(dim, t, i)).collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn int_scatter_add(dim: usize, tensor: I<B>, indices: I<B>, value: I<B>) -> I<B> {
        let (tensor, indices, placement) = align_indexed("int_scatter_add", tensor, indices, dim);
        let value = redistribute(resolve_partial(value), placement);
        let mesh = tensor.mesh.clone();
        let shards = tensor
            .shards
            .into_iter()
            .zip(indices.shards)
            .zip(value.shards)
            .map(|((t, i), v)| B::int_scatter_add(dim, t, i, v))
            .collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn int_select(tensor: I<B>, dim: usize, indices: I<B>) -> I<B> {
        let indices = gather_for("int_select", indices);
        let tensor = match tensor.placement {
            Placement::Shard(d) if d == dim => gather_for("int_select", tensor),
            _ => resolve_partial(tensor),
        };
        let mesh = tensor.mesh.clone();
        let placement = tensor.placement;
        let shards = tensor.shards.into_iter().zip(indices.shards).map(|(t, i)| B::int_select(t, dim, i)).collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn int_select_add(tensor: I<B>, dim: usize, indices: I<B>, value: I<B>) -> I<B> {
        let (tensor, indices, value) = (gather_for("int_select_add", tensor), gather_for("int_select_add", indices), gather_for("int_select_add", value));
        let (tensor, value) = (resolve_partial(tensor), resolve_partial(value));
        let mesh = tensor.mesh.clone();
        let shards = tensor
            .shards
            .into_iter()
            .zip(indices.shards)
            .zip(value.shards)
            .map(|((t, i), v)| B::int_select_add(t, dim, i, v))
            .collect();
        crate::rules::assemble(mesh, Placement::Replicate, shards)
    }

    cmp_ops!(int_equal, int_greater, int_greater_equal, int_lower, int_lower_equal);
    cmp_elem_ops!(int_equal_elem, int_greater_elem, int_greater_equal_elem, int_lower_elem, int_lower_equal_elem);

    binary_ops!(
        int_add: Linearity::Additive,
        int_sub: Linearity::Additive,
        int_mul: Linearity::Scaling,
        int_div: Linearity::None,
        int_remainder: Linearity::None,
        bitwise_and: Linearity::None,
        bitwise_or: Linearity::None,
        bitwise_xor: Linearity::None,
        bitwise_left_shift: Linearity::None,
        bitwise_right_shift: Linearity::None,
    );

    scalar_ops!(
        int_add_scalar, int_sub_scalar, int_div_scalar, int_remainder_scalar, bitwise_and_scalar, bitwise_or_scalar,
        bitwise_xor_scalar, bitwise_left_shift_scalar, bitwise_right_shift_scalar,
    );

    fn int_mul_scalar(lhs: I<B>, rhs: Scalar) -> I<B> {
        linear(lhs, |p| B::int_mul_scalar(p, rhs))
    }

    fn int_matmul(lhs: I<B>, rhs: I<B>) -> I<B> {
        let (lhs, rhs) = (resolve_partial(gather_for("int_matmul", lhs)), resolve_partial(gather_for("int_matmul", rhs)));
        binary::<B, IntKind, IntKind, IntKind>("int_matmul", lhs, rhs, Linearity::None, |a, b| B::int_matmul(a, b))
    }

    fn int_sum(tensor: I<B>) -> I<B> {
        let placement = if tensor.placement == Placement::Replicate { Placement::Replicate } else { Placement::Partial };
        let mesh = tensor.mesh.clone();
        let shards = tensor.shards.into_iter().map(|p| B::int_sum(p)).collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn int_sum_dim(tensor: I<B>, dim: usize) -> I<B> {
        reduce_dim::<B, IntKind, IntKind>("int_sum_dim", tensor, dim, ShardedReduce::Sum, |p| B::int_sum_dim(p, dim))
    }

    fn int_prod(tensor: I<B>) -> I<B> {
        fallback("int_prod", tensor, |p| B::int_prod(p))
    }

    fn int_prod_dim(tensor: I<B>, dim: usize) -> I<B> {
        reduce_dim::<B, IntKind, IntKind>("int_prod_dim", tensor, dim, ShardedReduce::Gather, |p| B::int_prod_dim(p, dim))
    }

    fn int_mean_dim(tensor: I<B>, dim: usize) -> I<B> {
        reduce_dim::<B, IntKind, IntKind>("int_mean_dim", tensor, dim, ShardedReduce::Gather, |p| B::int_mean_dim(p, dim))
    }

    fn int_max_dim(tensor: I<B>, dim: usize) -> I<B> {
        reduce_dim::<B, IntKind, IntKind>("int_max_dim", tensor, dim, ShardedReduce::Max, |p| B::int_max_dim(p, dim))
    }

    along_dim_ops!(int_cumsum, int_cumprod, int_cummin, int_cummax);

    fn int_argmax(tensor: I<B>, dim: usize) -> I<B> {
        reduce_dim::<B, IntKind, IntKind>("int_argmax", tensor, dim, ShardedReduce::Gather, |p| B::int_argmax(p, dim))
    }

    fn int_argtopk(tensor: I<B>, dim: usize, k: usize) -> I<B> {
        reduce_dim::<B, IntKind, IntKind>("int_argtopk", tensor, dim, ShardedReduce::Gather, |p| B::int_argtopk(p, dim, k))
    }

    fn int_argmin(tensor: I<B>, dim: usize) -> I<B> {
        reduce_dim::<B, IntKind, IntKind>("int_argmin", tensor, dim, ShardedReduce::Gather, |p| B::int_argmin(p, dim))
    }

    unary_ops!(int_abs, bitwise_not);

    fn int_swap_dims(tensor: I<B>, dim1: usize, dim2: usize) -> I<B> {
        let axes = shape_rules::swap_axes(tensor.shape.num_dims(), dim1, dim2);
        shape_rules::permute(tensor, &axes, |p| B::int_swap_dims(p, dim1, dim2))
    }

    fn int_permute(tensor: I<B>, axes: &[usize]) -> I<B> {
        shape_rules::permute(tensor, axes, |p| B::int_permute(p, axes))
    }

    fn int_flip(tensor: I<B>, axes: &[usize]) -> I<B> {
        match tensor.placement {
            Placement::Shard(d) if axes.contains(&d) => fallback("int_flip", tensor, |p| B::int_flip(p, axes)),
            _ => linear(tensor, |p| B::int_flip(p, axes)),
        }
    }

    fn int_random(shape: Shape, distribution: Distribution, device: &MeshDevice<B::Device>, dtype: IntDType) -> I<B> {
        let drawn = B::int_random(shape, distribution, device.rank_device(0), dtype);
        broadcast::<B, IntKind>(device, drawn, 0)
    }

    fn int_expand(tensor: I<B>, shape: Shape) -> I<B> {
        shape_rules::expand(tensor, shape, |p, s| B::int_expand(p, s))
    }

    fn int_cast(tensor: I<B>, dtype: IntDType) -> I<B> {
        unary(tensor, |p| B::int_cast(p, dtype))
    }

    fn int_unfold(tensor: I<B>, dim: usize, size: usize, step: usize) -> I<B> {
        fallback("int_unfold", tensor, |p| B::int_unfold(p, dim, size, step))
    }

    fn int_cat(tensors: Vec<I<B>>, dim: usize) -> I<B> {
        shape_rules::cat(tensors, dim)
    }
}

