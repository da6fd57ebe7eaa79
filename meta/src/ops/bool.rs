//! Bool ops of `Meta` (masks): shapes and dtypes as Flex computes them (bool results keep the
//! left operand's bool dtype). `bool_argwhere`, whose output size depends on the values,
//! returns no rows (`[0, rank]`), consistent with reads of Meta tensors giving all-false data.

use burn::tensor::backend::ExecutionError;
use burn::tensor::ops::BoolTensorOps;
use burn::tensor::{BoolDType, DType, FloatDType, IntDType, Scalar, Shape, Slice, TensorData};

use crate::backend::Meta;
use crate::device::MetaDevice;
use crate::ops::common;
use crate::ops::macros::{binary_ops, reduce_all_ops, reduce_dim_ops, unary_ops};
use crate::shapes;
use crate::tensor::MetaTensor;

type T = MetaTensor;

impl BoolTensorOps<Self> for Meta {
    fn bool_empty(shape: Shape, device: &MetaDevice, dtype: BoolDType) -> T {
        common::create("bool_empty", shape, dtype.into(), device, false)
    }

    fn bool_zeros(shape: Shape, device: &MetaDevice, dtype: BoolDType) -> T {
        common::create("bool_zeros", shape, dtype.into(), device, true)
    }

    fn bool_ones(shape: Shape, device: &MetaDevice, dtype: BoolDType) -> T {
        common::create("bool_ones", shape, dtype.into(), device, true)
    }

    async fn bool_into_data(tensor: T) -> Result<TensorData, ExecutionError> {
        Ok(common::into_data("bool_into_data", tensor))
    }

    fn bool_from_data(data: TensorData, device: &MetaDevice) -> T {
        common::from_data("bool_from_data", &data, device)
    }

    fn bool_into_int(tensor: T, out_dtype: IntDType) -> T {
        common::unary_to("bool_into_int", tensor, out_dtype.into())
    }

    fn bool_into_float(tensor: T, out_dtype: FloatDType) -> T {
        common::unary_to("bool_into_float", tensor, out_dtype.into())
    }

    fn bool_device(tensor: &T) -> MetaDevice {
        tensor.device.clone()
    }

    fn bool_to_device(tensor: T, device: &MetaDevice) -> T {
        common::to_device("bool_to_device", tensor, device)
    }

    fn bool_reshape(tensor: T, shape: Shape) -> T {
        let shape = shapes::reshape("bool_reshape", &tensor.shape, shape);
        common::view("bool_reshape", tensor, shape)
    }

    fn bool_slice(tensor: T, slices: &[Slice]) -> T {
        let shape = shapes::slice("bool_slice", &tensor.shape, slices);
        common::view("bool_slice", tensor, shape)
    }

    fn bool_slice_assign(tensor: T, slices: &[Slice], value: T) -> T {
        common::slice_assign("bool_slice_assign", tensor, slices, value)
    }

    fn bool_mask_where(tensor: T, mask: T, value: T) -> T {
        common::mask_where("bool_mask_where", tensor, mask, value)
    }

    fn bool_mask_fill(tensor: T, mask: T, _value: Scalar) -> T {
        let dtype = tensor.dtype;
        common::binary("bool_mask_fill", tensor, mask, dtype)
    }

    /// Flex gathers bools as `u8` and tags the result `DType::U8` (not `Bool(U8)`); so does Meta.
    fn bool_gather(dim: usize, tensor: T, indices: T) -> T {
        let mut out = common::gather("bool_gather", dim, tensor, indices);
        out.dtype = DType::U8;
        out
    }

    fn bool_scatter_or(dim: usize, tensor: T, indices: T, value: T) -> T {
        shapes::check_dim("bool_scatter_or", &tensor.shape, dim);
        common::accumulate("bool_scatter_or", tensor, indices, value)
    }

    /// Flex selects bools as `u8` and tags the result `DType::U8` (not `Bool(U8)`); so does Meta.
    fn bool_select(tensor: T, dim: usize, indices: T) -> T {
        let mut out = common::select("bool_select", tensor, dim, indices);
        out.dtype = DType::U8;
        out
    }

    /// Flex ORs bools in as `u8` sums and tags the result `DType::U8`; so does Meta.
    fn bool_select_or(tensor: T, dim: usize, indices: T, value: T) -> T {
        shapes::check_dim("bool_select_or", &tensor.shape, dim);
        let mut out = common::accumulate("bool_select_or", tensor, indices, value);
        out.dtype = DType::U8;
        out
    }

    binary_ops!(bool_equal, bool_not_equal, bool_and, bool_or, bool_xor);

    unary_ops!(bool_not);

    fn bool_equal_elem(lhs: T, _rhs: Scalar) -> T {
        common::unary("bool_equal_elem", lhs)
    }

    fn bool_not_equal_elem(lhs: T, _rhs: Scalar) -> T {
        common::unary("bool_not_equal_elem", lhs)
    }

    reduce_all_ops!(bool_any, bool_all);

    reduce_dim_ops!(bool_any_dim, bool_all_dim);

    /// No rows: `[0, rank]` in `out_dtype` (the values are unknown; Meta reads give false).
    async fn bool_argwhere(tensor: T, out_dtype: IntDType) -> T {
        let shape = Shape::new([0, tensor.shape.num_dims()]);
        let out = tensor.like(shape, out_dtype.into());
        MetaTensor::reduction("bool_argwhere", &[&tensor], out)
    }

    fn bool_swap_dims(tensor: T, dim1: usize, dim2: usize) -> T {
        let shape = shapes::swap_dims("bool_swap_dims", &tensor.shape, dim1, dim2);
        common::view("bool_swap_dims", tensor, shape)
    }

    fn bool_permute(tensor: T, axes: &[usize]) -> T {
        let shape = shapes::permute("bool_permute", &tensor.shape, axes);
        common::view("bool_permute", tensor, shape)
    }

    fn bool_flip(tensor: T, _axes: &[usize]) -> T {
        let shape = tensor.shape.clone();
        common::copy("bool_flip", tensor, shape)
    }

    fn bool_expand(tensor: T, shape: Shape) -> T {
        let shape = shapes::expand("bool_expand", &tensor.shape, shape);
        common::view("bool_expand", tensor, shape)
    }

    fn bool_unfold(tensor: T, dim: usize, size: usize, step: usize) -> T {
        common::unfold("bool_unfold", tensor, dim, size, step)
    }

    fn bool_repeat_dim(tensor: T, dim: usize, times: usize) -> T {
        let shape = shapes::repeat_dim("bool_repeat_dim", &tensor.shape, dim, times);
        common::copy("bool_repeat_dim", tensor, shape)
    }

    fn bool_cat(tensors: Vec<T>, dim: usize) -> T {
        common::cat("bool_cat", tensors, dim)
    }
}
