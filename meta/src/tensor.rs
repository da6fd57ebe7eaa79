//! `MetaTensor`: the primitive of every Meta tensor kind (float, int, bool). A shape, a dtype
//! and a device; no data.

use burn::tensor::{DType, Shape, TensorMetadata};

use crate::cost::bytes_of;
use crate::device::MetaDevice;

/// A tensor without data: what Burn's Flex backend would hold, minus the values. The device is
/// kept so that ops know whose cost log to append to and `*_device` can answer.
#[derive(Debug, Clone)]
pub struct MetaTensor {
    /// The tensor's shape.
    pub shape: Shape,
    /// The element type its values would have.
    pub dtype: DType,
    /// The device it lives on (and whose log its ops append to).
    pub device: MetaDevice,
}

impl MetaTensor {
    /// A tensor of `shape` and `dtype` on `device`.
    pub fn new(shape: Shape, dtype: DType, device: MetaDevice) -> Self {
        Self { shape, dtype, device }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.num_elements()
    }

    /// Bytes its values would take.
    pub fn bytes(&self) -> u64 {
        bytes_of(self.numel(), self.dtype)
    }

    /// A tensor on the same device with another shape and dtype (an op's output).
    pub(crate) fn like(&self, shape: Shape, dtype: DType) -> Self {
        Self { shape, dtype, device: self.device.clone() }
    }

    /// Logs `op` on this tensor's device: `flops` and the bytes of `inputs` read and of `out`
    /// written; returns `out`.
    pub(crate) fn log(op: &'static str, inputs: &[&MetaTensor], out: MetaTensor, flops: u64) -> MetaTensor {
        let device = inputs.first().map(|t| &t.device).unwrap_or(&out.device);
        device.record(op, flops, bytes_read(inputs), out.bytes());
        out
    }

    /// Logs `op` as elementwise (flops = output elements) and returns `out`.
    pub(crate) fn elementwise(op: &'static str, inputs: &[&MetaTensor], out: MetaTensor) -> MetaTensor {
        let flops = out.numel() as u64;
        Self::log(op, inputs, out, flops)
    }

    /// Logs `op` as a reduction (flops = elements of the first input) and returns `out`.
    pub(crate) fn reduction(op: &'static str, inputs: &[&MetaTensor], out: MetaTensor) -> MetaTensor {
        let flops = inputs.first().map_or(0, |t| t.numel() as u64);
        Self::log(op, inputs, out, flops)
    }

    /// Logs `op` as pure data movement (0 flops, bytes counted) and returns `out`.
    pub(crate) fn movement(op: &'static str, inputs: &[&MetaTensor], out: MetaTensor) -> MetaTensor {
        Self::log(op, inputs, out, 0)
    }

    /// Logs `op` as a view (0 flops, 0 bytes: a real backend would not copy) and returns `out`.
    pub(crate) fn view(op: &'static str, input: &MetaTensor, out: MetaTensor) -> MetaTensor {
        input.device.record(op, 0, 0, 0);
        out
    }
}

impl TensorMetadata for MetaTensor {
    fn dtype(&self) -> DType {
        self.dtype
    }

    fn shape(&self) -> Shape {
        self.shape.clone()
    }

    fn rank(&self) -> usize {
        self.shape.num_dims()
    }
}

/// Bytes of all of `inputs`, whole.
fn bytes_read(inputs: &[&MetaTensor]) -> u64 {
    inputs.iter().map(|t| t.bytes()).sum()
}
