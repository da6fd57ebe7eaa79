//! # owt-models
//!
//! The AlexNet family as plain, backend-generic Burn modules:
//!
//! - [`AlexNet2012Config`]: the two-tower network of Krizhevsky, Sutskever and Hinton (2012),
//!   with tower-local layers as grouped convolutions and response normalisation per tower;
//! - [`AlexNetOwtConfig`]: the one-tower network of "One weird trick" (2014), torchvision layout;
//! - [`AlexNetSmallConfig`]: the same stages scaled for 28x28 / 32x32 images.
//!
//! Every member is an [`AlexNet`] built from an [`Architecture`], which also yields the
//! [`ModelProfile`] (parameters, MACs and output shape per layer). [`Head`] turns logits into a
//! softmax or independent-logistic loss. Nothing here knows about devices or parallelism.

mod alexnet;
mod architecture;
mod dropout;
mod head;
mod lrn;
mod profile;
mod spec;
mod stage;
pub mod torchvision;
mod variants;

pub use alexnet::{AlexNet, KeyedDropout, LayerHook};
pub use architecture::{Architecture, ArchitectureError, ConvLayer, InitScheme, POOL_KERNEL, POOL_STRIDE};
pub use dropout::{keeps_element, CounterDropout, DropoutKey, PassCounter};
pub use head::Head;
pub use lrn::{TowerLrn, TowerLrnConfig};
pub use profile::{LayerProfile, ModelProfile};
pub use spec::{ModelKind, ModelSpec};
pub use stage::{Activation, Stage};
pub use variants::{AlexNet2012, AlexNet2012Config, AlexNetOwt, AlexNetOwtConfig, AlexNetSmall, AlexNetSmallConfig};
