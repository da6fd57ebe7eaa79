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
