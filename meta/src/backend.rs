//! `Meta`: the backend type, its associated types and the backend-level calls.

use burn::tensor::backend::{Backend, BackendTypes, DTypeUsage, DTypeUsageSet};
use burn::tensor::quantization::{QTensorPrimitive, QuantScheme};
use burn::tensor::{BoolStore, DType, Shape, TensorMetadata};

use crate::device::MetaDevice;
use crate::tensor::MetaTensor;

/// A Burn backend that computes shapes and dtypes only, as Burn's Flex backend would, and logs
/// every op's cost on its device ([`MetaDevice::costs`]). A whole training step of a large
/// model runs in milliseconds, so it can check shapes and count flops and bytes before a real
/// run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Meta;

impl BackendTypes for Meta {
    type Device = MetaDevice;
    type FloatTensorPrimitive = MetaTensor;
    /// Flex's default float element.
    type FloatElem = f32;
    type IntTensorPrimitive = MetaTensor;
    /// Flex's default int element.
    type IntElem = i32;
    type BoolTensorPrimitive = MetaTensor;
    /// Flex's bool element.
    type BoolElem = bool;
    type QuantizedTensorPrimitive = NoQuantization;
}

impl Backend for Meta {
    fn name(device: &MetaDevice) -> String {
        format!("meta#{}", device.id())
    }

    /// Nothing is drawn: random ops only produce shapes.
    fn seed(_device: &MetaDevice, _seed: u64) {}

    /// The same dtype support as Flex, so code that asks gets the answers it would on Flex.
    fn dtype_usage(_device: &MetaDevice, dtype: DType) -> DTypeUsageSet {
        match dtype {
            DType::F64 | DType::F32 | DType::F16 | DType::BF16 => DTypeUsage::Storage | DTypeUsage::Arithmetic,
            DType::I64 | DType::I32 | DType::I16 | DType::I8 => DTypeUsage::Storage | DTypeUsage::Arithmetic,
            DType::U64 | DType::U32 | DType::U16 | DType::U8 => DTypeUsage::Storage | DTypeUsage::Arithmetic,
            DType::Bool(BoolStore::Native | BoolStore::U8) => DTypeUsage::Storage | DTypeUsage::Arithmetic,
            DType::QFloat(_) => DTypeUsage::Storage.into(),
            _ => DTypeUsageSet::empty(),
        }
    }

    fn device_count(_type_id: u16) -> usize {
        1
    }
}

/// The quantized tensor type of `Meta`; never constructed (quantized ops panic).
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
