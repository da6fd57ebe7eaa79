// Patched for owt (vendor/README.md): this whole file.
//! Kernels of a library outside CubeCL (cuDNN's convolutions, cuBLASLt's matmuls) offered a
//! backend's 2-D convolutions and matmuls before burn-cubecl's own kernels: one registration
//! per runtime, asked at the top of the ops that take them, so every way an op reaches
//! `CubeBackend` (plain, through burn-fusion, through a wrapper backend) meets the same choice.
//! An implementation that declines (returns `None`) leaves the op to burn-cubecl.

use core::any::{Any, TypeId};
use std::sync::{Arc, RwLock};

use burn_backend::ops::ConvOptions;

use crate::{CubeRuntime, tensor::CubeTensor};

/// Convolutions and matmuls of a library outside CubeCL for runtime `R`; each returns the
/// result, or `None` to leave the op to burn-cubecl's kernels.
pub trait ExternalKernels<R: CubeRuntime>: Send + Sync + 'static {
    /// `ModuleOps::conv2d`.
    fn conv2d(
        &self,
        x: &CubeTensor<R>,
        weight: &CubeTensor<R>,
        bias: Option<&CubeTensor<R>>,
        options: &ConvOptions<2>,
    ) -> Option<CubeTensor<R>>;

    /// `ModuleOps::conv2d_x_backward`.
    fn conv2d_x_backward(
        &self,
        x: &CubeTensor<R>,
        weight: &CubeTensor<R>,
        output_grad: &CubeTensor<R>,
        options: &ConvOptions<2>,
    ) -> Option<CubeTensor<R>>;

    /// `ModuleOps::conv2d_weight_backward`.
    fn conv2d_weight_backward(
        &self,
        x: &CubeTensor<R>,
        weight: &CubeTensor<R>,
        output_grad: &CubeTensor<R>,
        options: &ConvOptions<2>,
    ) -> Option<CubeTensor<R>>;

    /// `FloatTensorOps::float_matmul`.
    fn matmul(&self, lhs: &CubeTensor<R>, rhs: &CubeTensor<R>) -> Option<CubeTensor<R>>;

    /// Whether [`ExternalKernels::matmul`] takes matmuls: burn-fusion then leaves matmuls
    /// unfused (a fused matmul runs burn-cubecl's kernel), read when a device's fusion
    /// server starts.
    fn takes_matmuls(&self) -> bool;
}

type Registry = Vec<(TypeId, Arc<dyn Any + Send + Sync>)>;

static REGISTRY: RwLock<Registry> = RwLock::new(Vec::new());

/// Makes `kernels` the external kernels of runtime `R` from now on, in place of any before.
pub fn register<R: CubeRuntime>(kernels: Arc<dyn ExternalKernels<R>>) {
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    registry.retain(|(id, _)| *id != TypeId::of::<R>());
    registry.push((TypeId::of::<R>(), Arc::new(kernels)));
}

/// Leaves every op of runtime `R` to burn-cubecl's kernels from now on.
pub fn unregister<R: CubeRuntime>() {
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    registry.retain(|(id, _)| *id != TypeId::of::<R>());
}

/// The external kernels registered for runtime `R`, if any.
pub fn get<R: CubeRuntime>() -> Option<Arc<dyn ExternalKernels<R>>> {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    registry
        .iter()
        .find(|(id, _)| *id == TypeId::of::<R>())
        .and_then(|(_, kernels)| kernels.downcast_ref::<Arc<dyn ExternalKernels<R>>>())
        .cloned()
}
