//! # owt
//!
//! AlexNet on Burn after two papers: the 2012 two-tower network and the 2014 "one weird trick"
//! (conv layers data-parallel, FC layers model-parallel). This facade re-exports the model
//! crate ([`models`]) and the backend wrapper ([`hybrid`]), and holds what composes them: data
//! loading ([`data`]), training loops ([`train`]), backend choice ([`backends`]) and the CLI ([`cli`]).

pub mod backends;
pub mod cli;
pub mod cuda_preflight;
pub mod data;
pub mod error;
pub mod kernel_cache;
#[cfg(feature = "cuda")]
pub mod nccl;
pub mod panics;
pub mod parallel;
pub mod report;
pub mod train;

pub use error::OwtError;
pub use owt_hybrid as hybrid;
pub use owt_models as models;
