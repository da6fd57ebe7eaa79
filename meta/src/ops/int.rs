//! Int ops of `Meta` (labels, indices): shapes and dtypes as Flex computes them. Flex returns
//! its index dtype (`INDEX_DTYPE`, i64 on 64-bit targets) from the int ops that take no
//! output dtype (argmax, argmin, sorts' indices); so does `Meta`. The same defaults as for
//! floats are overridden (fills, sorts, arange, reductions, cat).

use std::ops::Range;

use burn::tensor::backend::ExecutionError;
use burn::tensor::ops::IntTensorOps;
use burn::tensor::{BoolDType, Distribution, FloatDType, IndexingUpdateOp, IntDType, Scalar, Shape, Slice, TensorData};

use crate::backend::Meta;
use crate::device::MetaDevice;
use crate::ops::common::{self, INDEX_DTYPE};
use crate::ops::macros::{
    binary_ops, cmp_elem_ops, cmp_ops, reduce_all_ops, reduce_dim_ops, scalar_ops, scan_ops, unary_ops,
};
use crate::shapes;
use crate::tensor::MetaTensor;

type T = MetaTensor;

/// The length of `range` stepped by `step`.
fn arange_len(range: &Range<i64>, step: usize) -> usize {
    assert!(step > 0, "int_arange_step: step must be positive");
    if range.end <= range.start {
        0
    } else {
        ((range.end - range.start) as u64).div_ceil(step as u64) as usize
    }
}

impl IntTensorOps<Self> for Meta {
    fn int_empty(shape: Shape, device: &MetaDevice, dtype: IntDType) -> T {
        common::create("int_empty", shape, dtype.into(), device, false)
    }

    fn int_zeros(shape: Shape, device: &MetaDevice, dtype: IntDType) -> T {
        common::create("int_zeros", shape, dtype.into(), device, true)
    }

    fn int_ones(shape: Shape, device: &MetaDevice, dtype: IntDType) -> T {
        common::create("int_ones", shape, dtype.into(), device, true)
    }

    fn int_full(shape: Shape, _fill_value: Scalar, device: &MetaDevice, dtype: IntDType) -> T {
        common::create("int_full", shape, dtype.into(), device, true)
    }

    fn int_arange_step(range: Range<i64>, step: usize, device: &MetaDevice, dtype: IntDType) -> T {
        common::create("int_arange", Shape::new([arange_len(&range, step)]), dtype.into(), device, true)
    }

    fn int_arange(range: Range<i64>, device: &MetaDevice, dtype: IntDType) -> T {
        Self::int_arange_step(range, 1, device, dtype)
    }

    async fn int_into_data(tensor: T) -> Result<TensorData, ExecutionError> {
        Ok(common::into_data("int_into_data", tensor))
    }

    fn int_from_data(data: TensorData, device: &MetaDevice) -> T {
        common::from_data("int_from_data", &data, device)
    }

    fn int_device(tensor: &T) -> MetaDevice {
        tensor.device.clone()
    }

    fn int_to_device(tensor: T, device: &MetaDevice) -> T {
        common::to_device("int_to_device", tensor, device)
    }

    fn int_reshape(tensor: T, shape: Shape) -> T {
        let shape = shapes::reshape("int_reshape", &tensor.shape, shape);
        common::view("int_reshape", tensor, shape)
    }

    fn int_slice(tensor: T, slices: &[Slice]) -> T {
        let shape = shapes::slice("int_slice", &tensor.shape, slices);
        common::view("int_slice", tensor, shape)
    }

    fn int_slice_assign(tensor: T, slices: &[Slice], value: T) -> T {
        common::slice_assign("int_slice_assign", tensor, slices, value)
    }

    fn int_into_float(tensor: T, out_dtype: FloatDType) -> T {
        common::unary_to("int_into_float", tensor, out_dtype.into())
    }

    fn int_mask_where(tensor: T, mask: T, value: T) -> T {
        common::mask_where("int_mask_where", tensor, mask, value)
    }

    fn int_mask_fill(tensor: T, mask: T, _value: Scalar) -> T {
        let dtype = tensor.dtype;
        common::binary("int_mask_fill", tensor, mask, dtype)
    }

    fn int_gather(dim: usize, tensor: T, indices: T) -> T {
        common::gather("int_gather", dim, tensor, indices)
    }

    fn int_scatter_add(dim: usize, tensor: T, indices: T, value: T) -> T {
        shapes::check_dim("int_scatter_add", &tensor.shape, dim);
        common::accumulate("int_scatter_add", tensor, indices, value)
    }

    fn int_scatter_nd(data: T, indices: T, values: T, _reduction: IndexingUpdateOp) -> T {
        common::accumulate("int_scatter_nd", data, indices, values)
    }

    fn int_gather_nd(data: T, indices: T) -> T {
        common::gather_nd("int_gather_nd", data, indices)
    }

    fn int_select(tensor: T, dim: usize, indices: T) -> T {
        common::select("int_select", tensor, dim, indices)
    }

    fn int_select_add(tensor: T, dim: usize, indices: T, value: T) -> T {
        shapes::check_dim("int_select_add", &tensor.shape, dim);
        common::accumulate("int_select_add", tensor, indices, value)
    }

    cmp_ops!(int_equal, int_not_equal, int_greater, int_greater_equal, int_lower, int_lower_equal);

    cmp_elem_ops!(
        int_equal_elem,
        int_not_equal_elem,
        int_greater_elem,
        int_greater_equal_elem,
        int_lower_elem,
        int_lower_equal_elem,
    );

    binary_ops!(
        int_add,
        int_sub,
        int_mul,
        int_div,
        int_remainder,
        int_powi,
        bitwise_and,
        bitwise_or,
        bitwise_xor,
        bitwise_left_shift,
        bitwise_right_shift,
    );

    scalar_ops!(
        int_add_scalar,
        int_sub_scalar,
        int_mul_scalar,
        int_div_scalar,
        int_remainder_scalar,
        int_clamp_min,
        int_clamp_max,
        bitwise_and_scalar,
        bitwise_or_scalar,
        bitwise_xor_scalar,
        bitwise_left_shift_scalar,
        bitwise_right_shift_scalar,
    );

    unary_ops!(int_abs, int_neg, int_sign, bitwise_not);

    fn int_clamp(tensor: T, _min: Scalar, _max: Scalar) -> T {
        common::unary("int_clamp", tensor)
    }

    fn int_matmul(lhs: T, rhs: T) -> T {
        common::matmul("int_matmul", lhs, rhs)
    }

    reduce_all_ops!(int_sum, int_prod, int_mean, int_max, int_min, int_max_abs);

    reduce_dim_ops!(int_sum_dim, int_prod_dim, int_mean_dim, int_max_dim, int_min_dim, int_max_abs_dim);

    fn int_max_dim_with_indices(tensor: T, dim: usize) -> (T, T) {
        common::reduce_dim_with_indices("int_max_dim_with_indices", tensor, dim, INDEX_DTYPE)
    }

    fn int_min_dim_with_indices(tensor: T, dim: usize) -> (T, T) {
        common::reduce_dim_with_indices("int_min_dim_with_indices", tensor, dim, INDEX_DTYPE)
    }

    fn int_any(tensor: T, out_dtype: BoolDType) -> T {
        common::reduce_all("int_any", tensor, out_dtype.into())
    }

    fn int_any_dim(tensor: T, dim: usize, out_dtype: BoolDType) -> T {
        common::reduce_dim("int_any_dim", tensor, dim, out_dtype.into())
    }

    fn int_all(tensor: T, out_dtype: BoolDType) -> T {
        common::reduce_all("int_all", tensor, out_dtype.into())
    }

    fn int_all_dim(tensor: T, dim: usize, out_dtype: BoolDType) -> T {
        common::reduce_dim("int_all_dim", tensor, dim, out_dtype.into())
    }

    scan_ops!(int_cumsum, int_cumprod, int_cummin, int_cummax);

    fn int_argmax(tensor: T, dim: usize) -> T {
        common::reduce_dim("int_argmax", tensor, dim, INDEX_DTYPE)
    }

    fn int_argmin(tensor: T, dim: usize) -> T {
        common::reduce_dim("int_argmin", tensor, dim, INDEX_DTYPE)
    }

    /// Dimension `dim` becomes `k`, in Flex's index dtype (Flex itself leaves this op
    /// unimplemented; its other index-returning int ops use that dtype).
    fn int_argtopk(tensor: T, dim: usize, k: usize) -> T {
        common::topk("int_argtopk", tensor, dim, k, INDEX_DTYPE)
    }

    fn int_topk(tensor: T, dim: usize, k: usize) -> T {
        let dtype = tensor.dtype;
        common::topk("int_topk", tensor, dim, k, dtype)
    }

    fn int_sort(tensor: T, dim: usize, _descending: bool) -> T {
        let dtype = tensor.dtype;
        common::sort("int_sort", &tensor, dim, dtype)
    }

    fn int_sort_with_indices(tensor: T, dim: usize, _descending: bool) -> (T, T) {
        common::sort_with_indices("int_sort_with_indices", tensor, dim, INDEX_DTYPE)
    }

    fn int_argsort(tensor: T, dim: usize, _descending: bool) -> T {
        common::sort("int_argsort", &tensor, dim, INDEX_DTYPE)
    }

    fn int_swap_dims(tensor: T, dim1: usize, dim2: usize) -> T {
        let shape = shapes::swap_dims("int_swap_dims", &tensor.shape, dim1, dim2);
        common::view("int_swap_dims", tensor, shape)
    }

    fn int_permute(tensor: T, axes: &[usize]) -> T {
        let shape = shapes::permute("int_permute", &tensor.shape, axes);
        common::view("int_permute", tensor, shape)
    }

    fn int_flip(tensor: T, _axes: &[usize]) -> T {
        let shape = tensor.shape.clone();
        common::copy("int_flip", tensor, shape)
    }

    /// Nothing is drawn.
    fn int_random(shape: Shape, _distribution: Distribution, device: &MetaDevice, dtype: IntDType) -> T {
        common::create("int_random", shape, dtype.into(), device, true)
    }

    fn int_expand(tensor: T, shape: Shape) -> T {
        let shape = shapes::expand("int_expand", &tensor.shape, shape);
        common::view("int_expand", tensor, shape)
    }

    fn int_cast(tensor: T, dtype: IntDType) -> T {
        common::unary_to("int_cast", tensor, dtype.into())
    }

    fn int_unfold(tensor: T, dim: usize, size: usize, step: usize) -> T {
        common::unfold("int_unfold", tensor, dim, size, step)
    }

    fn int_repeat_dim(tensor: T, dim: usize, times: usize) -> T {
        let shape = shapes::repeat_dim("int_repeat_dim", &tensor.shape, dim, times);
        common::copy("int_repeat_dim", tensor, shape)
    }

    fn int_cat(tensors: Vec<T>, dim: usize) -> T {
        common::cat("int_cat", tensors, dim)
    }
}
