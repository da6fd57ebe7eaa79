//! The VGG networks (Simonyan and Zisserman 2014) in torchvision's layout: blocks of 3x3
//! convolutions each ended by 2x2 max pooling, optionally batch normalisation after every
//! convolution, a 7x7 adaptive average pool and fc6-fc7-fc8 with dropout in front of fc7
//! and fc8. The same module type as the AlexNets ([`crate::ConvNet`]), its layers named as
//! the paper's Caffe models name them (`conv1_1`..`conv5_3`, `fc6`..`fc8`).

use burn::prelude::*;

use crate::alexnet::ConvNet;
use crate::architecture::{Architecture, ArchitectureError, ConvLayer, Family, InitScheme, PoolWindow};

/// A VGG network (the same type as every family member).
pub type Vgg<B> = ConvNet<B>;

/// The filters of each block's conv layers for a depth (weight layers, FC included): the
/// paper's configurations A (11), B (13) and D (16).
fn blocks(depth: usize) -> Option<[&'static [usize]; 5]> {
    match depth {
        11 => Some([&[64], &[128], &[256, 256], &[512, 512], &[512, 512]]),
        13 => Some([&[64, 64], &[128, 128], &[256, 256], &[512, 512], &[512, 512]]),
        16 => Some([&[64, 64], &[128, 128], &[256, 256, 256], &[512, 512, 512], &[512, 512, 512]]),
        _ => None,
    }
}

/// The depths [`VggConfig`] builds (configurations A, B and D of the paper).
pub const VGG_DEPTHS: [usize; 3] = [11, 13, 16];

/// A VGG of `depth` weight layers, with or without batch normalisation, for any input side
/// and class count. At 224x224 and 1000 classes VGG-16 holds 138,357,544 parameters (123.6
/// million of them in the FC layers) and VGG-16-BN 138,365,992, as torchvision's.
///
/// ```
/// use owt_models::VggConfig;
///
/// let vgg16 = VggConfig::new(16).architecture().profile().unwrap();
/// assert_eq!(vgg16.total_params, 138_357_544);
/// assert_eq!(vgg16.sum_by_prefix("fc").0, 123_642_856);
/// let bn = VggConfig::new(16).with_batch_norm(true).architecture().profile().unwrap();
/// assert_eq!(bn.total_params, 138_365_992);
/// ```
#[derive(Config, Debug)]
pub struct VggConfig {
    /// Weight layers: 11, 13 or 16.
    pub depth: usize,
    /// Batch normalisation after every convolution (torchvision's `vgg16_bn`).
    #[config(default = false)]
    pub batch_norm: bool,
    /// Output classes.
    #[config(default = 1000)]
    pub classes: usize,
    /// Input side (224 in torchvision; at least 32, the five poolings' reduction).
    #[config(default = 224)]
    pub input: usize,
    /// Input channels.
    #[config(default = 3)]
    pub channels: usize,
    /// Width of fc6 and fc7.
    #[config(default = 4096)]
    pub hidden: usize,
    /// The side the adaptive average pool gives fc6 (7 in torchvision; `None`: fc6 reads the
    /// last pooling's maps as they are, as CIFAR-sized VGGs do).
    #[config(default = "Some(7)")]
    pub adaptive_pool: Option<usize>,
    /// Dropout probability in front of fc7 and fc8.
    #[config(default = 0.5)]
    pub dropout: f64,
}

impl VggConfig {
    /// The CLI name: `vgg16`, `vgg16-bn`.
    pub fn name(&self) -> String {
        format!("vgg{}{}", self.depth, if self.batch_norm { "-bn" } else { "" })
    }

    /// The architecture this config describes, or why it cannot be built (a depth other than
    /// 11, 13, 16).
    pub fn try_architecture(&self) -> Result<Architecture, ArchitectureError> {
        let blocks = blocks(self.depth).ok_or_else(|| {
            ArchitectureError(format!("VGG has depth 11, 13 or 16 (weight layers), got {}", self.depth))
        })?;
        let mut convs = Vec::new();
        let mut pool_after = Vec::new();
        for block in blocks {
            for (i, &filters) in block.iter().enumerate() {
                convs.push(ConvLayer::same(filters, 3));
                pool_after.push(i + 1 == block.len());
            }
        }
        Ok(Architecture {
            name: self.name(),
            family: Family::Vgg,
            input: [self.channels, self.input, self.input],
            lrn_after: vec![false; convs.len()],
            convs,
            batch_norm: self.batch_norm,
            pool_after,
            pool: PoolWindow::HALVING,
            adaptive_pool: self.adaptive_pool,
            hidden: [self.hidden, self.hidden],
            classes: self.classes,
            dropout: self.dropout,
            dropout_before_fc: [false, true, true],
            towers: 1,
            init: InitScheme::TorchvisionVgg,
        })
    }

    /// The architecture this config describes. Panics on a depth other than 11, 13, 16.
    pub fn architecture(&self) -> Architecture {
        self.try_architecture().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Builds the network. Panics if the depth or the geometry is impossible.
    pub fn init<B: Backend>(&self, device: &B::Device) -> Vgg<B> {
        self.architecture().init(device)
    }
}
