//! Knowing a step before running it: dry runs of the real step on shape-only devices
//! (`dry_run`), the links between devices as a tree of shared uplinks and each collective's
//! pattern on them (`topology`), and the step's time priced on a device profile
//! (`cost_model`).

pub mod auto_plan;
pub mod cost_model;
pub(crate) mod dry_run;
pub mod topology;
