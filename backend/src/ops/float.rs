//! Float ops of `Hybrid<B>`: each picks a placement rule (see `backend/README.md`).

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{Distribution, FloatDType, IntDType, Scalar, Shape, Slice, TensorData};

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

/// A float op linear in its one input (a pending sum stays one).
fn linear<B: Backend>(
    op: &str,
    t: F<B>,
    f: impl Fn(B::FloatTensorPrimitive) -> B::FloatTensorPrimitive + Sync,
) -> F<B> {
    common::unary::<B, FloatKind, FloatKind>(op, t, Linearity::Linear, f)
}

impl<B: Backend> FloatTensorOps<Self> for Hybrid<B> {
    fn float_from_data(data: TensorData, device: &MeshDevice<B::Device>) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_from_data(data.clone(), d))
    }

    /// Replicated random tensors are drawn once on rank 0 and broadcast, so replicas agree.
    fn float_random(
        shape: Shape,
        distribution: Distribution,
        device: &MeshDevice<B::Device>,
        dtype: FloatDType,
    ) -> F<B> {
        drawn_on_rank0::<B, FloatKind>(device, |d| B::float_random(shape, distribution, d, dtype))
    }

    async fn float_into_data(tensor: F<B>) -> Result<TensorData, ExecutionError> {
        B::float_into_data(whole(tensor)).await
    }

    fn float_device(tensor: &F<B>) -> MeshDevice<B::Device> {
        tensor.mesh.clone()
    }

    fn float_to_device(tensor: F<B>, device: &MeshDevice<B::Device>) -> F<B> {
        to_mesh(tensor, device)
    }

    fn float_into_int(tensor: F<B>, out_dtype: IntDType) -> I<B> {
        common::unary::<B, FloatKind, IntKind>("float_into_int", tensor, Linearity::None, |p| {
            B::float_into_int(p, out_dtype)
        })
    }

    fn float_empty(shape: Shape, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_empty(shape.clone(), d, dtype))
    }

    fn float_zeros(shape: Shape, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_zeros(shape.clone(), d, dtype))
    }

    fn float_ones(shape: Shape, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_ones(shape.clone(), d, dtype))
    }

    fn float_full(shape: Shape, fill_value: Scalar, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_full(shape.clone(), fill_value, d, dtype))
    }

    binary_ops!(FloatKind;
        float_add: Linearity::Additive,
        float_sub: Linearity::Additive,
        float_mul: Linearity::Scaling,
        float_div: Linearity::LeftScaling,
        float_remainder: Linearity::None,
        float_powf: Linearity::None,
        float_atan2: Linearity::None,
    );

    scalar_ops!(FloatKind; float_add_scalar, float_sub_scalar, float_remainder_scalar, float_powf_scalar_impl);

    fn float_mul_scalar(lhs: F<B>, rhs: Scalar) -> F<B> {
        linear("float_mul_scalar", lhs, |p| B::float_mul_scalar(p, rhs))
    }

    fn float_div_scalar(lhs: F<B>, rhs: Scalar) -> F<B> {
        linear("float_div_scalar", lhs, |p| B::float_div_scalar(p, rhs))
    }

    fn float_neg(tensor: F<B>) -> F<B> {
        linear("float_neg", tensor, |p| B::float_neg(p))
    }

    fn float_matmul(lhs: F<B>, rhs: F<B>) -> F<B> {
        common::matmul("float_matmul", lhs, rhs, |a, b| B::float_matmul(a, b))
    }

    fn float_cross(lhs: F<B>, rhs: F<B>, dim: usize) -> F<B> {
        let rule =
            |sp: &[crate::rules::Spec], cx: &crate::rules::Context| crate::rules::elementwise_except(dim, sp, cx);
        crate::ops::dispatch::run2("float_cross", rule, lhs, rhs, |_, a, b| B::float_cross(a, b, dim))
    }

    unary_ops!(FloatKind;
        float_recip, float_exp, float_log, float_log1p, float_sqrt, float_abs, float_cos, float_sin, float_tan,
        float_cosh, float_sinh, float_tanh, float_acos, float_acosh, float_asin, float_asinh, float_atan, float_atanh,
        float_round, float_floor, float_ceil, float_trunc, float_erf,
    );

    fn float_cast(tensor: F<B>, dtype: FloatDType) -> F<B> {
        linear("float_cast", tensor, |p| B::float_cast(p, dtype))
    }

    fn float_swap_dims(tensor: F<B>, dim1: usize, dim2: usize) -> F<B> {
        let axes = common::swap_axes(tensor.shape.num_dims(), dim1, dim2);
        common::permute(tensor, &axes, |p| B::float_swap_dims(p, dim1, dim2))
    }

    fn float_permute(tensor: F<B>, axes: &[usize]) -> F<B> {
        common::permute(tensor, axes, |p| B::float_permute(p, axes))
    }

    fn float_flip(tensor: F<B>, axes: &[usize]) -> F<B> {
        common::flip("float_flip", tensor, axes, |p| B::float_flip(p, axes))
    }

    fn float_reshape(tensor: F<B>, shape: Shape) -> F<B> {
        common::reshape(tensor, shape)
    }

    fn float_gather(dim: usize, tensor: F<B>, indices: I<B>) -> F<B> {
        common::gather("float_gather", dim, tensor, indices, |t, i| B::float_gather(dim, t, i))
    }

    fn float_scatter_add(dim: usize, tensor: F<B>, indices: I<B>, value: F<B>) -> F<B> {
        common::scatter("float_scatter_add", dim, tensor, indices, value, |t, i, v| B::float_scatter_add(dim, t, i, v))
    }

    fn float_select(tensor: F<B>, dim: usize, indices: I<B>) -> F<B> {
        common::select("float_select", dim, tensor, indices, |t, i| B::float_select(t, dim, i))
    }

    fn float_select_add(tensor: F<B>, dim: usize, indices: I<B>, value: F<B>) -> F<B> {
        common::select_add("float_select_add", dim, tensor, indices, value, |t, i, v| B::float_select_add(t, dim, i, v))
    }

    fn float_slice(tensor: F<B>, slices: &[Slice]) -> F<B> {
        common::slice(tensor, slices)
    }

    fn float_slice_assign(tensor: F<B>, slices: &[Slice], value: F<B>) -> F<B> {
        common::slice_assign("float_slice_assign", tensor, slices, value, |t, s, v| B::float_slice_assign(t, s, v))
    }

    fn float_mask_where(tensor: F<B>, mask: Bo<B>, value: F<B>) -> F<B> {
        common::mask_where("float_mask_where", tensor, mask, value, |t, m, v| B::float_mask_where(t, m, v))
    }

    fn float_mask_fill(tensor: F<B>, mask: Bo<B>, value: Scalar) -> F<B> {
        common::binary::<B, FloatKind, BoolKind, FloatKind>("float_mask_fill", tensor, mask, Linearity::None, |t, m| {
            B::float_mask_fill(t, m, value)
        })
    }

    cmp_ops!(FloatKind; float_equal, float_greater, float_greater_equal, float_lower, float_lower_equal);
    cmp_elem_ops!(FloatKind; float_equal_elem, float_greater_elem, float_greater_equal_elem, float_lower_elem, float_lower_equal_elem);

    fn float_sum(tensor: F<B>) -> F<B> {
        common::sum_all("float_sum", tensor, |p| B::float_sum(p))
    }

    fn float_sum_dim(tensor: F<B>, dim: usize) -> F<B> {
        common::reduce_dim::<B, FloatKind, FloatKind>("float_sum_dim", tensor, dim, ShardedReduce::Sum, |p| {
            B::float_sum_dim(p, dim)
        })
    }

    fn float_mean_dim(tensor: F<B>, dim: usize) -> F<B> {
        common::mean_dim(
            "float_mean_dim",
            tensor,
            dim,
            |p| B::float_sum_dim(p, dim),
            |p| B::float_mean_dim(p, dim),
            |sums, len| linear("float_div_scalar", sums, |p| B::float_div_scalar(p, Scalar::Float(len as f64))),
        )
    }

    fn float_max_dim(tensor: F<B>, dim: usize) -> F<B> {
        common::reduce_dim::<B, FloatKind, FloatKind>("float_max_dim", tensor, dim, ShardedReduce::Max, |p| {
            B::float_max_dim(p, dim)
        })
    }

    along_dim_ops!(FloatKind; float_cumsum, float_cumprod, float_cummin, float_cummax);

    fn float_argmax(tensor: F<B>, dim: usize, out_dtype: IntDType) -> I<B> {
        common::arg_extreme(
            "float_argmax",
            tensor,
            dim,
            |p| B::float_max_dim(p, dim),
            |p| B::float_argmax(p, dim, out_dtype),
        )
    }

    fn float_argmin(tensor: F<B>, dim: usize, out_dtype: IntDType) -> I<B> {
        common::arg_extreme(
            "float_argmin",
            tensor,
            dim,
            |p| B::float_min_dim(p, dim),
            |p| B::float_argmin(p, dim, out_dtype),
        )
    }

    fn float_argtopk(tensor: F<B>, dim: usize, k: usize, out_dtype: IntDType) -> I<B> {
        common::along_dim::<B, FloatKind, IntKind>("float_argtopk", tensor, dim, |p| {
            B::float_argtopk(p, dim, k, out_dtype)
        })
    }

    fn float_expand(tensor: F<B>, shape: Shape) -> F<B> {
        common::expand(tensor, shape, |p, s| B::float_expand(p, s))
    }

    fn float_unfold(tensor: F<B>, dim: usize, size: usize, step: usize) -> F<B> {
        common::unfold("float_unfold", tensor, dim, |p| B::float_unfold(p, dim, size, step))
    }

    fn float_cat(tensors: Vec<F<B>>, dim: usize) -> F<B> {
        common::cat(tensors, dim)
    }

    fn float_detach(tensor: F<B>) -> F<B> {
        tensor.map_same(|p| B::float_detach(p))
    }

    fn float_set_require_grad(tensor: F<B>, require_grad: bool) -> F<B> {
        tensor.map_same(|p| B::float_set_require_grad(p, require_grad))
    }

    fn float_is_require_grad(tensor: &F<B>) -> bool {
        B::float_is_require_grad(&tensor.shards[0])
    }
}
