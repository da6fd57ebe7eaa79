//! NCCL's all-reduce across GPUs, through CubeCL's CUDA runtime: what a mesh whose ranks sit
//! on distinct GPUs uses to sum gradients (instead of its ring of point-to-point transfers).
//! Each rank's piece is copied into a fresh buffer that NCCL sums in place on every GPU.

use burn::tensor::backend::Device as _;
use burn::tensor::TensorMetadata;
use burn_cubecl::cubecl::server::ReduceOperation;
use burn_cubecl::ops::numeric;
use burn_cubecl::tensor::CubeTensor;
use cubecl_cuda::CudaRuntime;
use owt_hybrid::DeviceAllReduce;

/// The plain CubeCL CUDA backend meshes run on.
type Plain = burn_cubecl::CubeBackend<CudaRuntime, f32, i32, u8>;

/// A contiguous copy of each piece in a buffer of its own, for NCCL to sum in place (the
/// pieces themselves may be views, or shared with the autodiff graph).
pub(crate) fn fresh_copies(pieces: Vec<CubeTensor<CudaRuntime>>) -> Vec<CubeTensor<CudaRuntime>> {
    pieces
        .into_iter()
        .map(|t| {
            let zeros = numeric::zeros_client::<CudaRuntime>(t.client.clone(), t.device.clone(), t.shape(), t.dtype());
            numeric::add(zeros, t)
        })
        .collect()
}

/// NCCL's all-reduce (sum) over the GPUs of a mesh's ranks.
#[derive(Debug, Clone, Copy, Default)]
pub struct NcclAllReduce;

impl DeviceAllReduce<Plain> for NcclAllReduce {
    fn all_reduce_sum(&self, pieces: Vec<CubeTensor<CudaRuntime>>) -> Vec<CubeTensor<CudaRuntime>> {
        let ids: Vec<_> = pieces.iter().map(|t| t.device.to_id()).collect();
        let sums = fresh_copies(pieces);
        for sum in &sums {
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
