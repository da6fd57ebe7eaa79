//! The quantized tensor type of `Hybrid<B>`: a leaf type (no op code), so `backend.rs` can name
//! it without importing the op files that implement `Hybrid`.

use burn::tensor::quantization::{QTensorPrimitive, QuantScheme};
use burn::tensor::{DType, Shape, TensorMetadata};

/// The quantized tensor type of `Hybrid`; never constructed (quantized ops panic).
#[derive(Debug, Clone)]
pub struct NoQuantization {
    scheme: QuantScheme,
    shape: Shape,
}

impl TensorMetadata for NoQuantization {
    fn dtype(&self) -> DType {
        DType::QFloat(self.scheme)
    }
    fn shape(&self) -> Shape {
        self.shape.clone()
    }
}

impl QTensorPrimitive for NoQuantization {
    fn scheme(&self) -> &QuantScheme {
        &self.scheme
    }
}
