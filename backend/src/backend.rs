//! `Hybrid<B>`: the backend type, its associated types and the backend-level calls.

use std::marker::PhantomData;

use burn::tensor::backend::{Backend, BackendTypes, DTypeUsageSet, ExecutionError};
use burn::tensor::quantization::{QTensorPrimitive, QuantScheme};
use burn::tensor::{DType, Shape, TensorData, TensorMetadata};

use crate::mesh::MeshDevice;
use crate::tensor::dtensor::DTensor;
use crate::tensor::kind::{BoolKind, FloatKind, IntKind};

/// A Burn backend over a mesh of `B` devices. Tensors carry a placement; each op picks a rule
/// from its inputs' placements (see the crate's README), and every cross-rank byte goes
/// through [`crate::comm::collectives`].
///
/// ```
/// use burn::backend::Flex;
/// use burn::prelude::*;
/// use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
///
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let x = Tensor::<Hybrid<Flex>, 2>::ones([4, 3], &mesh).distribute(Placement::Shard(0));
/// let w = Tensor::<Hybrid<Flex>, 2>::ones([3, 2], &mesh); // Replicate
/// let y = x.matmul(w); // data parallel: each rank multiplies its 2 rows
/// assert_eq!(y.placement(), Placement::Shard(0));
/// assert_eq!(y.into_data().to_vec::<f32>().unwrap(), vec![3.0; 8]);
/// assert_eq!(mesh.ledger_snapshot().total().bytes, 2 * 2 * 2 * 4); // read back: one gather
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Hybrid<B> {
    _inner: PhantomData<B>,
}

/// Float tensors of `Hybrid<B>`.
pub type HybridFloat<B> = DTensor<B, FloatKind>;
/// Int tensors of `Hybrid<B>`.
pub type HybridInt<B> = DTensor<B, IntKind>;
/// Bool tensors of `Hybrid<B>`.
pub type HybridBool<B> = DTensor<B, BoolKind>;

impl<B: Backend> BackendTypes for Hybrid<B> {
    type Device = MeshDevice<B::Device>;
    type FloatTensorPrimitive = HybridFloat<B>;
    type FloatElem = B::FloatElem;
    type IntTensorPrimitive = HybridInt<B>;
    type IntElem = B::IntElem;
    type BoolTensorPrimitive = HybridBool<B>;
    type BoolElem = B::BoolElem;
    type QuantizedTensorPrimitive = NoQuantization;
}

impl<B: Backend> Backend for Hybrid<B> {
    fn name(device: &Self::Device) -> String {
        format!("hybrid<{}>[{} ranks]", B::name(&device.rank_devices()[0]), device.size())
    }

    /// Seeds every rank's device with the same seed on rank 0's process: random tensors are
    /// drawn there, on rank 0, and broadcast (see `float_random`); other processes never draw,
    /// so their generators are left alone (in a process group of threads they may share one).
    fn seed(device: &Self::Device, seed: u64) {
        if device.is_local(0) {
            for d in device.rank_devices() {
                B::seed(d, seed);
            }
        }
    }

    fn sync(device: &Self::Device) -> Result<(), ExecutionError> {
        for d in device.rank_devices() {
            B::sync(d)?;
        }
        Ok(())
    }

    fn dtype_usage(device: &Self::Device, dtype: DType) -> DTypeUsageSet {
        B::dtype_usage(&device.rank_devices()[0], dtype)
    }

    fn supports_dtype(device: &Self::Device, dtype: DType) -> bool {
        device.rank_devices().iter().all(|d| B::supports_dtype(d, dtype))
    }

    fn device_count(_type_id: u16) -> usize {
        1
    }

    fn ad_enabled(device: &Self::Device) -> bool {
        B::ad_enabled(&device.rank_devices()[0])
    }

    fn memory_cleanup(device: &Self::Device) {
        for d in device.rank_devices() {
            B::memory_cleanup(d);
        }
    }

    fn staging<'a, Iter>(data: Iter, device: &Self::Device)
    where
        Iter: Iterator<Item = &'a mut TensorData>,
    {
        B::staging(data, &device.rank_devices()[0])
    }
}

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
