//! The AlexNet module shared by every family member: five conv stages and three FC layers.

use burn::module::{Initializer, Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::prelude::*;
use burn::tensor::activation::relu;

use crate::architecture::{Architecture, ArchitectureError, ConvLayer, InitScheme, POOL_KERNEL, POOL_STRIDE};
use crate::lrn::{TowerLrn, TowerLrnConfig};

/// An AlexNet-family network. Parameter paths are the paper's layer names (`conv1.weight`,
/// `fc6.bias`, ...), which is what parallel plans refer to. Knows nothing about devices.
#[derive(Module, Debug)]
pub struct AlexNet<B: Backend> {
    /// conv1 (in the 2012 network: 96 filters 11x11 stride 4, 48 per tower).
    pub conv1: Conv2d<B>,
    /// conv2 (grouped in the two-tower networks).
    pub conv2: Conv2d<B>,
    /// conv3 (the towers meet here).
    pub conv3: Conv2d<B>,
    /// conv4 (grouped in the two-tower networks).
    pub conv4: Conv2d<B>,
    /// conv5 (grouped in the two-tower networks).
    pub conv5: Conv2d<B>,
    /// Response normalisation used after the stages marked in the architecture.
    pub lrn: TowerLrn,
    /// Overlapping 3x3 stride-2 max pooling.
    pub pool: MaxPool2d,
    /// Adaptive average pooling in front of the FC layers (torchvision layout only).
    pub avgpool: Option<AdaptiveAvgPool2d>,
    /// Dropout in front of the FC layers the architecture marks.
    pub dropout: Dropout,
    /// fc6.
    pub fc6: Linear<B>,
    /// fc7.
    pub fc7: Linear<B>,
    /// fc8: one logit per class.
    pub fc8: Linear<B>,
    /// The description this network was built from.
    #[module(skip)]
    pub architecture: Architecture,
}

impl Architecture {
    /// Builds the network on `device`, or says why this geometry is impossible.
    pub fn try_init<B: Backend>(&self, device: &B::Device) -> Result<AlexNet<B>, ArchitectureError> {
        let features = self.fc_input_features()?;
        let mut in_channels = self.input[0];
        let mut convs = self.convs.iter().enumerate().map(|(i, layer)| {
            let conv = conv_layer(in_channels, layer, self.init, [false, true, false, true, true][i], device);
            in_channels = layer.filters;
            conv
        });
        let [conv1, conv2, conv3, conv4, conv5] = std::array::from_fn(|_| convs.next().expect("five conv stages"));
        let fc_in = [features, self.hidden[0], self.hidden[1]];
        let fc_out = [self.hidden[0], self.hidden[1], self.classes];
        let [fc6, fc7, fc8] = std::array::from_fn(|j| linear_layer(fc_in[j], fc_out[j], self.init, j < 2, device));
        let model = AlexNet {
            conv1,
            conv2,
            conv3,
            conv4,
            conv5,
            lrn: TowerLrnConfig::new().with_towers(self.towers).init(),
            pool: MaxPool2dConfig::new([POOL_KERNEL, POOL_KERNEL]).with_strides([POOL_STRIDE, POOL_STRIDE]).init(),
            avgpool: self.adaptive_pool.map(|s| AdaptiveAvgPool2dConfig::new([s, s]).init()),
            dropout: DropoutConfig::new(self.dropout).init(),
            fc6,
            fc7,
            fc8,
            architecture: self.clone(),
        };
        // Burn initialises parameters lazily, on first use; a clone taken before that would
        // draw its own values. Materialise now so clones, records and the model agree.
        model.visit(&mut Materialise);
        Ok(model)
    }

    /// Builds the network on `device`. Panics where [`Architecture::try_init`] errs.
    pub fn init<B: Backend>(&self, device: &B::Device) -> AlexNet<B> {
        self.try_init(device).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The weight initialiser of a scheme (`None`: the layer's own default) and the bias value
/// (`None`: the layer's own default); `bias_one` marks the layers the 2012 paper starts at 1.
/// Touches every parameter so its lazy initialiser runs.
struct Materialise;

impl<B: Backend> burn::module::ModuleVisitor<B> for Materialise {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let _ = param.val();
    }
}

fn init_rule(init: InitScheme, bias_one: bool) -> (Option<Initializer>, Option<f64>) {
    match init {
        InitScheme::Paper2012 => {
            (Some(Initializer::Normal { mean: 0.0, std: 0.01 }), Some(if bias_one { 1.0 } else { 0.0 }))
        }
        InitScheme::He => {
            (Some(Initializer::KaimingNormal { gain: std::f64::consts::SQRT_2, fan_out_only: false }), Some(0.0))
        }
        InitScheme::TorchDefault => (None, None),
    }
}

fn constant_bias<B: Backend>(value: f64, len: usize, device: &B::Device) -> Param<Tensor<B, 1>> {
    Initializer::Constant { value }.init([len], device)
}

fn conv_layer<B: Backend>(
    in_channels: usize,
    layer: &ConvLayer,
    init: InitScheme,
    bias_one: bool,
    device: &B::Device,
) -> Conv2d<B> {
    let (weights, bias) = init_rule(init, bias_one);
    let mut config = Conv2dConfig::new([in_channels, layer.filters], [layer.kernel, layer.kernel])
        .with_stride([layer.stride, layer.stride])
        .with_padding(PaddingConfig2d::Explicit(layer.padding, layer.padding, layer.padding, layer.padding))
        .with_groups(layer.groups);
    if let Some(w) = weights {
        config = config.with_initializer(w);
    }
    let mut conv = config.init(device);
    if let Some(value) = bias {
        conv.bias = Some(constant_bias(value, layer.filters, device));
    }
    conv
}

fn linear_layer<B: Backend>(
    d_in: usize,
    d_out: usize,
    init: InitScheme,
    bias_one: bool,
    device: &B::Device,
) -> Linear<B> {
    let (weights, bias) = init_rule(init, bias_one);
    let mut config = LinearConfig::new(d_in, d_out);
    if let Some(w) = weights {
        config = config.with_initializer(w);
    }
    let mut linear = config.init(device);
    if let Some(value) = bias {
        linear.bias = Some(constant_bias(value, d_out, device));
    }
    linear
}

impl<B: Backend> AlexNet<B> {
    /// Logits `[batch, classes]` for images `[batch, channels, height, width]`.
    ///
    /// Panics with the expected and actual shape if the input does not match the
    /// architecture; callers that take user input check first with [`Architecture::check_input`].
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.forward_observed(images, &mut |_, _| {})
    }

    /// [`AlexNet::forward`], calling `observe(layer, per_image_shape)` after every layer that
    /// the profile lists, so tests can hold the profile against the real activations.
    pub fn forward_observed(&self, images: Tensor<B, 4>, observe: &mut dyn FnMut(&str, &[usize])) -> Tensor<B, 2> {
        let arch = &self.architecture;
        if let Err(e) = arch.check_input(images.dims()) {
            panic!("{e}");
        }
        let convs = [&self.conv1, &self.conv2, &self.conv3, &self.conv4, &self.conv5];
        let mut x = images;
        for (i, conv) in convs.into_iter().enumerate() {
            let stage = i + 1;
            x = relu(conv.forward(x));
            observe(&format!("conv{stage}"), &x.dims()[1..]);
            if arch.lrn_after[i] {
                x = self.lrn.forward(x);
                observe(&format!("lrn{stage}"), &x.dims()[1..]);
            }
            if arch.pool_after[i] {
                x = self.pool.forward(x);
                observe(&format!("pool{stage}"), &x.dims()[1..]);
            }
        }
        if let Some(avgpool) = &self.avgpool {
            x = avgpool.forward(x);
            observe("avgpool", &x.dims()[1..]);
        }
        let mut h: Tensor<B, 2> = x.flatten(1, 3);
        let fcs = [&self.fc6, &self.fc7, &self.fc8];
        for (j, fc) in fcs.into_iter().enumerate() {
            if arch.dropout_before_fc[j] {
                h = self.dropout.forward(h);
            }
            h = fc.forward(h);
            if j < 2 {
                h = relu(h);
            }
            observe(&format!("fc{}", j + 6), &h.dims()[1..]);
        }
        h
    }
}
