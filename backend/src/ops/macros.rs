//! Op-definition macros shared by the float, int and bool op files: each expands to trait
//! methods that apply one placement rule, for the kind named first.

/// Elementwise, not linear: `Partial` inputs are summed first.
macro_rules! unary_ops {
    ($kind:ty; $($name:ident),* $(,)?) => {$(
        fn $name(tensor: crate::tensor::dtensor::DTensor<B, $kind>) -> crate::tensor::dtensor::DTensor<B, $kind> {
            crate::ops::common::unary(stringify!($name), tensor, crate::rules::Linearity::None, |p| B::$name(p))
        }
    )*};
}

/// Elementwise with a scalar, not linear.
macro_rules! scalar_ops {
    ($kind:ty; $($name:ident),* $(,)?) => {$(
        fn $name(lhs: crate::tensor::dtensor::DTensor<B, $kind>, rhs: burn::tensor::Scalar) -> crate::tensor::dtensor::DTensor<B, $kind> {
            crate::ops::common::unary(stringify!($name), lhs, crate::rules::Linearity::None, |p| B::$name(p, rhs))
        }
    )*};
}

/// Elementwise binary with broadcasting and the given linearity.
macro_rules! binary_ops {
    ($kind:ty; $($name:ident : $lin:expr),* $(,)?) => {$(
        fn $name(lhs: crate::tensor::dtensor::DTensor<B, $kind>, rhs: crate::tensor::dtensor::DTensor<B, $kind>) -> crate::tensor::dtensor::DTensor<B, $kind> {
            crate::ops::common::binary::<B, $kind, $kind, $kind>(stringify!($name), lhs, rhs, $lin, |a, b| B::$name(a, b))
        }
    )*};
}

/// Comparisons of two tensors, bool out.
macro_rules! cmp_ops {
    ($kind:ty; $($name:ident),* $(,)?) => {$(
        fn $name(lhs: crate::tensor::dtensor::DTensor<B, $kind>, rhs: crate::tensor::dtensor::DTensor<B, $kind>, out_dtype: burn::tensor::BoolDType) -> crate::tensor::dtensor::DTensor<B, crate::tensor::kind::BoolKind> {
            crate::ops::common::binary::<B, $kind, $kind, crate::tensor::kind::BoolKind>(
                stringify!($name), lhs, rhs, crate::rules::Linearity::None, |a, b| B::$name(a, b, out_dtype))
        }
    )*};
}

/// Comparisons with a scalar, bool out.
macro_rules! cmp_elem_ops {
    ($kind:ty; $($name:ident),* $(,)?) => {$(
        fn $name(lhs: crate::tensor::dtensor::DTensor<B, $kind>, rhs: burn::tensor::Scalar, out_dtype: burn::tensor::BoolDType) -> crate::tensor::dtensor::DTensor<B, crate::tensor::kind::BoolKind> {
            crate::ops::common::unary::<B, $kind, crate::tensor::kind::BoolKind>(
                stringify!($name), lhs, crate::rules::Linearity::None, |p| B::$name(p, rhs, out_dtype))
        }
    )*};
}

/// Ops along a dimension that see the whole dimension (cumulative ops): local unless sharded
/// on that dimension, where they are gathered.
macro_rules! along_dim_ops {
    ($kind:ty; $($name:ident),* $(,)?) => {$(
        fn $name(tensor: crate::tensor::dtensor::DTensor<B, $kind>, dim: usize) -> crate::tensor::dtensor::DTensor<B, $kind> {
            crate::ops::common::along_dim::<B, $kind, $kind>(stringify!($name), tensor, dim, |p| B::$name(p, dim))
        }
    )*};
}

pub(crate) use {along_dim_ops, binary_ops, cmp_elem_ops, cmp_ops, scalar_ops, unary_ops};
