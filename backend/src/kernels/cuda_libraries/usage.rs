//! How many calls each kind of kernel took ([`Usage`], what `owt bench --json` reports), from
//! the process's counters that the libraries' hooks bump.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Calls taken by each kind of kernel since the process started (or since [`Usage::reset`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Convolution computations (forward, input or weight gradient) run by cuDNN.
    pub cudnn_convs: u64,
    /// Convolution computations left to CubeCL's kernels.
    pub cubecl_convs: u64,
    /// Weight gradients of strided convolutions taken by owt's unfolded GEMM.
    pub owt_weight_gradients: u64,
    /// Matmuls run by cuBLASLt.
    pub cublaslt_matmuls: u64,
    /// Matmuls left to CubeCL's kernels.
    pub cubecl_matmuls: u64,
    /// cuDNN algorithm searches run (problems not in the algorithm cache).
    pub cudnn_searches: u64,
}

/// The process's counters behind [`Usage`].
pub(crate) struct Counters {
    pub(crate) cudnn_convs: AtomicU64,
    pub(crate) cubecl_convs: AtomicU64,
    pub(crate) owt_weight_gradients: AtomicU64,
    pub(crate) cublaslt_matmuls: AtomicU64,
    pub(crate) cubecl_matmuls: AtomicU64,
    pub(crate) cudnn_searches: AtomicU64,
}

pub(crate) static COUNTERS: Counters = Counters {
    cudnn_convs: AtomicU64::new(0),
    cubecl_convs: AtomicU64::new(0),
    owt_weight_gradients: AtomicU64::new(0),
    cublaslt_matmuls: AtomicU64::new(0),
    cubecl_matmuls: AtomicU64::new(0),
    cudnn_searches: AtomicU64::new(0),
};

impl Usage {
    /// The counts so far.
    pub fn now() -> Usage {
        let c = &COUNTERS;
        Usage {
            cudnn_convs: c.cudnn_convs.load(Ordering::Relaxed),
            cubecl_convs: c.cubecl_convs.load(Ordering::Relaxed),
            owt_weight_gradients: c.owt_weight_gradients.load(Ordering::Relaxed),
            cublaslt_matmuls: c.cublaslt_matmuls.load(Ordering::Relaxed),
            cubecl_matmuls: c.cubecl_matmuls.load(Ordering::Relaxed),
            cudnn_searches: c.cudnn_searches.load(Ordering::Relaxed),
        }
    }

    /// Counts from zero again.
    pub fn reset() {
        let c = &COUNTERS;
        for counter in [
            &c.cudnn_convs,
            &c.cubecl_convs,
            &c.owt_weight_gradients,
            &c.cublaslt_matmuls,
            &c.cubecl_matmuls,
            &c.cudnn_searches,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// The counts since `earlier`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            cudnn_convs: self.cudnn_convs - earlier.cudnn_convs,
            cubecl_convs: self.cubecl_convs - earlier.cubecl_convs,
            owt_weight_gradients: self.owt_weight_gradients - earlier.owt_weight_gradients,
            cublaslt_matmuls: self.cublaslt_matmuls - earlier.cublaslt_matmuls,
            cubecl_matmuls: self.cubecl_matmuls - earlier.cubecl_matmuls,
            cudnn_searches: self.cudnn_searches - earlier.cudnn_searches,
        }
    }
}
