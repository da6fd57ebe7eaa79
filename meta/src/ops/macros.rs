//! Op-definition macros shared by the float, int and bool op files: each expands to trait
//! methods that call one body of [`super::common`] under the method's own name.

/// Elementwise, one tensor, shape and dtype kept.
macro_rules! unary_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(tensor: crate::tensor::MetaTensor) -> crate::tensor::MetaTensor {
            crate::ops::common::unary(stringify!($name), tensor)
        }
    )*};
}

/// Elementwise with a scalar, shape and dtype kept.
macro_rules! scalar_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(lhs: crate::tensor::MetaTensor, _rhs: burn::tensor::Scalar) -> crate::tensor::MetaTensor {
            crate::ops::common::unary(stringify!($name), lhs)
        }
    )*};
}

/// Elementwise binary with broadcasting, the left operand's dtype.
macro_rules! binary_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(lhs: crate::tensor::MetaTensor, rhs: crate::tensor::MetaTensor) -> crate::tensor::MetaTensor {
            let dtype = lhs.dtype;
            crate::ops::common::binary(stringify!($name), lhs, rhs, dtype)
        }
    )*};
}

/// Comparisons of two tensors, bool of the requested dtype out.
macro_rules! cmp_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(
            lhs: crate::tensor::MetaTensor,
            rhs: crate::tensor::MetaTensor,
            out_dtype: burn::tensor::BoolDType,
        ) -> crate::tensor::MetaTensor {
            crate::ops::common::binary(stringify!($name), lhs, rhs, out_dtype.into())
        }
    )*};
}

/// Comparisons with a scalar, bool of the requested dtype out.
macro_rules! cmp_elem_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(
            lhs: crate::tensor::MetaTensor,
            _rhs: burn::tensor::Scalar,
            out_dtype: burn::tensor::BoolDType,
        ) -> crate::tensor::MetaTensor {
            crate::ops::common::unary_to(stringify!($name), lhs, out_dtype.into())
        }
    )*};
}

/// Cumulative ops along a dimension: shape and dtype kept, counted as reductions.
macro_rules! scan_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(tensor: crate::tensor::MetaTensor, dim: usize) -> crate::tensor::MetaTensor {
            crate::ops::common::scan(stringify!($name), tensor, dim)
        }
    )*};
}

/// Reductions of one dimension to size 1, dtype kept.
macro_rules! reduce_dim_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(tensor: crate::tensor::MetaTensor, dim: usize) -> crate::tensor::MetaTensor {
            let dtype = tensor.dtype;
            crate::ops::common::reduce_dim(stringify!($name), tensor, dim, dtype)
        }
    )*};
}

/// Reductions of all elements to one, dtype kept.
macro_rules! reduce_all_ops {
    ($($name:ident),* $(,)?) => {$(
        fn $name(tensor: crate::tensor::MetaTensor) -> crate::tensor::MetaTensor {
            let dtype = tensor.dtype;
            crate::ops::common::reduce_all(stringify!($name), tensor, dtype)
        }
    )*};
}

pub(crate) use {binary_ops, cmp_elem_ops, cmp_ops, reduce_all_ops, reduce_dim_ops, scalar_ops, scan_ops, unary_ops};
