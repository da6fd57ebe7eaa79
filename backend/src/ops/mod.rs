//! Doing: Burn's op traits for `Hybrid<B>`, one file per trait, each op naming its rule
//! (`crate::rules`) and handing its inner op to the dispatcher (`dispatch`), which carries the
//! rule out along every mesh dimension; a matmul exchanging its left operand in rounds
//! (`exchange_matmul`); the refusal of quantized tensors (`qtensor`); and owt's own kernel
//! traits on `Hybrid` (`counter_dropout`, `sgd_momentum`: each rank runs the inner backend's
//! kernel on its pieces).

pub mod activation;
pub mod bool;
mod common;
mod counter_dropout;
pub(crate) mod dispatch;
pub(crate) mod exchange_matmul;
pub mod float;
pub mod int;
mod macros;
pub mod module;
pub mod qtensor;
mod sgd_momentum;
pub mod transaction;
