//! The three family members as Burn configs: the 2012 two-tower network, the 2014 one-tower
//! network (torchvision layout) and a small network of the same shape for 28x28 / 32x32 images.

use burn::prelude::*;

use crate::alexnet::AlexNet;
use crate::architecture::{Architecture, ConvLayer, Family, InitScheme, PoolWindow};

/// The 2012 two-tower network (Krizhevsky, Sutskever, Hinton), as one module whose tower-local
/// layers are grouped convolutions. Same type as every family member.
pub type AlexNet2012<B> = AlexNet<B>;
/// The 2014 "one weird trick" network in torchvision's layout.
pub type AlexNetOwt<B> = AlexNet<B>;
/// The small network for 28x28 / 32x32 images, one- or two-tower.
pub type AlexNetSmall<B> = AlexNet<B>;

/// The 2012 network on 227x227x3: conv 96-256g2-384-384g2-256g2, LRN after conv1 and conv2
/// within each tower, overlapping max pooling after conv1, conv2 and conv5, fc 4096-4096.
#[derive(Config, Debug)]
pub struct AlexNet2012Config {
    /// Output classes.
    #[config(default = 1000)]
    pub classes: usize,
    /// Input side (227 in the paper).
    #[config(default = 227)]
    pub input: usize,
    /// Input channels.
    #[config(default = 3)]
    pub channels: usize,
    /// Dropout probability in front of fc7 and fc8.
    #[config(default = 0.5)]
    pub dropout: f64,
}

impl AlexNet2012Config {
    /// The architecture this config describes.
    pub fn architecture(&self) -> Architecture {
        Architecture {
            name: "alexnet-2012".into(),
            family: Family::AlexNet,
            input: [self.channels, self.input, self.input],
            convs: vec![
                ConvLayer { filters: 96, kernel: 11, stride: 4, padding: 0, groups: 1 },
                ConvLayer::same(256, 5).grouped(2),
                ConvLayer::same(384, 3),
                ConvLayer::same(384, 3).grouped(2),
                ConvLayer::same(256, 3).grouped(2),
            ],
            batch_norm: false,
            lrn_after: [true, true, false, false, false].to_vec(),
            pool_after: [true, true, false, false, true].to_vec(),
            pool: PoolWindow::OVERLAPPING,
            adaptive_pool: None,
            hidden: [4096, 4096],
            classes: self.classes,
            dropout: self.dropout,
            dropout_before_fc: [false, true, true],
            towers: 2,
            init: InitScheme::Paper2012,
        }
    }

    /// Builds the network. Panics if the input side is too small for the kernels.
    pub fn init<B: Backend>(&self, device: &B::Device) -> AlexNet2012<B> {
        self.architecture().init(device)
    }
}

/// The 2014 one-tower network in torchvision's layout: conv 64-192-384-256-256, max pooling
/// after conv1, conv2, conv5, adaptive 6x6 average pool, dropout, fc 4096-4096.
#[derive(Config, Debug)]
pub struct AlexNetOwtConfig {
    /// Output classes.
    #[config(default = 1000)]
    pub classes: usize,
    /// Input side (224 in torchvision).
    #[config(default = 224)]
    pub input: usize,
    /// Input channels.
    #[config(default = 3)]
    pub channels: usize,
    /// Dropout probability in front of fc6 and fc7.
    #[config(default = 0.5)]
    pub dropout: f64,
}

impl AlexNetOwtConfig {
    /// The architecture this config describes.
    pub fn architecture(&self) -> Architecture {
        Architecture {
            name: "alexnet-owt".into(),
            family: Family::AlexNet,
            input: [self.channels, self.input, self.input],
            convs: vec![
                ConvLayer { filters: 64, kernel: 11, stride: 4, padding: 2, groups: 1 },
                ConvLayer::same(192, 5),
                ConvLayer::same(384, 3),
                ConvLayer::same(256, 3),
                ConvLayer::same(256, 3),
            ],
            batch_norm: false,
            lrn_after: [false; 5].to_vec(),
            pool_after: [true, true, false, false, true].to_vec(),
            pool: PoolWindow::OVERLAPPING,
            adaptive_pool: Some(6),
            hidden: [4096, 4096],
            classes: self.classes,
            dropout: self.dropout,
            dropout_before_fc: [true, true, false],
            towers: 1,
            init: InitScheme::TorchDefault,
        }
    }

    /// Builds the network. Panics if the input side is too small for the kernels.
    pub fn init<B: Backend>(&self, device: &B::Device) -> AlexNetOwt<B> {
        self.architecture().init(device)
    }
}

/// The 2012 network's stage structure scaled down for 28x28 or 32x32 images with 1 or 3
/// channels: conv 32 (5x5) - 64 - 96 - 96 - 64, LRN after conv1 and conv2, max pooling after
/// conv1, conv2, conv5, fc 256-256. With `towers = 2` conv2, conv4 and conv5 are grouped and
/// LRN stays within a tower, as in 2012; with `towers = 1` it is one tower, as in 2014.
/// He initialisation (the paper's N(0, 0.01) does not start a network this small reliably).
/// Trains on two CPU cores.
#[derive(Config, Debug)]
pub struct AlexNetSmallConfig {
    /// Output classes.
    #[config(default = 10)]
    pub classes: usize,
    /// Input side (28 for MNIST-style images, 32 for CIFAR-style).
    #[config(default = 28)]
    pub input: usize,
    /// Input channels (1 gray, 3 colour).
    #[config(default = 1)]
    pub channels: usize,
    /// 2 for the two-tower (grouped) form, 1 for one tower.
    #[config(default = 2)]
    pub towers: usize,
    /// Dropout probability in front of fc7 and fc8.
    #[config(default = 0.5)]
    pub dropout: f64,
}

impl AlexNetSmallConfig {
    /// The architecture this config describes.
    pub fn architecture(&self) -> Architecture {
        let g = self.towers;
        Architecture {
            name: "alexnet-small".into(),
            family: Family::AlexNet,
            input: [self.channels, self.input, self.input],
            convs: vec![
                ConvLayer::same(32, 5),
                ConvLayer::same(64, 5).grouped(g),
                ConvLayer::same(96, 3),
                ConvLayer::same(96, 3).grouped(g),
                ConvLayer::same(64, 3).grouped(g),
            ],
            batch_norm: false,
            lrn_after: [true, true, false, false, false].to_vec(),
            pool_after: [true, true, false, false, true].to_vec(),
            pool: PoolWindow::OVERLAPPING,
            adaptive_pool: None,
            hidden: [256, 256],
            classes: self.classes,
            dropout: self.dropout,
            dropout_before_fc: [false, true, true],
            towers: g,
            init: InitScheme::He,
        }
    }

    /// Builds the network. Panics if the geometry is impossible.
    pub fn init<B: Backend>(&self, device: &B::Device) -> AlexNetSmall<B> {
        self.architecture().init(device)
    }
}
