//! The AlexNet family on `owt_hybrid`'s parallel library: what a plan needs of an AlexNet
//! architecture ([`check_run`]), the layer hook that labels each layer's traffic
//! ([`LayerPhases`]) and the dry run of one AlexNet training step that `owt plan` reports
//! ([`PlanDryRun`]), and where the nodes of a 2-D mesh run ([`GridNodes`]). Plans, parameter placement, gradient sync, dry runs on shape-only devices
//! and the cost model themselves are `owt_hybrid`'s.

pub mod check;
pub mod dry_run;
pub mod grid_run;
pub mod phases;

pub use check::{check_architecture, check_run};
pub use dry_run::PlanDryRun;
pub use grid_run::GridNodes;
pub use phases::LayerPhases;
