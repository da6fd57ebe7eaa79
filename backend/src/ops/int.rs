//! Int ops of `Hybrid<B>` (labels, indices, argmax results): the same placement rules as floats.

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::IntTensorOps;
use burn::tensor::{BoolDType, Distribution, FloatDType, IndexingUpdateOp, IntDType, Scalar, Shape, Slice, TensorData};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::mesh::MeshDevice;
use crate::ops::common;
use crate::ops::dispatch::{drawn_on_rank0, replicate_with, to_mesh, whole};
use crate::ops::macros::{along_dim_ops, binary_ops, cmp_elem_ops, cmp_ops, scalar_ops, unary_ops};
use crate::rules::{Linearity, ShardedReduce};
use crate::tensor::kind::{BoolKind, FloatKind, IntKind};

type F<B> = HybridFloat<B>;
type I<B> = HybridInt<B>;
type Bo<B> = HybridBool<B>;

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
        common::reshape(tensor, shape)
    }

    fn int_slice(tensor: I<B>, slices: &[Slice]) -> I<B> {
        common::slice(tensor, slices)
    }

    fn int_slice_assign(tensor: I<B>, slices: &[Slice], value: I<B>) -> I<B> {
        common::slice_assign("int_slice_assign", tensor, slices, value, |t, s, v| B::int_slice_assign(t, s, v))
    }

    fn int_into_float(tensor: I<B>, out_dtype: FloatDType) -> F<B> {
        common::unary::<B, IntKind, FloatKind>("int_into_float", tensor, Linearity::Linear, |p| {
            B::int_into_float(p, out_dtype)
        })
    }

    fn int_mask_where(tensor: I<B>, mask: Bo<B>, value: I<B>) -> I<B> {
        common::mask_where("int_mask_where", tensor, mask, value, |t, m, v| B::int_mask_where(t, m, v))
    }

    fn int_mask_fill(tensor: I<B>, mask: Bo<B>, value: Scalar) -> I<B> {
        common::binary::<B, IntKind, BoolKind, IntKind>("int_mask_fill", tensor, mask, Linearity::None, |t, m| {
            B::int_mask_fill(t, m, value)
        })
    }

    fn int_gather(dim: usize, tensor: I<B>, indices: I<B>) -> I<B> {
        common::gather("int_gather", dim, tensor, indices, |t, i| B::int_gather(dim, t, i))
    }

    fn int_scatter_add(dim: usize, tensor: I<B>, indices: I<B>, value: I<B>) -> I<B> {
        common::scatter("int_scatter_add", dim, tensor, indices, value, |t, i, v| B::int_scatter_add(dim, t, i, v))
    }

    fn int_select(tensor: I<B>, dim: usize, indices: I<B>) -> I<B> {
        common::select("int_select", dim, tensor, indices, |t, i| B::int_select(t, dim, i))
    }

    fn int_select_add(tensor: I<B>, dim: usize, indices: I<B>, value: I<B>) -> I<B> {
        common::select_add("int_select_add", dim, tensor, indices, value, |t, i, v| B::int_select_add(t, dim, i, v))
    }

    cmp_ops!(IntKind; int_equal, int_greater, int_greater_equal, int_lower, int_lower_equal);
    cmp_elem_ops!(IntKind; int_equal_elem, int_greater_elem, int_greater_equal_elem, int_lower_elem, int_lower_equal_elem);

    binary_ops!(IntKind;
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

    scalar_ops!(IntKind;
        int_add_scalar, int_sub_scalar, int_div_scalar, int_remainder_scalar, bitwise_and_scalar, bitwise_or_scalar,
        bitwise_xor_scalar, bitwise_left_shift_scalar, bitwise_right_shift_scalar,
    );

    fn int_mul_scalar(lhs: I<B>, rhs: Scalar) -> I<B> {
        common::unary("int_mul_scalar", lhs, Linearity::Linear, |p| B::int_mul_scalar(p, rhs))
    }

    fn int_matmul(lhs: I<B>, rhs: I<B>) -> I<B> {
        common::matmul("int_matmul", lhs, rhs, |a, b| B::int_matmul(a, b))
    }

    fn int_sum(tensor: I<B>) -> I<B> {
        common::sum_all("int_sum", tensor, |p| B::int_sum(p))
    }

    fn int_sum_dim(tensor: I<B>, dim: usize) -> I<B> {
        common::reduce_dim::<B, IntKind, IntKind>("int_sum_dim", tensor, dim, ShardedReduce::Sum, |p| {
            B::int_sum_dim(p, dim)
        })
    }

    fn int_prod(tensor: I<B>) -> I<B> {
        common::gathered("int_prod", tensor, |p| B::int_prod(p))
    }

    fn int_prod_dim(tensor: I<B>, dim: usize) -> I<B> {
        common::along_dim::<B, IntKind, IntKind>("int_prod_dim", tensor, dim, |p| B::int_prod_dim(p, dim))
    }

    fn int_mean_dim(tensor: I<B>, dim: usize) -> I<B> {
        common::mean_dim(
            "int_mean_dim",
            tensor,
            dim,
            |p| B::int_sum_dim(p, dim),
            |p| B::int_mean_dim(p, dim),
            |sums, len| {
                common::unary("int_div_scalar", sums, Linearity::None, |p| {
                    B::int_div_scalar(p, Scalar::Int(len as i64))
                })
            },
        )
    }

    fn int_max_dim(tensor: I<B>, dim: usize) -> I<B> {
        common::reduce_dim::<B, IntKind, IntKind>("int_max_dim", tensor, dim, ShardedReduce::Max, |p| {
            B::int_max_dim(p, dim)
        })
    }

    along_dim_ops!(IntKind; int_cumsum, int_cumprod, int_cummin, int_cummax);

    fn int_argmax(tensor: I<B>, dim: usize) -> I<B> {
        common::arg_extreme("int_argmax", tensor, dim, |p| B::int_max_dim(p, dim), |p| B::int_argmax(p, dim))
    }

    fn int_argtopk(tensor: I<B>, dim: usize, k: usize) -> I<B> {
        common::along_dim::<B, IntKind, IntKind>("int_argtopk", tensor, dim, |p| B::int_argtopk(p, dim, k))
    }

    fn int_argmin(tensor: I<B>, dim: usize) -> I<B> {
        common::arg_extreme("int_argmin", tensor, dim, |p| B::int_min_dim(p, dim), |p| B::int_argmin(p, dim))
    }

    unary_ops!(IntKind; int_abs, bitwise_not);

    fn int_swap_dims(tensor: I<B>, dim1: usize, dim2: usize) -> I<B> {
        let axes = common::swap_axes(tensor.shape.num_dims(), dim1, dim2);
        common::permute(tensor, &axes, |p| B::int_swap_dims(p, dim1, dim2))
    }

    fn int_permute(tensor: I<B>, axes: &[usize]) -> I<B> {
        common::permute(tensor, axes, |p| B::int_permute(p, axes))
    }

    fn int_flip(tensor: I<B>, axes: &[usize]) -> I<B> {
        common::flip("int_flip", tensor, axes, |p| B::int_flip(p, axes))
    }

    fn int_random(shape: Shape, distribution: Distribution, device: &MeshDevice<B::Device>, dtype: IntDType) -> I<B> {
        drawn_on_rank0::<B, IntKind>(device, |d| B::int_random(shape, distribution, d, dtype))
    }

    fn int_expand(tensor: I<B>, shape: Shape) -> I<B> {
        common::expand(tensor, shape, |p, s| B::int_expand(p, s))
    }

    fn int_cast(tensor: I<B>, dtype: IntDType) -> I<B> {
        common::unary("int_cast", tensor, Linearity::Linear, |p| B::int_cast(p, dtype))
    }

    fn int_unfold(tensor: I<B>, dim: usize, size: usize, step: usize) -> I<B> {
        common::unfold("int_unfold", tensor, dim, |p| B::int_unfold(p, dim, size, step))
    }

    fn int_cat(tensors: Vec<I<B>>, dim: usize) -> I<B> {
        common::cat(tensors, dim)
    }

    // Ops Burn gives a default body: each runs the inner backend's own op, by a rule where one
    // is natural, gathered otherwise (see float.rs).

    fn int_gather_nd(data: I<B>, indices: I<B>) -> I<B> {
        common::gathered2::<B, IntKind, IntKind, IntKind>("int_gather_nd", data, indices, |d, i| B::int_gather_nd(d, i))
    }

    fn int_scatter_nd(data: I<B>, indices: I<B>, values: I<B>, reduction: IndexingUpdateOp) -> I<B> {
        common::gathered3::<B, IntKind, IntKind, IntKind, IntKind>(
            "int_scatter_nd",
            data,
            indices,
            values,
            |d, i, v| B::int_scatter_nd(d, i, v, reduction),
        )
    }

    fn int_repeat_dim(tensor: I<B>, dim: usize, times: usize) -> I<B> {
        common::along_dim::<B, IntKind, IntKind>("int_repeat_dim", tensor, dim, |p| B::int_repeat_dim(p, dim, times))
    }

    cmp_ops!(IntKind; int_not_equal);
    cmp_elem_ops!(IntKind; int_not_equal_elem);

    fn int_powi(lhs: I<B>, rhs: I<B>) -> I<B> {
        common::binary::<B, IntKind, IntKind, IntKind>("int_powi", lhs, rhs, Linearity::None, |a, b| B::int_powi(a, b))
    }

    scalar_ops!(IntKind; int_powi_scalar, int_powi_scalar_impl, int_clamp_min, int_clamp_max);

    fn int_clamp(tensor: I<B>, min: Scalar, max: Scalar) -> I<B> {
        common::unary::<B, IntKind, IntKind>("int_clamp", tensor, Linearity::None, |p| B::int_clamp(p, min, max))
    }

    fn int_neg(tensor: I<B>) -> I<B> {
        common::unary::<B, IntKind, IntKind>("int_neg", tensor, Linearity::Linear, |p| B::int_neg(p))
    }

    fn int_full(shape: Shape, fill_value: Scalar, device: &MeshDevice<B::Device>, dtype: IntDType) -> I<B> {
        replicate_with::<B, IntKind>(device, |d| B::int_full(shape.clone(), fill_value, d, dtype))
    }

    fn int_arange(range: std::ops::Range<i64>, device: &MeshDevice<B::Device>, dtype: IntDType) -> I<B> {
        replicate_with::<B, IntKind>(device, |d| B::int_arange(range.clone(), d, dtype))
    }

    fn int_arange_step(
        range: std::ops::Range<i64>,
        step: usize,
        device: &MeshDevice<B::Device>,
        dtype: IntDType,
    ) -> I<B> {
        replicate_with::<B, IntKind>(device, |d| B::int_arange_step(range.clone(), step, d, dtype))
    }

    fn int_mean(tensor: I<B>) -> I<B> {
        common::gathered::<B, IntKind, IntKind>("int_mean", tensor, |p| B::int_mean(p))
    }

    fn int_max(tensor: I<B>) -> I<B> {
        common::max_all("int_max", tensor, |p| B::int_max(p))
    }

    fn int_max_abs(tensor: I<B>) -> I<B> {
        common::max_all("int_max_abs", tensor, |p| B::int_max_abs(p))
    }

    fn int_max_abs_dim(tensor: I<B>, dim: usize) -> I<B> {
        common::reduce_dim::<B, IntKind, IntKind>("int_max_abs_dim", tensor, dim, ShardedReduce::Max, |p| {
            B::int_max_abs_dim(p, dim)
        })
    }

    fn int_min(tensor: I<B>) -> I<B> {
        common::gathered::<B, IntKind, IntKind>("int_min", tensor, |p| B::int_min(p))
    }

    fn int_min_dim(tensor: I<B>, dim: usize) -> I<B> {
        common::along_dim::<B, IntKind, IntKind>("int_min_dim", tensor, dim, |p| B::int_min_dim(p, dim))
    }

    fn int_max_dim_with_indices(tensor: I<B>, dim: usize) -> (I<B>, I<B>) {
        common::along_dim_pair::<B, IntKind, IntKind, IntKind>("int_max_dim_with_indices", tensor, dim, |p| {
            B::int_max_dim_with_indices(p, dim)
        })
    }

    fn int_min_dim_with_indices(tensor: I<B>, dim: usize) -> (I<B>, I<B>) {
        common::along_dim_pair::<B, IntKind, IntKind, IntKind>("int_min_dim_with_indices", tensor, dim, |p| {
            B::int_min_dim_with_indices(p, dim)
        })
    }

    fn int_transpose(tensor: I<B>) -> I<B> {
        let n = tensor.shape.num_dims();
        let axes = common::swap_axes(n, n.saturating_sub(2), n.saturating_sub(1));
        common::permute(tensor, &axes, |p| B::int_transpose(p))
    }

    fn int_any(tensor: I<B>, out_dtype: BoolDType) -> Bo<B> {
        common::gathered::<B, IntKind, BoolKind>("int_any", tensor, |p| B::int_any(p, out_dtype))
    }

    fn int_any_dim(tensor: I<B>, dim: usize, out_dtype: BoolDType) -> Bo<B> {
        common::along_dim::<B, IntKind, BoolKind>("int_any_dim", tensor, dim, |p| B::int_any_dim(p, dim, out_dtype))
    }

    fn int_all(tensor: I<B>, out_dtype: BoolDType) -> Bo<B> {
        common::gathered::<B, IntKind, BoolKind>("int_all", tensor, |p| B::int_all(p, out_dtype))
    }

    fn int_all_dim(tensor: I<B>, dim: usize, out_dtype: BoolDType) -> Bo<B> {
        common::along_dim::<B, IntKind, BoolKind>("int_all_dim", tensor, dim, |p| B::int_all_dim(p, dim, out_dtype))
    }

    unary_ops!(IntKind; int_sign);

    fn int_topk(tensor: I<B>, dim: usize, k: usize) -> I<B> {
        common::along_dim::<B, IntKind, IntKind>("int_topk", tensor, dim, |p| B::int_topk(p, dim, k))
    }

    fn int_sort(tensor: I<B>, dim: usize, descending: bool) -> I<B> {
        common::along_dim::<B, IntKind, IntKind>("int_sort", tensor, dim, |p| B::int_sort(p, dim, descending))
    }

    fn int_sort_with_indices(tensor: I<B>, dim: usize, descending: bool) -> (I<B>, I<B>) {
        common::along_dim_pair::<B, IntKind, IntKind, IntKind>("int_sort_with_indices", tensor, dim, |p| {
            B::int_sort_with_indices(p, dim, descending)
        })
    }

    fn int_argsort(tensor: I<B>, dim: usize, descending: bool) -> I<B> {
        common::along_dim::<B, IntKind, IntKind>("int_argsort", tensor, dim, |p| B::int_argsort(p, dim, descending))
    }
}
