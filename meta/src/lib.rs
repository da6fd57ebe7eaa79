#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod backend;
pub mod cost;
mod device;
pub mod ops;
mod shapes;
mod tensor;

pub use backend::Meta;
pub use cost::{CostTotals, OpCost};
pub use device::{live_devices, MetaDevice};
pub use tensor::MetaTensor;
