//! NCCL's all-reduce across GPUs, through CubeCL's CUDA runtime: what a mesh whose ranks sit
//! on distinct GPUs uses to sum gradients (instead of its ring of point-to-point transfers).
//! Each rank's piece is copied into a fresh contiguous buffer that NCCL sums in place on every
//! GPU ([`buffer`](super::buffer): the count is the buffer's, here counted by CubeCL from the same size).

use super::plain::CudaPlain as Plain;
use crate::DeviceAllReduce;
use burn::tensor::backend::Device as _;
use burn_cubecl::cubecl::server::ReduceOperation;
use burn_cubecl::tensor::CubeTensor;
use cubecl_cuda::CudaRuntime;

/// NCCL's all-reduce (sum) over the GPUs of a mesh's ranks.
#[derive(Debug, Clone, Copy, Default)]
pub struct NcclAllReduce;

impl DeviceAllReduce<Plain> for NcclAllReduce {
    fn all_reduce_sum(&self, pieces: Vec<CubeTensor<CudaRuntime>>) -> Vec<CubeTensor<CudaRuntime>> {
        let ids: Vec<_> = pieces.iter().map(|t| t.device.to_id()).collect();
        let sums: Vec<CubeTensor<CudaRuntime>> =
            super::buffer::nccl_buffers(pieces).into_iter().map(|b| b.tensor).collect();
        for sum in &sums {
            // CubeCL counts from the buffer's size (cubecl-cuda 0.10.0 server.rs
            // `get_nccl_dtype_count(dtype, resource_src.size)`): the copy's, exactly its elements.
            let mut client = sum.client.clone();
            client.all_reduce(
                sum.handle.clone(),
                sum.handle.clone(),
                sum.dtype.into(),
                ids.clone(),
                ReduceOperation::Sum,
            );
        }
        for sum in &sums {
            sum.client.sync_collective();
        }
        sums
    }
}
