//! Composing models with `Hybrid<B>`: plans that say where every parameter lives, putting a
//! model's parameters where a plan says, and labelling each layer's communication.

pub mod cost_model;
pub mod dry_run;
pub mod phases;
pub mod placer;
pub mod plan;

pub use cost_model::{DeviceProfile, PhaseTime, StepPrediction};
pub use dry_run::{CommPlan, DryRun, DryRunReport, LayerTraffic};
pub use phases::{sync_gradients, LayerPhases};
pub use placer::{gradient_values, parameter_paths, parameter_values, place_parameters};
pub use plan::{Plan, PlanKind, PlanRule};
