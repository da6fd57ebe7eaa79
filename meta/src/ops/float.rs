//! Float ops of `Meta`: shapes and dtypes as Flex computes them, costs per [`crate::cost`].
//! Besides Burn's required ops this overrides the defaults that would read data (sorts) or
//! fill a buffer (zeros, ones, full), and those whose default composition would log several
//! ops for what a real backend runs as one (clamps, reductions, cat, not_equal, top-k).

use burn::tensor::backend::ExecutionError;
use burn::tensor::ops::{FloatTensorOps, GridSampleOptions};
use burn::tensor::{
    BoolDType, DType, Distribution, FloatDType, IndexingUpdateOp, IntDType, Scalar, Shape, Slice, TensorData,
};

use crate::backend::Meta;
use crate::device::MetaDevice;
use crate::ops::common;
use crate::ops::macros::{
    binary_ops, cmp_elem_ops, cmp_ops, reduce_all_ops, reduce_dim_ops, scalar_ops, scan_ops, unary_ops,
};
use crate::shapes;
use crate::tensor::MetaTensor;

type T = MetaTensor;

impl FloatTensorOps<Self> for Meta {
    fn float_from_data(data: TensorData, device: &MetaDevice) -> T {
        common::from_data("float_from_data", &data, device)
    }

    /// Nothing is drawn. Flex draws `Flex32` as `f32`, so the dtype follows it.
    fn float_random(shape: Shape, _distribution: Distribution, device: &MetaDevice, dtype: FloatDType) -> T {
        let dtype = match dtype {
            FloatDType::Flex32 => DType::F32,
            other => other.into(),
        };
        common::create("float_random", shape, dtype, device, true)
    }

    async fn float_into_data(tensor: T) -> Result<TensorData, ExecutionError> {
        Ok(common::into_data("float_into_data", tensor))
    }

    fn float_device(tensor: &T) -> MetaDevice {
        tensor.device.clone()
    }

    fn float_to_device(tensor: T, device: &MetaDevice) -> T {
        common::to_device("float_to_device", tensor, device)
    }

    fn float_into_int(tensor: T, out_dtype: IntDType) -> T {
        common::unary_to("float_into_int", tensor, out_dtype.into())
    }

    fn float_empty(shape: Shape, device: &MetaDevice, dtype: FloatDType) -> T {
        common::create("float_empty", shape, dtype.into(), device, false)
    }

    fn float_zeros(shape: Shape, device: &MetaDevice, dtype: FloatDType) -> T {
        common::create("float_zeros", shape, dtype.into(), device, true)
    }

    fn float_ones(shape: Shape, device: &MetaDevice, dtype: FloatDType) -> T {
        common::create("float_ones", shape, dtype.into(), device, true)
    }

    fn float_full(shape: Shape, _fill_value: Scalar, device: &MetaDevice, dtype: FloatDType) -> T {
        common::create("float_full", shape, dtype.into(), device, true)
    }

    binary_ops!(float_add, float_sub, float_mul, float_div, float_remainder, float_powf, float_atan2, float_powi);

    scalar_ops!(
        float_add_scalar,
        float_sub_scalar,
        float_mul_scalar,
        float_div_scalar,
        float_remainder_scalar,
        float_powf_scalar_impl,
        float_clamp_min,
        float_clamp_max,
    );

    unary_ops!(
        float_recip,
        float_exp,
        float_log,
        float_log1p,
        float_sqrt,
        float_abs,
        float_cos,
        float_sin,
        float_tan,
        float_cosh,
        float_sinh,
        float_tanh,
        float_acos,
        float_acosh,
        float_asin,
        float_asinh,
        float_atan,
        float_atanh,
        float_round,
        float_floor,
        float_ceil,
        float_trunc,
        float_erf,
        float_neg,
        float_sign,
    );

    fn float_clamp(tensor: T, _min: Scalar, _max: Scalar) -> T {
        common::unary("float_clamp", tensor)
    }

    fn float_matmul(lhs: T, rhs: T) -> T {
        common::matmul("float_matmul", lhs, rhs)
    }

    /// Flex slices, multiplies, subtracts and concatenates; logged as one elementwise op of
    /// the output (which has the inputs' broadcast shape).
    fn float_cross(lhs: T, rhs: T, dim: usize) -> T {
        let op = "float_cross";
        shapes::check_dim(op, &lhs.shape, dim);
        assert_eq!(lhs.shape[dim], 3, "{op}: dimension {dim} must have size 3, got {:?}", lhs.shape);
        let dtype = lhs.dtype;
        common::binary(op, lhs, rhs, dtype)
    }

    fn float_cast(tensor: T, dtype: FloatDType) -> T {
        common::unary_to("float_cast", tensor, dtype.into())
    }

    fn float_swap_dims(tensor: T, dim1: usize, dim2: usize) -> T {
        let shape = shapes::swap_dims("float_swap_dims", &tensor.shape, dim1, dim2);
        common::view("float_swap_dims", tensor, shape)
    }

    fn float_permute(tensor: T, axes: &[usize]) -> T {
        let shape = shapes::permute("float_permute", &tensor.shape, axes);
        common::view("float_permute", tensor, shape)
    }

    fn float_flip(tensor: T, _axes: &[usize]) -> T {
        let shape = tensor.shape.clone();
        common::copy("float_flip", tensor, shape)
    }

    fn float_reshape(tensor: T, shape: Shape) -> T {
        let shape = shapes::reshape("float_reshape", &tensor.shape, shape);
        common::view("float_reshape", tensor, shape)
    }

    fn float_gather(dim: usize, tensor: T, indices: T) -> T {
        common::gather("float_gather", dim, tensor, indices)
    }

    fn float_scatter_add(dim: usize, tensor: T, indices: T, value: T) -> T {
        shapes::check_dim("float_scatter_add", &tensor.shape, dim);
        common::accumulate("float_scatter_add", tensor, indices, value)
    }

    fn float_scatter_nd(data: T, indices: T, values: T, _reduction: IndexingUpdateOp) -> T {
        common::accumulate("float_scatter_nd", data, indices, values)
    }

    fn float_gather_nd(data: T, indices: T) -> T {
        common::gather_nd("float_gather_nd", data, indices)
    }

    fn float_select(tensor: T, dim: usize, indices: T) -> T {
        common::select("float_select", tensor, dim, indices)
    }

    fn float_select_add(tensor: T, dim: usize, indices: T, value: T) -> T {
        shapes::check_dim("float_select_add", &tensor.shape, dim);
        common::accumulate("float_select_add", tensor, indices, value)
    }

    fn float_slice(tensor: T, slices: &[Slice]) -> T {
        let shape = shapes::slice("float_slice", &tensor.shape, slices);
        common::view("float_slice", tensor, shape)
    }

    fn float_slice_assign(tensor: T, slices: &[Slice], value: T) -> T {
        common::slice_assign("float_slice_assign", tensor, slices, value)
    }

    fn float_mask_where(tensor: T, mask: T, value: T) -> T {
        common::mask_where("float_mask_where", tensor, mask, value)
    }

    fn float_mask_fill(tensor: T, mask: T, _value: Scalar) -> T {
        let dtype = tensor.dtype;
        common::binary("float_mask_fill", tensor, mask, dtype)
    }

    cmp_ops!(float_equal, float_not_equal, float_greater, float_greater_equal, float_lower, float_lower_equal);

    cmp_elem_ops!(
        float_equal_elem,
        float_not_equal_elem,
        float_greater_elem,
        float_greater_equal_elem,
        float_lower_elem,
        float_lower_equal_elem,
    );

    fn float_is_nan(tensor: T, out_dtype: BoolDType) -> T {
        common::unary_to("float_is_nan", tensor, out_dtype.into())
    }

    fn float_is_inf(tensor: T, out_dtype: BoolDType) -> T {
        common::unary_to("float_is_inf", tensor, out_dtype.into())
    }

    reduce_all_ops!(float_sum, float_prod, float_mean, float_max, float_min, float_max_abs);

    reduce_dim_ops!(float_sum_dim, float_prod_dim, float_mean_dim, float_max_dim, float_min_dim, float_max_abs_dim);

    fn float_max_dim_with_indices(tensor: T, dim: usize, indices_dtype: IntDType) -> (T, T) {
        common::reduce_dim_with_indices("float_max_dim_with_indices", tensor, dim, indices_dtype.into())
    }

    fn float_min_dim_with_indices(tensor: T, dim: usize, indices_dtype: IntDType) -> (T, T) {
        common::reduce_dim_with_indices("float_min_dim_with_indices", tensor, dim, indices_dtype.into())
    }

    fn float_any(tensor: T, out_dtype: BoolDType) -> T {
        common::reduce_all("float_any", tensor, out_dtype.into())
    }

    fn float_any_dim(tensor: T, dim: usize, out_dtype: BoolDType) -> T {
        common::reduce_dim("float_any_dim", tensor, dim, out_dtype.into())
    }

    fn float_all(tensor: T, out_dtype: BoolDType) -> T {
        common::reduce_all("float_all", tensor, out_dtype.into())
    }

    fn float_all_dim(tensor: T, dim: usize, out_dtype: BoolDType) -> T {
        common::reduce_dim("float_all_dim", tensor, dim, out_dtype.into())
    }

    scan_ops!(float_cumsum, float_cumprod, float_cummin, float_cummax);

    fn float_argmax(tensor: T, dim: usize, out_dtype: IntDType) -> T {
        common::reduce_dim("float_argmax", tensor, dim, out_dtype.into())
    }

    fn float_argmin(tensor: T, dim: usize, out_dtype: IntDType) -> T {
        common::reduce_dim("float_argmin", tensor, dim, out_dtype.into())
    }

    /// Dimension `dim` becomes `k`, in `out_dtype` (Flex itself leaves this op unimplemented).
    fn float_argtopk(tensor: T, dim: usize, k: usize, out_dtype: IntDType) -> T {
        common::topk("float_argtopk", tensor, dim, k, out_dtype.into())
    }

    fn float_topk(tensor: T, dim: usize, k: usize) -> T {
        let dtype = tensor.dtype;
        common::topk("float_topk", tensor, dim, k, dtype)
    }

    fn float_sort(tensor: T, dim: usize, _descending: bool) -> T {
        let dtype = tensor.dtype;
        common::sort("float_sort", &tensor, dim, dtype)
    }

    fn float_sort_with_indices(tensor: T, dim: usize, _descending: bool, indices_dtype: IntDType) -> (T, T) {
        common::sort_with_indices("float_sort_with_indices", tensor, dim, indices_dtype.into())
    }

    fn float_argsort(tensor: T, dim: usize, _descending: bool, out_dtype: IntDType) -> T {
        common::sort("float_argsort", &tensor, dim, out_dtype.into())
    }

    fn float_expand(tensor: T, shape: Shape) -> T {
        let shape = shapes::expand("float_expand", &tensor.shape, shape);
        common::view("float_expand", tensor, shape)
    }

    fn float_unfold(tensor: T, dim: usize, size: usize, step: usize) -> T {
        common::unfold("float_unfold", tensor, dim, size, step)
    }

    fn float_repeat_dim(tensor: T, dim: usize, times: usize) -> T {
        let shape = shapes::repeat_dim("float_repeat_dim", &tensor.shape, dim, times);
        common::copy("float_repeat_dim", tensor, shape)
    }

    fn float_cat(tensors: Vec<T>, dim: usize) -> T {
        common::cat("float_cat", tensors, dim)
    }

    /// `[N, C, H_out, W_out]` for input `[N, C, H, W]` and grid `[N, H_out, W_out, 2]`; each
    /// output value interpolates 4 inputs (4 flops per output element).
    fn float_grid_sample_2d(tensor: T, grid: T, _options: GridSampleOptions) -> T {
        let op = "float_grid_sample_2d";
        assert!(tensor.shape.num_dims() == 4 && grid.shape.num_dims() == 4, "{op}: expected rank 4 input and grid");
        let shape = Shape::new([tensor.shape[0], tensor.shape[1], grid.shape[1], grid.shape[2]]);
        let out = tensor.like(shape, tensor.dtype);
        let flops = 4 * out.numel() as u64;
        MetaTensor::log(op, &[&tensor, &grid], out, flops)
    }
}
