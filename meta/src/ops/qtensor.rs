//! Quantization is not supported on `Meta`: every quantized op panics saying so.

use burn::tensor::backend::ExecutionError;
use burn::tensor::ops::QTensorOps;
use burn::tensor::quantization::{QuantScheme, QuantizationParametersPrimitive};
use burn::tensor::{FloatDType, Shape, Slice, TensorData};

use crate::backend::Meta;
use crate::device::MetaDevice;
use crate::tensor::MetaTensor;

/// The quantized tensor type of `Meta` (defined beside it; named here, where its ops refuse).
pub use crate::backend::NoQuantization;

const UNSUPPORTED: &str =
    "quantization is not supported on Meta (owt-meta): it only tracks shapes of float, int and bool tensors";

type Q = NoQuantization;

impl QTensorOps<Self> for Meta {
    fn q_from_data(_data: TensorData, _device: &MetaDevice) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn quantize(_tensor: MetaTensor, _scheme: &QuantScheme, _qparams: QuantizationParametersPrimitive<Self>) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn dequantize(_tensor: Q, _dtype: FloatDType) -> MetaTensor {
        panic!("{UNSUPPORTED}")
    }
    fn q_device(_tensor: &Q) -> MetaDevice {
        panic!("{UNSUPPORTED}")
    }
    fn q_to_device(_tensor: Q, _device: &MetaDevice) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn q_reshape(_tensor: Q, _shape: Shape) -> Q {
        panic!("{UNSUPPORTED}")
    }
    async fn q_into_data(_tensor: Q) -> Result<TensorData, ExecutionError> {
        panic!("{UNSUPPORTED}")
    }
    fn q_expand(_tensor: Q, _shape: Shape) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn q_swap_dims(_tensor: Q, _dim1: usize, _dim2: usize) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn q_permute(_tensor: Q, _axes: &[usize]) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn q_flip(_tensor: Q, _axes: &[usize]) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn q_select(_tensor: Q, _dim: usize, _indices: MetaTensor) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn q_slice(_tensor: Q, _slices: &[Slice]) -> Q {
        panic!("{UNSUPPORTED}")
    }
}
