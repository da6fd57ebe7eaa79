//! # owt-meta
//!
//! `Meta`: a shape-only Burn backend, like PyTorch's meta device. Its tensors
//! ([`MetaTensor`]) carry a shape, a dtype and a device but no data; every op returns the
//! shape and dtype Burn's Flex backend would, and appends what it would cost (flops, bytes
//! read and written, see [`cost`]) to its device's log ([`MetaDevice::costs`]). A training
//! step of a large model therefore runs in milliseconds, as a shape check and as the input of
//! a cost model.

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
