//! Burn's op traits for `Meta`, one file per trait, and the op bodies they share (`common`,
//! `conv`, `pool`).

pub mod activation;
pub mod bool;
pub(crate) mod common;
mod conv;
pub mod float;
pub mod int;
mod macros;
pub mod module;
mod pool;
pub mod qtensor;
pub mod transaction;
