//! # owt
//!
//! The `owt` tool: AlexNet on Burn after two papers, the 2012 two-tower network and the 2014
//! "one weird trick" (conv layers data-parallel, FC layers model-parallel). The libraries are
//! their own crates: `owt-models` (the networks) and `owt-hybrid` (the backend wrapper and the
//! parallel library around it). This crate composes them for the command line: data loading
//! ([`data`]), the AlexNet training step and loop ([`train`]), the AlexNet side of plans and dry
//! runs ([`parallel`]), backend choice ([`backends`]) and the CLI ([`cli`]).

pub mod backends;
pub mod bounded_read;
pub mod cli;
pub mod console;
pub mod cuda_preflight;
pub mod data;
pub mod error;
pub mod exit;
pub mod filters;
pub mod kernel_cache;
// owt-hybrid's NCCL buffers against CubeCL's CUDA allocator, on a machine without a GPU.
#[cfg(all(test, feature = "wgpu"))]
mod nccl_buffers_check;
pub mod panics;
pub mod parallel;
pub mod processes;
pub mod removed_on_signal;
pub mod report;
pub mod train;

pub use error::OwtError;

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
