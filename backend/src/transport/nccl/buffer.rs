//! The buffers NCCL sums in place and the element count it is given, in one place for both
//! NCCL paths: inside one process (CubeCL's own all-reduce, `NcclAllReduce`) and across
//! processes (owt's communicator, `NcclWorld`).
//!
//! A CubeCL tensor's buffer is not its shape's elements laid end to end. On CUDA, CubeCL
//! allocates in its optimised layout (cubecl-runtime 0.10.0 `allocator.rs`,
//! `PitchedMemoryLayoutPolicy::apply`): each row of the last dimension is padded to
//! `optimal_align` bytes, the next power of two of its width clamped to 16..512 (cubecl-cuda
//! 0.10.0 `runtime.rs` sets the 512 from `cuMemAllocPitch`'s alignment). A conv weight's rows
//! of 11, 5 or 3 floats take 16, 8 and 4 slots, so a count of `shape.num_elements()` covers the
//! padding of the first rows and leaves the last rows' real elements out of the sum. CubeCL's
//! all-reduce takes its count from the buffer's size (cubecl-cuda `server.rs`,
//! `get_nccl_dtype_count(dtype, resource.size)`); owt's must too.
//!
//! So every piece is first copied into a fresh contiguous buffer of exactly its elements (the
//! pieces may be views, padded, or shared with the autodiff graph, and NCCL writes in place),
//! and the count NCCL is given is that buffer's size in elements ([`count_in`]): the bytes the
//! handle uses (`Handle::size_in_used`, what the server's resource spans), not `Handle::size`,
//! which is the whole allocation rounded up to 512 bytes.

use burn::tensor::{DType, TensorMetadata};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeRuntime;
use cubecl_runtime::server::MemoryLayoutDescriptor;

/// A piece copied for NCCL: a contiguous tensor that owns its buffer, and the number of
/// elements of its dtype in that buffer (what NCCL is told to sum).
pub struct NcclBuffer<R: CubeRuntime> {
    /// The copy, summed in place.
    pub tensor: CubeTensor<R>,
    /// Elements in the copy's buffer, from the buffer's size.
    pub count: usize,
}

/// How the copy of a tensor of `shape` and `dtype` is allocated: contiguous (no row padding),
/// so its buffer holds exactly the tensor's elements.
pub fn copy_descriptor(shape: &burn::tensor::Shape, dtype: DType) -> MemoryLayoutDescriptor {
    MemoryLayoutDescriptor::contiguous(shape.clone(), dtype.size())
}

/// The number of `dtype` elements in a buffer of `bytes` bytes: what NCCL's count must be for
/// the sum to cover the buffer. Panics if the size is not a whole number of elements (a
/// buffer of another dtype: a bug).
pub fn count_in(bytes: u64, dtype: DType) -> usize {
    let size = dtype.size() as u64;
    assert!(
        bytes % size == 0,
        "Hybrid: NCCL buffer of {bytes} bytes is not a whole number of {dtype:?} elements of {size} bytes"
    );
    (bytes / size) as usize
}

/// A fresh contiguous copy of each piece ([`copy_descriptor`]), on its own device, with its
/// count ([`count_in`] of the copy's buffer).
pub fn nccl_buffers<R: CubeRuntime>(pieces: Vec<CubeTensor<R>>) -> Vec<NcclBuffer<R>> {
    pieces
        .into_iter()
        .map(|piece| {
            let (client, device, dtype, shape) =
                (piece.client.clone(), piece.device.clone(), piece.dtype, piece.shape());
            let layout = client.empty_tensors(vec![copy_descriptor(&shape, dtype)]).remove(0);
            let copy = CubeTensor::new_contiguous(client.clone(), device, shape, layout.memory, dtype);
            burn_cubecl::cubecl::std::tensor::copy_into(&client, piece.binding(), copy.clone().binding(), dtype.into());
            let count = count_in(copy.handle.size_in_used(), dtype);
            NcclBuffer { tensor: copy, count }
        })
        .collect()
}
