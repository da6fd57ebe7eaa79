//! Burn's op traits for `Hybrid<B>`, one file per trait.

pub mod activation;
pub mod bool;
mod common;
pub mod float;
pub mod int;
mod macros;
pub mod module;
pub mod qtensor;
pub mod transaction;
