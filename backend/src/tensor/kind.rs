//! The three kinds of inner tensor a distributed tensor can hold (float, int, bool), behind one
//! interface, so placements and collectives are written once.

use burn::tensor::backend::Backend;
use burn::tensor::{DType, Shape, Slice, TensorMetadata};

use crate::transport::Transport;

/// What the placement machinery needs from an inner tensor kind.
pub trait ShardKind<B: Backend>: 'static {
    /// The inner backend's primitive of this kind.
    type Prim: TensorMetadata + 'static;
    /// "float", "int" or "bool", for messages.
    const NAME: &'static str;
    /// Moves a tensor to another inner device by `transport` (nothing moves when the device
    /// is its own).
    fn to_device(p: Self::Prim, device: &B::Device, transport: Transport) -> Self::Prim;
    /// The inner device a tensor lives on.
    fn device(p: &Self::Prim) -> B::Device;
    /// Reads a tensor back to host memory (what crosses processes).
    fn into_host(p: Self::Prim) -> burn::tensor::TensorData;
    /// Uploads host data to `device`, keeping its dtype.
    fn from_host(data: burn::tensor::TensorData, device: &B::Device) -> Self::Prim;
    /// A tensor of `shape` and `dtype` on `device` whose values are not set: what arrives of a
    /// piece of a backend that holds no values (owt-meta's shape-only devices).
    fn unset(shape: Shape, dtype: DType, device: &B::Device) -> Self::Prim;
    /// Concatenates along `dim`.
    fn cat(ps: Vec<Self::Prim>, dim: usize) -> Self::Prim;
    /// Slices.
    fn slice(p: Self::Prim, slices: &[Slice]) -> Self::Prim;
    /// Reshapes.
    fn reshape(p: Self::Prim, shape: Shape) -> Self::Prim;
    /// Elementwise sum (logical or for bool), for reductions of partial values.
    fn add(a: Self::Prim, b: Self::Prim) -> Self::Prim;
    /// Elementwise maximum (logical or for bool).
    fn max(a: Self::Prim, b: Self::Prim) -> Self::Prim;
    /// A zero tensor like `p` (the neutral summand: negative zero for floats).
    fn zeros_like(p: &Self::Prim) -> Self::Prim {
        Self::zeros_shaped(p, p.shape())
    }
    /// A zero tensor (false for bool) of `shape` like `p` in device and dtype.
    fn zeros_shaped(p: &Self::Prim, shape: Shape) -> Self::Prim;
    /// `p` with zero (false) wherever `mask` is true: a rank's summand outside its own slice.
    fn zero_where(p: Self::Prim, mask: B::BoolTensorPrimitive) -> Self::Prim;
    /// `p` in `dtype`: float pieces are converted (rounded to a 16-bit wire precision, widened
    /// back on arrival); other kinds never change dtype on the wire and are returned as they are.
    fn cast(p: Self::Prim, _dtype: DType) -> Self::Prim {
        p
    }
    /// The sum of `pieces` (one per rank) on every rank, done by the inner backend across its
    /// devices where the mesh has such an all-reduce for this kind; the pieces back otherwise.
    fn device_all_reduce(
        _mesh: &crate::mesh::MeshDevice<B::Device>,
        pieces: Vec<Self::Prim>,
    ) -> Result<Vec<Self::Prim>, Vec<Self::Prim>> {
        Err(pieces)
    }
}

/// Whether `B`'s tensors hold values: every backend but owt-meta's shape-only [`owt_meta::Meta`],
/// whose pieces cross processes as their shapes ([`crate::transport::wire::Payload::ShapeOnly`]).
pub(crate) fn holds_values<B: Backend>() -> bool {
    std::any::TypeId::of::<B>() != std::any::TypeId::of::<owt_meta::Meta>()
}

/// Float tensors.
#[derive(Debug, Clone, Copy)]
pub struct FloatKind;
/// Int tensors.
#[derive(Debug, Clone, Copy)]
pub struct IntKind;
/// Bool tensors.
#[derive(Debug, Clone, Copy)]
pub struct BoolKind;

/// Reads a tensor back to the host, for [`Transport::HostStaged`]: CubeCL 0.10 has no
/// server-to-server copy for wgpu (its `send` is unimplemented), and a host round trip works
/// on every backend.
fn read_host(
    read: impl std::future::Future<Output = Result<burn::tensor::TensorData, burn::tensor::backend::ExecutionError>>,
) -> burn::tensor::TensorData {
    burn::tensor::read_sync(read)
        .unwrap_or_else(|e| panic!("Hybrid: reading a shard back for a transfer failed: {e:?}"))
}

fn float_dtype(dtype: DType) -> burn::tensor::FloatDType {
    dtype.into()
}

fn bool_dtype<B: Backend>() -> burn::tensor::BoolDType {
    <B::BoolElem as burn::tensor::Element>::dtype().into()
}

fn int_dtype(dtype: DType) -> burn::tensor::IntDType {
    dtype.into()
}

impl<B: Backend> ShardKind<B> for FloatKind {
    type Prim = B::FloatTensorPrimitive;
    const NAME: &'static str = "float";
    fn cast(p: Self::Prim, dtype: DType) -> Self::Prim {
        if p.dtype() == dtype {
            p
        } else {
            B::float_cast(p, float_dtype(dtype))
        }
    }
    fn to_device(p: Self::Prim, device: &B::Device, transport: Transport) -> Self::Prim {
        if B::float_device(&p) == *device {
            return p;
        }
        match transport {
            Transport::HostStaged => B::float_from_data(read_host(B::float_into_data(p)), device),
            Transport::DeviceToDevice => B::float_to_device(p, device),
        }
    }
    fn device(p: &Self::Prim) -> B::Device {
        B::float_device(p)
    }
    fn into_host(p: Self::Prim) -> burn::tensor::TensorData {
        read_host(B::float_into_data(p))
    }
    fn from_host(data: burn::tensor::TensorData, device: &B::Device) -> Self::Prim {
        B::float_from_data(data, device)
    }
    fn unset(shape: Shape, dtype: DType, device: &B::Device) -> Self::Prim {
        B::float_empty(shape, device, float_dtype(dtype))
    }
    fn cat(ps: Vec<Self::Prim>, dim: usize) -> Self::Prim {
        B::float_cat(ps, dim)
    }
    fn slice(p: Self::Prim, slices: &[Slice]) -> Self::Prim {
        B::float_slice(p, slices)
    }
    fn reshape(p: Self::Prim, shape: Shape) -> Self::Prim {
        B::float_reshape(p, shape)
    }
    fn add(a: Self::Prim, b: Self::Prim) -> Self::Prim {
        B::float_add(a, b)
    }
    /// The larger of `a` and `b`, a NaN in either winning (as the inner backends' own
    /// maxima propagate it).
    fn max(a: Self::Prim, b: Self::Prim) -> Self::Prim {
        let a_smaller = B::float_lower(a.clone(), b.clone(), bool_dtype::<B>());
        let take_b = B::bool_or(a_smaller, B::float_is_nan(b.clone(), bool_dtype::<B>()));
        B::float_mask_where(a, take_b, b)
    }
    /// Negative zeros: the additive identity of IEEE floats (`-0 + x` is `x` for every `x`,
    /// `-0` included, where `+0 + -0` would lose the sign).
    fn zeros_shaped(p: &Self::Prim, shape: Shape) -> Self::Prim {
        B::float_full(shape, burn::tensor::Scalar::Float(-0.0), &B::float_device(p), float_dtype(p.dtype()))
    }
    fn zero_where(p: Self::Prim, mask: B::BoolTensorPrimitive) -> Self::Prim {
        B::float_mask_fill(p, mask, burn::tensor::Scalar::Float(-0.0))
    }
    fn device_all_reduce(
        mesh: &crate::mesh::MeshDevice<B::Device>,
        pieces: Vec<Self::Prim>,
    ) -> Result<Vec<Self::Prim>, Vec<Self::Prim>> {
        match mesh.device_all_reduce::<B>() {
            Some(all_reduce) if mesh.processes() == 1 || all_reduce.spans_processes() => {
                Ok(all_reduce.all_reduce_sum(pieces))
            }
            _ => Err(pieces),
        }
    }
}

impl<B: Backend> ShardKind<B> for IntKind {
    type Prim = B::IntTensorPrimitive;
    const NAME: &'static str = "int";
    fn to_device(p: Self::Prim, device: &B::Device, transport: Transport) -> Self::Prim {
        if B::int_device(&p) == *device {
            return p;
        }
        match transport {
            Transport::HostStaged => B::int_from_data(read_host(B::int_into_data(p)), device),
            Transport::DeviceToDevice => B::int_to_device(p, device),
        }
    }
    fn device(p: &Self::Prim) -> B::Device {
        B::int_device(p)
    }
    fn into_host(p: Self::Prim) -> burn::tensor::TensorData {
        read_host(B::int_into_data(p))
    }
    fn from_host(data: burn::tensor::TensorData, device: &B::Device) -> Self::Prim {
        B::int_from_data(data, device)
    }
    fn unset(shape: Shape, dtype: DType, device: &B::Device) -> Self::Prim {
        B::int_empty(shape, device, int_dtype(dtype))
    }
    fn cat(ps: Vec<Self::Prim>, dim: usize) -> Self::Prim {
        B::int_cat(ps, dim)
    }
    fn slice(p: Self::Prim, slices: &[Slice]) -> Self::Prim {
        B::int_slice(p, slices)
    }
    fn reshape(p: Self::Prim, shape: Shape) -> Self::Prim {
        B::int_reshape(p, shape)
    }
    fn add(a: Self::Prim, b: Self::Prim) -> Self::Prim {
        B::int_add(a, b)
    }
    fn max(a: Self::Prim, b: Self::Prim) -> Self::Prim {
        let a_smaller = B::int_lower(a.clone(), b.clone(), bool_dtype::<B>());
        B::int_mask_where(a, a_smaller, b)
    }
    fn zeros_shaped(p: &Self::Prim, shape: Shape) -> Self::Prim {
        B::int_zeros(shape, &B::int_device(p), int_dtype(p.dtype()))
    }
    fn zero_where(p: Self::Prim, mask: B::BoolTensorPrimitive) -> Self::Prim {
        B::int_mask_fill(p, mask, burn::tensor::Scalar::Int(0))
    }
}

impl<B: Backend> ShardKind<B> for BoolKind {
    type Prim = B::BoolTensorPrimitive;
    const NAME: &'static str = "bool";
    fn to_device(p: Self::Prim, device: &B::Device, transport: Transport) -> Self::Prim {
        if B::bool_device(&p) == *device {
            return p;
        }
        match transport {
            Transport::HostStaged => B::bool_from_data(read_host(B::bool_into_data(p)), device),
            Transport::DeviceToDevice => B::bool_to_device(p, device),
        }
    }
    fn device(p: &Self::Prim) -> B::Device {
        B::bool_device(p)
    }
    fn into_host(p: Self::Prim) -> burn::tensor::TensorData {
        read_host(B::bool_into_data(p))
    }
    fn from_host(data: burn::tensor::TensorData, device: &B::Device) -> Self::Prim {
        B::bool_from_data(data, device)
    }
    fn unset(shape: Shape, dtype: DType, device: &B::Device) -> Self::Prim {
        B::bool_empty(shape, device, dtype.into())
    }
    fn cat(ps: Vec<Self::Prim>, dim: usize) -> Self::Prim {
        B::bool_cat(ps, dim)
    }
    fn slice(p: Self::Prim, slices: &[Slice]) -> Self::Prim {
        B::bool_slice(p, slices)
    }
    fn reshape(p: Self::Prim, shape: Shape) -> Self::Prim {
        B::bool_reshape(p, shape)
    }
    fn add(a: Self::Prim, b: Self::Prim) -> Self::Prim {
        B::bool_or(a, b)
    }
    fn max(a: Self::Prim, b: Self::Prim) -> Self::Prim {
        B::bool_or(a, b)
    }
    fn zeros_shaped(p: &Self::Prim, shape: Shape) -> Self::Prim {
        B::bool_zeros(shape, &B::bool_device(p), p.dtype().into())
    }
    fn zero_where(p: Self::Prim, mask: B::BoolTensorPrimitive) -> Self::Prim {
        B::bool_and(p, B::bool_not(mask))
    }
}
