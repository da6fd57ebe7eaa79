#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod alexnet;
mod architecture;
mod batch_norm;
mod dropout;
mod dropout_kernel;
mod finite;
mod head;
mod input_transform;
mod lrn;
mod profile;
mod spec;
mod stage;
pub mod torchvision;
mod variants;
mod vgg;

pub use alexnet::{AlexNet, ConvNet, KeyedDropout, LayerHook};
pub use architecture::{
    Architecture, ArchitectureError, ConvLayer, Family, InitScheme, PoolWindow, POOL_KERNEL, POOL_STRIDE,
};
pub use batch_norm::{batch_norm, batch_norm_in_groups, BatchNorm};
pub use dropout::{keeps_element, CounterDropout, DropoutKey, PassCounter};
pub use dropout_kernel::{dropout_kernel, register_dropout_kernel, DropoutKernel, DropoutMask};
pub use finite::non_finite_parameters;
pub use head::Head;
pub use input_transform::{default_resize, PixelNorm, ResizeFilter};
pub use lrn::{TowerLrn, TowerLrnConfig};
pub use profile::{LayerProfile, ModelProfile};
pub use spec::{AdaptivePool, ModelKind, ModelSpec, MAX_RESIZE};
pub use stage::{Activation, Stage};
pub use variants::{AlexNet2012, AlexNet2012Config, AlexNetOwt, AlexNetOwtConfig, AlexNetSmall, AlexNetSmallConfig};
pub use vgg::{Vgg, VggConfig, VGG_DEPTHS};
