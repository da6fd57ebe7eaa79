//! # owt
//!
//! The `owt` tool: AlexNet on Burn after two papers, the 2012 two-tower network and the 2014
//! "one weird trick" (conv layers data-parallel, FC layers model-parallel). The libraries are
//! their own crates: `owt-models` (the networks) and `owt-hybrid` (the backend wrapper and the
//! parallel library around it). This crate composes them for the command line: data loading
//! ([`data`]), the AlexNet training step and loop ([`train`]), the AlexNet side of plans and dry
//! runs ([`parallel`]), where a job runs ([`runtime`]: backends, CUDA, processes), the tool's
//! dealings with its process ([`host`]: output, exit, panics, signals), pictures of a run
//! ([`report`]) and the CLI ([`cli`]).

pub mod cli;
pub mod data;
pub mod error;
pub mod host;
pub mod parallel;
pub mod report;
pub mod runtime;
pub mod train;

// The modules' paths before they moved into folders, kept for the tests and programs that
// name them.
pub use error::OwtError;
pub use host::{bounded_read, console, exit, panics, removed_on_signal};
pub use report::filters;
pub use runtime::{backends, cuda_preflight, kernel_cache, processes};

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The book's chapters (docs/src), their Rust examples compiled and run as doctests.
#[cfg(doctest)]
pub mod book {
    #[doc = include_str!("../docs/src/introduction.md")]
    pub struct Introduction;
    #[doc = include_str!("../docs/src/getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../docs/src/runs.md")]
    pub struct Runs;
    #[doc = include_str!("../docs/src/data.md")]
    pub struct Data;
    #[doc = include_str!("../docs/src/recipes.md")]
    pub struct Recipes;
    #[doc = include_str!("../docs/src/models.md")]
    pub struct Models;
    #[doc = include_str!("../docs/src/hybrid.md")]
    pub struct Hybrid;
    #[doc = include_str!("../docs/src/plans.md")]
    pub struct Plans;
    #[doc = include_str!("../docs/src/plan-command.md")]
    pub struct PlanCommand;
    #[doc = include_str!("../docs/src/processes.md")]
    pub struct Processes;
    #[doc = include_str!("../docs/src/meshes-2d.md")]
    pub struct Meshes2d;
    #[doc = include_str!("../docs/src/backends.md")]
    pub struct Backends;
    #[doc = include_str!("../docs/src/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../docs/src/papers.md")]
    pub struct Papers;
    #[doc = include_str!("../docs/src/which-burn.md")]
    pub struct WhichBurn;
    #[doc = include_str!("../docs/src/testing.md")]
    pub struct Testing;
}
