//! The parallel library on `Hybrid` for any Burn module: plans (which parameter lives where,
//! 1-D and per mesh dimension), placing a module's parameters, labelling a step's traffic by
//! layer, the gradient sync, and the step layouts that run one training step on one device, a
//! mesh or a mesh of nodes.

pub(crate) mod gradient_sync;
pub(crate) mod grid_layout;
pub(crate) mod grid_plan;
pub(crate) mod layer_labels;
pub(crate) mod layout;
pub(crate) mod params;
pub(crate) mod plan;
