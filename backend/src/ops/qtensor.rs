//! Quantization is not supported on `Hybrid`: every quantized op panics saying so.

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::QTensorOps;
use burn::tensor::quantization::{QuantScheme, QuantizationParametersPrimitive};
use burn::tensor::{FloatDType, IntDType, Shape, Slice, TensorData, TensorPrimitive};

use crate::backend::NoQuantization;
use crate::backend::{Hybrid, HybridFloat, HybridInt};
use crate::mesh::MeshDevice;

const UNSUPPORTED: &str =
    "quantization is not supported on Hybrid (owt-hybrid): keep quantized tensors on the inner backend";

type Q = NoQuantization;

impl<B: Backend> QTensorOps<Self> for Hybrid<B> {
    fn q_from_data(_data: TensorData, _device: &MeshDevice<B::Device>) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn quantize(_tensor: HybridFloat<B>, _scheme: &QuantScheme, _qparams: QuantizationParametersPrimitive<Self>) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn dequantize(_tensor: Q, _dtype: FloatDType) -> HybridFloat<B> {
        panic!("{UNSUPPORTED}")
    }
    fn q_device(_tensor: &Q) -> MeshDevice<B::Device> {
        panic!("{UNSUPPORTED}")
    }
    fn q_to_device(_tensor: Q, _device: &MeshDevice<B::Device>) -> Q {
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
    fn q_select(_tensor: Q, _dim: usize, _indices: HybridInt<B>) -> Q {
        panic!("{UNSUPPORTED}")
    }
    fn q_slice(_tensor: Q, _slices: &[Slice]) -> Q {
        panic!("{UNSUPPORTED}")
    }

    // Quantized ops Burn gives a default body (which would end in one of the panics above):
    // said the same way, by name.

    fn quantize_dynamic(_tensor: HybridFloat<B>, _scheme: &QuantScheme) -> Q {
        panic!("{UNSUPPORTED}")
    }

    fn q_matmul(_lhs: TensorPrimitive<Self>, _rhs: TensorPrimitive<Self>) -> TensorPrimitive<Self> {
        panic!("{UNSUPPORTED}")
    }

    fn q_gather(_dim: usize, _tensor: Q, _indices: HybridInt<B>) -> Q {
        panic!("{UNSUPPORTED}")
    }

    fn q_argmax(_tensor: Q, _dim: usize, _out_dtype: IntDType) -> HybridInt<B> {
        panic!("{UNSUPPORTED}")
    }

    fn q_argmin(_tensor: Q, _dim: usize, _out_dtype: IntDType) -> HybridInt<B> {
        panic!("{UNSUPPORTED}")
    }
}
