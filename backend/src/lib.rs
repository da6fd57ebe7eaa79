#![doc = include_str!("../README.md")]

mod api;
mod backend;
mod comm;
pub mod cost_model;
mod differentiable;
mod dispatch;
mod dry_run;
mod dtensor;
mod exchange;
pub mod grid;
mod grid_layout;
mod grid_plan;
mod kernels;
mod kind;
mod layout;
mod mesh;
#[cfg(feature = "mutation")]
#[doc(hidden)]
pub mod mutation;
#[cfg(not(feature = "mutation"))]
mod mutation;
pub mod ops;
mod params;
mod phase_marker;
mod phases;
mod placement;
mod plan;
mod quantization;
mod scheme;
mod strategy;
pub mod topology;
mod upload;

pub use api::{partial_from_summands, Distributed};
pub use backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
pub use comm::{collectives, nccl, process_group, Collective, CollectiveKey, Phase, Stage};
use comm::{ledger, transport};
pub use cost_model::{predict_on_mesh, DeviceProfile, LayerOrder, PhaseTime, StepPrediction};
pub use dry_run::{CommPlan, DryRun, DryRunReport, LayerTraffic};
pub use dtensor::DTensor;
pub use grid::{GridError, GridMesh, GridPlacement};
pub use grid_layout::GridLayout;
pub use grid_plan::{GridPlan, GridRule};
pub use kernels::{computes_on_flex, conv_grad, max_pool};
pub use kind::{BoolKind, FloatKind, IntKind, ShardKind};
pub use layout::{
    Feed, GradientSync, MeshLayout, ModulePlacement, NoLabels, SingleDevice, StepLabels, StepLayout, StepMesh,
};
pub use ledger::{LedgerSnapshot, Traffic, UNLABELLED};
pub use mesh::{live_meshes, MeshDevice, OuterDim, PhaseGuard, SpanError};
pub use params::{gradient_values, parameter_paths, parameter_values, place_parameters};
pub use phase_marker::mark_backward_phase;
pub use phases::{layer_of, phase_label, split_label, sync_gradients, LayerLabels, PHASES};
pub use placement::{can_shard, shard_ranges, shard_sizes, Placement, ReduceOp};
pub use plan::{pattern_matches, Plan, PlanError, PlanKind, PlanRule};
#[cfg(feature = "mpi")]
pub use process_group::MpiGroup;
pub use process_group::{CollectiveFailed, GroupError, Launch, ProcessGroup, Solo, ThreadedGroup};
pub use scheme::Exchange;
pub use topology::{Pattern, Uplink};
pub use transport::{DeviceAllReduce, RuntimeCapabilities, SendFence, Transport};
pub use upload::{RowSplit, Upload};

/// The traits a program on `Hybrid` calls methods of, in one import (`use owt_hybrid::prelude::*`):
/// placements on tensors, uploads, and the four concerns of a [`StepLayout`].
pub mod prelude {
    pub use crate::{Distributed, Feed, GradientSync, ModulePlacement, StepLabels, StepLayout, StepMesh, Upload};
}

/// The placement rule table (markdown) as the registry decides it for example inputs: what
/// `backend/README.md` shows between its `rules` markers (a test keeps them equal).
pub fn rule_table() -> String {
    strategy::table::markdown()
}
