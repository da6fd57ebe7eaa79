#![doc = include_str!("../README.md")]

// The folders are layers, read bottom to top in the README's map (`Layers`): each imports only
// from the ones below it (owt's tests/owt/layers.rs reads the sources and holds that).
mod analysis;
mod api;
mod autodiff;
mod backend;
mod comm;
mod kernels;
mod ledger;
mod mesh;
#[cfg(feature = "mutation")]
#[doc(hidden)]
pub mod mutation;
#[cfg(not(feature = "mutation"))]
mod mutation;
pub mod ops;
mod parallel;
mod rules;
mod spec;
mod tensor;
mod transport;

pub use analysis::cost_model::{predict_on_mesh, DeviceProfile, LayerOrder, PhaseTime, StepPrediction};
pub use analysis::dry_run::{CommPlan, DryRun, DryRunReport, LayerTraffic};
pub use analysis::topology::{Pattern, Uplink};
pub use analysis::{auto_plan, cost_model, topology};
pub use api::distributed::{partial_from_summands, Distributed};
pub use api::upload::{RowSplit, Upload};
pub use autodiff::phase_marker::mark_backward_phase;
pub use backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
pub use comm::collectives;
pub use kernels::{
    computes_on_flex, conv_grad, counter_dropout, cublaslt, cuda_libraries, cudnn, libraries, max_pool, sgd_momentum,
};
pub use ledger::{Collective, CollectiveKey, LedgerSnapshot, Phase, Stage, Traffic, READS, UNLABELLED};
pub use mesh::grid::{self, GridError, GridMesh, GridPlacement};
pub use mesh::{live_meshes, DefaultMeshError, MeshDevice, OuterDim, PhaseGuard, SpanError};
pub use parallel::gradient_sync::sync_gradients;
pub use parallel::grid_layout::GridLayout;
pub use parallel::grid_plan::{GridPlan, GridRule};
pub use parallel::layer_labels::{layer_of, LayerLabels};
pub use parallel::layout::{
    Feed, GradientSync, MeshLayout, ModulePlacement, NoLabels, SingleDevice, StepLabels, StepLayout, StepMesh,
};
pub use parallel::params::{gradient_values, parameter_paths, parameter_values, place_parameters};
pub use parallel::plan::{pattern_matches, BatchStats, Plan, PlanError, PlanKind, PlanRule};
pub use spec::placement::{can_shard, shard_ranges, shard_sizes, Placement, ReduceOp};
pub use spec::scheme::Exchange;
pub use spec::WirePrecision;
pub use tensor::dtensor::DTensor;
pub use tensor::kind::{BoolKind, FloatKind, IntKind, ShardKind};
#[cfg(feature = "mpi")]
pub use transport::process_group::MpiGroup;
pub use transport::process_group::{CollectiveFailed, GroupError, Launch, ProcessGroup, Solo, ThreadedGroup};
pub use transport::{nccl, process_group, DeviceAllReduce, RuntimeCapabilities, SendFence, Transport};

/// The traits a program on `Hybrid` calls methods of, in one import (`use owt_hybrid::prelude::*`):
/// placements on tensors, uploads, and the four concerns of a [`StepLayout`].
pub mod prelude {
    pub use crate::{Distributed, Feed, GradientSync, ModulePlacement, StepLabels, StepLayout, StepMesh, Upload};
}

/// The placement rule table (markdown) as the registry decides it for example inputs: what
/// `backend/README.md` shows between its `rules` markers (a test keeps them equal).
pub fn rule_table() -> String {
    rules::table::markdown()
}
