//! # owt-hybrid
//!
//! `Hybrid<B>`: a Burn backend wrapper whose device is a mesh of K devices ([`MeshDevice`])
//! and whose tensors carry a placement ([`Placement`]: Replicate, Shard(dim), Partial). Conv
//! ops on batch-sharded inputs run as data-parallel replicas, matmuls against column-split
//! weights run model-parallel, and every byte that crosses ranks goes through
//! [`collectives`], which records it in the mesh's ledger ([`LedgerSnapshot`]). Knows
//! nothing about AlexNet: the rules are per op and per placement (`backend/README.md`).

mod api;
mod backend;
pub mod collectives;
mod differentiable;
mod dispatch;
mod dtensor;
mod exchange;
mod kind;
mod ledger;
mod mesh;
#[doc(hidden)]
pub mod mutation;
pub mod ops;
mod phase_marker;
mod placement;
mod quantization;
mod scheme;
mod strategy;
mod transport;
mod upload;

pub use api::{partial_from_summands, Distributed};
pub use backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
pub use dtensor::DTensor;
pub use kind::{BoolKind, FloatKind, IntKind, ShardKind};
pub use ledger::{LedgerSnapshot, Traffic, UNLABELLED};
pub use mesh::{MeshDevice, PhaseGuard};
pub use phase_marker::mark_backward_phase;
pub use placement::{can_shard, shard_ranges, shard_sizes, Placement, ReduceOp};
pub use scheme::Exchange;
pub use transport::{DeviceAllReduce, RuntimeCapabilities, Transport};
pub use upload::Upload;

/// The placement rule table (markdown) as the registry decides it for example inputs: what
/// `backend/README.md` shows between its `rules` markers (a test keeps them equal).
pub fn rule_table() -> String {
    strategy::table::markdown()
}
