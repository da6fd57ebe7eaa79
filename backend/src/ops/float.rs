//! Float ops of `Hybrid<B>`: each picks a placement rule (see `backend/README.md`).

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::ops::GridSampleOptions;
use burn::tensor::{BoolDType, Distribution, FloatDType, IndexingUpdateOp, IntDType, Scalar, Shape, Slice, TensorData};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::mesh::MeshDevice;
use crate::ops::common;
use crate::ops::dispatch::{drawn_on_rank0, replicate_with, to_mesh, whole};
use crate::ops::macros::{along_dim_ops, binary_ops, cmp_elem_ops, cmp_ops, scalar_ops, unary_ops};
use crate::rules::{Linearity, ShardedReduce};
use crate::spec::placement::Placement;
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

    // Ops Burn gives a default body: each runs the inner backend's own op (Burn's default is
    // another arithmetic: `prod` through exp-sum-log, `mean` through a sum that overflows f16,
    // `gather_nd` a panic), by a rule where one is natural, gathered otherwise.

    fn float_repeat_dim(tensor: F<B>, dim: usize, times: usize) -> F<B> {
        common::along_dim::<B, FloatKind, FloatKind>("float_repeat_dim", tensor, dim, |p| {
            B::float_repeat_dim(p, dim, times)
        })
    }

    fn float_clamp_min(tensor: F<B>, min: Scalar) -> F<B> {
        common::unary::<B, FloatKind, FloatKind>("float_clamp_min", tensor, Linearity::None, |p| {
            B::float_clamp_min(p, min)
        })
    }

    fn float_clamp_max(tensor: F<B>, max: Scalar) -> F<B> {
        common::unary::<B, FloatKind, FloatKind>("float_clamp_max", tensor, Linearity::None, |p| {
            B::float_clamp_max(p, max)
        })
    }

    fn float_clamp(tensor: F<B>, min: Scalar, max: Scalar) -> F<B> {
        common::unary::<B, FloatKind, FloatKind>("float_clamp", tensor, Linearity::None, |p| {
            B::float_clamp(p, min, max)
        })
    }

    fn float_transpose(tensor: F<B>) -> F<B> {
        let n = tensor.shape.num_dims();
        let axes = common::swap_axes(n, n.saturating_sub(2), n.saturating_sub(1));
        common::permute(tensor, &axes, |p| B::float_transpose(p))
    }

    fn float_gather_nd(data: F<B>, indices: I<B>) -> F<B> {
        common::gathered2::<B, FloatKind, IntKind, FloatKind>("float_gather_nd", data, indices, |d, i| {
            B::float_gather_nd(d, i)
        })
    }

    fn float_scatter_nd(data: F<B>, indices: I<B>, values: F<B>, reduction: IndexingUpdateOp) -> F<B> {
        common::gathered3::<B, FloatKind, IntKind, FloatKind, FloatKind>(
            "float_scatter_nd",
            data,
            indices,
            values,
            |d, i, v| B::float_scatter_nd(d, i, v, reduction),
        )
    }

    cmp_ops!(FloatKind; float_not_equal);
    cmp_elem_ops!(FloatKind; float_not_equal_elem);

    fn float_prod(tensor: F<B>) -> F<B> {
        common::gathered::<B, FloatKind, FloatKind>("float_prod", tensor, |p| B::float_prod(p))
    }

    fn float_prod_dim(tensor: F<B>, dim: usize) -> F<B> {
        common::along_dim::<B, FloatKind, FloatKind>("float_prod_dim", tensor, dim, |p| B::float_prod_dim(p, dim))
    }

    /// The inner mean on each rank's piece; over a split tensor, each weighted by its share of
    /// the elements, a summand of the global mean (`Partial`: the mean of a loss over batch
    /// shards moves nothing until it is read). Burn's default, a sum divided by the count,
    /// overflows f16 where the inner mean does not.
    fn float_mean(tensor: F<B>) -> F<B> {
        // Each piece's share of the global tensor (on a mesh of nodes a process sees a view).
        let total = tensor.global.num_elements();
        let rule = |sp: &[crate::rules::Spec], cx: &crate::rules::Context| match sp[0].placement {
            Placement::Shard(d) if sp[0].shape[d] >= cx.ranks => {
                crate::rules::Strategy::local(vec![sp[0].placement], Placement::PARTIAL_SUM)
            }
            Placement::Shard(_) => crate::rules::Strategy::gathered(1),
            p @ Placement::Partial(crate::ReduceOp::Sum) => crate::rules::Strategy::local(vec![p], p),
            _ => crate::rules::Strategy::local(vec![Placement::Replicate], Placement::Replicate),
        };
        crate::ops::dispatch::run1("float_mean", rule, tensor, |_, p| {
            let n = burn::tensor::TensorMetadata::shape(&p).num_elements();
            let mean = B::float_mean(p);
            match n != total {
                true => B::float_mul_scalar(mean, Scalar::Float(n as f64 / total as f64)),
                false => mean,
            }
        })
    }

    fn float_powi(lhs: F<B>, rhs: I<B>) -> F<B> {
        common::binary::<B, FloatKind, IntKind, FloatKind>("float_powi", lhs, rhs, Linearity::None, |a, b| {
            B::float_powi(a, b)
        })
    }

    scalar_ops!(FloatKind; float_powi_scalar, float_powf_scalar);

    /// Gathered: the inner maximum's treatment of NaN need not split over pieces (Flex's
    /// depends on where a NaN stands), so only the whole tensor gives its answer.
    fn float_max(tensor: F<B>) -> F<B> {
        common::gathered::<B, FloatKind, FloatKind>("float_max", tensor, |p| B::float_max(p))
    }

    /// Gathered, as `float_max`.
    fn float_max_abs(tensor: F<B>) -> F<B> {
        common::gathered::<B, FloatKind, FloatKind>("float_max_abs", tensor, |p| B::float_max_abs(p))
    }

    fn float_max_abs_dim(tensor: F<B>, dim: usize) -> F<B> {
        common::reduce_dim::<B, FloatKind, FloatKind>("float_max_abs_dim", tensor, dim, ShardedReduce::Max, |p| {
            B::float_max_abs_dim(p, dim)
        })
    }

    fn float_min(tensor: F<B>) -> F<B> {
        common::gathered::<B, FloatKind, FloatKind>("float_min", tensor, |p| B::float_min(p))
    }

    fn float_min_dim(tensor: F<B>, dim: usize) -> F<B> {
        common::along_dim::<B, FloatKind, FloatKind>("float_min_dim", tensor, dim, |p| B::float_min_dim(p, dim))
    }

    fn float_max_dim_with_indices(tensor: F<B>, dim: usize, indices_dtype: IntDType) -> (F<B>, I<B>) {
        common::along_dim_pair::<B, FloatKind, FloatKind, IntKind>("float_max_dim_with_indices", tensor, dim, |p| {
            B::float_max_dim_with_indices(p, dim, indices_dtype)
        })
    }

    fn float_min_dim_with_indices(tensor: F<B>, dim: usize, indices_dtype: IntDType) -> (F<B>, I<B>) {
        common::along_dim_pair::<B, FloatKind, FloatKind, IntKind>("float_min_dim_with_indices", tensor, dim, |p| {
            B::float_min_dim_with_indices(p, dim, indices_dtype)
        })
    }

    fn float_any(tensor: F<B>, out_dtype: BoolDType) -> Bo<B> {
        common::gathered::<B, FloatKind, BoolKind>("float_any", tensor, |p| B::float_any(p, out_dtype))
    }

    fn float_any_dim(tensor: F<B>, dim: usize, out_dtype: BoolDType) -> Bo<B> {
        common::along_dim::<B, FloatKind, BoolKind>("float_any_dim", tensor, dim, |p| {
            B::float_any_dim(p, dim, out_dtype)
        })
    }

    fn float_all(tensor: F<B>, out_dtype: BoolDType) -> Bo<B> {
        common::gathered::<B, FloatKind, BoolKind>("float_all", tensor, |p| B::float_all(p, out_dtype))
    }

    fn float_all_dim(tensor: F<B>, dim: usize, out_dtype: BoolDType) -> Bo<B> {
        common::along_dim::<B, FloatKind, BoolKind>("float_all_dim", tensor, dim, |p| {
            B::float_all_dim(p, dim, out_dtype)
        })
    }

    unary_ops!(FloatKind; float_sign);

    fn float_topk(tensor: F<B>, dim: usize, k: usize) -> F<B> {
        common::along_dim::<B, FloatKind, FloatKind>("float_topk", tensor, dim, |p| B::float_topk(p, dim, k))
    }

    fn float_sort(tensor: F<B>, dim: usize, descending: bool) -> F<B> {
        common::along_dim::<B, FloatKind, FloatKind>("float_sort", tensor, dim, |p| B::float_sort(p, dim, descending))
    }

    fn float_sort_with_indices(tensor: F<B>, dim: usize, descending: bool, indices_dtype: IntDType) -> (F<B>, I<B>) {
        common::along_dim_pair::<B, FloatKind, FloatKind, IntKind>("float_sort_with_indices", tensor, dim, |p| {
            B::float_sort_with_indices(p, dim, descending, indices_dtype)
        })
    }

    fn float_argsort(tensor: F<B>, dim: usize, descending: bool, out_dtype: IntDType) -> I<B> {
        common::along_dim::<B, FloatKind, IntKind>("float_argsort", tensor, dim, |p| {
            B::float_argsort(p, dim, descending, out_dtype)
        })
    }

    fn float_grid_sample_2d(tensor: F<B>, grid: F<B>, options: GridSampleOptions) -> F<B> {
        common::batchwise2::<B, FloatKind, FloatKind, FloatKind>("float_grid_sample_2d", tensor, grid, |t, g| {
            B::float_grid_sample_2d(t, g, options.clone())
        })
    }

    fn float_is_nan(tensor: F<B>, out_dtype: BoolDType) -> Bo<B> {
        common::unary::<B, FloatKind, BoolKind>("float_is_nan", tensor, Linearity::None, |p| {
            B::float_is_nan(p, out_dtype)
        })
    }

    fn float_is_inf(tensor: F<B>, out_dtype: BoolDType) -> Bo<B> {
        common::unary::<B, FloatKind, BoolKind>("float_is_inf", tensor, Linearity::None, |p| {
            B::float_is_inf(p, out_dtype)
        })
    }
}
