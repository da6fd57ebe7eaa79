//! The module shared by every AlexNet and VGG: conv stages and three FC layers.

use burn::module::{Initializer, Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::prelude::*;
use burn::tensor::activation::relu;

use crate::architecture::{Architecture, ArchitectureError, ConvLayer, Family, InitScheme};
use crate::batch_norm::BatchNorm;
use crate::dropout::{CounterDropout, DropoutKey};
use crate::lrn::{TowerLrn, TowerLrnConfig};
use crate::stage::{Activation, Stage};

/// A network of the AlexNet and VGG families: conv layers, then fc6, fc7, fc8. Parameter
/// paths are the layers' own names, as the papers and their Caffe models give them
/// (`conv1.weight`, `conv3_2.weight`, `bn3_2.gamma`, `fc6.bias`), which is what parallel
/// plans refer to; so each conv layer is a field of its own, present where the architecture
/// has that layer. Knows nothing about devices.
#[derive(Module, Debug)]
pub struct ConvNet<B: Backend> {
    /// conv1 (AlexNet).
    pub conv1: Option<Conv2d<B>>,
    /// conv2 (AlexNet).
    pub conv2: Option<Conv2d<B>>,
    /// conv3 (AlexNet).
    pub conv3: Option<Conv2d<B>>,
    /// conv4 (AlexNet).
    pub conv4: Option<Conv2d<B>>,
    /// conv5 (AlexNet).
    pub conv5: Option<Conv2d<B>>,
    /// conv1_1 (VGG).
    pub conv1_1: Option<Conv2d<B>>,
    /// conv1_2 (VGG).
    pub conv1_2: Option<Conv2d<B>>,
    /// conv2_1 (VGG).
    pub conv2_1: Option<Conv2d<B>>,
    /// conv2_2 (VGG).
    pub conv2_2: Option<Conv2d<B>>,
    /// conv3_1 (VGG).
    pub conv3_1: Option<Conv2d<B>>,
    /// conv3_2 (VGG).
    pub conv3_2: Option<Conv2d<B>>,
    /// conv3_3 (VGG).
    pub conv3_3: Option<Conv2d<B>>,
    /// conv4_1 (VGG).
    pub conv4_1: Option<Conv2d<B>>,
    /// conv4_2 (VGG).
    pub conv4_2: Option<Conv2d<B>>,
    /// conv4_3 (VGG).
    pub conv4_3: Option<Conv2d<B>>,
    /// conv5_1 (VGG).
    pub conv5_1: Option<Conv2d<B>>,
    /// conv5_2 (VGG).
    pub conv5_2: Option<Conv2d<B>>,
    /// conv5_3 (VGG).
    pub conv5_3: Option<Conv2d<B>>,
    /// Batch normalisation of conv1_1 (VGG-BN).
    pub bn1_1: Option<BatchNorm<B>>,
    /// Batch normalisation of conv1_2 (VGG-BN).
    pub bn1_2: Option<BatchNorm<B>>,
    /// Batch normalisation of conv2_1 (VGG-BN).
    pub bn2_1: Option<BatchNorm<B>>,
    /// Batch normalisation of conv2_2 (VGG-BN).
    pub bn2_2: Option<BatchNorm<B>>,
    /// Batch normalisation of conv3_1 (VGG-BN).
    pub bn3_1: Option<BatchNorm<B>>,
    /// Batch normalisation of conv3_2 (VGG-BN).
    pub bn3_2: Option<BatchNorm<B>>,
    /// Batch normalisation of conv3_3 (VGG-BN).
    pub bn3_3: Option<BatchNorm<B>>,
    /// Batch normalisation of conv4_1 (VGG-BN).
    pub bn4_1: Option<BatchNorm<B>>,
    /// Batch normalisation of conv4_2 (VGG-BN).
    pub bn4_2: Option<BatchNorm<B>>,
    /// Batch normalisation of conv4_3 (VGG-BN).
    pub bn4_3: Option<BatchNorm<B>>,
    /// Batch normalisation of conv5_1 (VGG-BN).
    pub bn5_1: Option<BatchNorm<B>>,
    /// Batch normalisation of conv5_2 (VGG-BN).
    pub bn5_2: Option<BatchNorm<B>>,
    /// Batch normalisation of conv5_3 (VGG-BN).
    pub bn5_3: Option<BatchNorm<B>>,
    /// Response normalisation used after the stages marked in the architecture.
    pub lrn: TowerLrn,
    /// Max pooling (AlexNet's 3x3 stride 2, VGG's 2x2 stride 2).
    pub pool: MaxPool2d,
    /// Adaptive average pooling in front of the FC layers (torchvision layout only).
    pub avgpool: Option<AdaptiveAvgPool2d>,
    /// Dropout in front of the FC layers the architecture marks, with counter-based masks
    /// (keyed by the caller's [`LayerHook::dropout_key`]).
    pub dropout: CounterDropout,
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

/// An AlexNet-family network (the same module type as every member).
pub type AlexNet<B> = ConvNet<B>;

impl<B: Backend> ConvNet<B> {
    /// The conv layer called `name` (`conv3`, `conv3_2`), if the network has it.
    pub fn conv_named(&self, name: &str) -> Option<&Conv2d<B>> {
        match name {
            "conv1" => self.conv1.as_ref(),
            "conv2" => self.conv2.as_ref(),
            "conv3" => self.conv3.as_ref(),
            "conv4" => self.conv4.as_ref(),
            "conv5" => self.conv5.as_ref(),
            "conv1_1" => self.conv1_1.as_ref(),
            "conv1_2" => self.conv1_2.as_ref(),
            "conv2_1" => self.conv2_1.as_ref(),
            "conv2_2" => self.conv2_2.as_ref(),
            "conv3_1" => self.conv3_1.as_ref(),
            "conv3_2" => self.conv3_2.as_ref(),
            "conv3_3" => self.conv3_3.as_ref(),
            "conv4_1" => self.conv4_1.as_ref(),
            "conv4_2" => self.conv4_2.as_ref(),
            "conv4_3" => self.conv4_3.as_ref(),
            "conv5_1" => self.conv5_1.as_ref(),
            "conv5_2" => self.conv5_2.as_ref(),
            "conv5_3" => self.conv5_3.as_ref(),
            _ => None,
        }
    }

    /// The batch normalisation called `name` (`bn3_2`), if the network has it.
    pub fn norm_named(&self, name: &str) -> Option<&BatchNorm<B>> {
        match name {
            "bn1_1" => self.bn1_1.as_ref(),
            "bn1_2" => self.bn1_2.as_ref(),
            "bn2_1" => self.bn2_1.as_ref(),
            "bn2_2" => self.bn2_2.as_ref(),
            "bn3_1" => self.bn3_1.as_ref(),
            "bn3_2" => self.bn3_2.as_ref(),
            "bn3_3" => self.bn3_3.as_ref(),
            "bn4_1" => self.bn4_1.as_ref(),
            "bn4_2" => self.bn4_2.as_ref(),
            "bn4_3" => self.bn4_3.as_ref(),
            "bn5_1" => self.bn5_1.as_ref(),
            "bn5_2" => self.bn5_2.as_ref(),
            "bn5_3" => self.bn5_3.as_ref(),
            _ => None,
        }
    }

    fn conv_slot(&mut self, name: &str) -> &mut Option<Conv2d<B>> {
        match name {
            "conv1" => &mut self.conv1,
            "conv2" => &mut self.conv2,
            "conv3" => &mut self.conv3,
            "conv4" => &mut self.conv4,
            "conv5" => &mut self.conv5,
            "conv1_1" => &mut self.conv1_1,
            "conv1_2" => &mut self.conv1_2,
            "conv2_1" => &mut self.conv2_1,
            "conv2_2" => &mut self.conv2_2,
            "conv3_1" => &mut self.conv3_1,
            "conv3_2" => &mut self.conv3_2,
            "conv3_3" => &mut self.conv3_3,
            "conv4_1" => &mut self.conv4_1,
            "conv4_2" => &mut self.conv4_2,
            "conv4_3" => &mut self.conv4_3,
            "conv5_1" => &mut self.conv5_1,
            "conv5_2" => &mut self.conv5_2,
            "conv5_3" => &mut self.conv5_3,
            _ => unreachable!("Architecture::profile refuses conv names without a field"),
        }
    }

    fn norm_slot(&mut self, name: &str) -> &mut Option<BatchNorm<B>> {
        match name {
            "bn1_1" => &mut self.bn1_1,
            "bn1_2" => &mut self.bn1_2,
            "bn2_1" => &mut self.bn2_1,
            "bn2_2" => &mut self.bn2_2,
            "bn3_1" => &mut self.bn3_1,
            "bn3_2" => &mut self.bn3_2,
            "bn3_3" => &mut self.bn3_3,
            "bn4_1" => &mut self.bn4_1,
            "bn4_2" => &mut self.bn4_2,
            "bn4_3" => &mut self.bn4_3,
            "bn5_1" => &mut self.bn5_1,
            "bn5_2" => &mut self.bn5_2,
            "bn5_3" => &mut self.bn5_3,
            _ => unreachable!("batch normalisation comes only with VGG names"),
        }
    }
}

impl Architecture {
    /// Builds the network on `device`, or says why this geometry is impossible.
    pub fn try_init<B: Backend>(&self, device: &B::Device) -> Result<ConvNet<B>, ArchitectureError> {
        let features = self.fc_input_features()?;
        let fc_in = [features, self.hidden[0], self.hidden[1]];
        let fc_out = [self.hidden[0], self.hidden[1], self.classes];
        let [fc6, fc7, fc8] = std::array::from_fn(|j| linear_layer(fc_in[j], fc_out[j], self.init, j < 2, device));
        let mut model = ConvNet {
            conv1: None,
            conv2: None,
            conv3: None,
            conv4: None,
            conv5: None,
            conv1_1: None,
            conv1_2: None,
            conv2_1: None,
            conv2_2: None,
            conv3_1: None,
            conv3_2: None,
            conv3_3: None,
            conv4_1: None,
            conv4_2: None,
            conv4_3: None,
            conv5_1: None,
            conv5_2: None,
            conv5_3: None,
            bn1_1: None,
            bn1_2: None,
            bn2_1: None,
            bn2_2: None,
            bn3_1: None,
            bn3_2: None,
            bn3_3: None,
            bn4_1: None,
            bn4_2: None,
            bn4_3: None,
            bn5_1: None,
            bn5_2: None,
            bn5_3: None,
            lrn: TowerLrnConfig::new().with_towers(self.towers).init(),
            pool: MaxPool2dConfig::new([self.pool.kernel, self.pool.kernel])
                .with_strides([self.pool.stride, self.pool.stride])
                .init(),
            avgpool: self.adaptive_pool.map(|s| AdaptiveAvgPool2dConfig::new([s, s]).init()),
            dropout: CounterDropout::new(self.dropout),
            fc6,
            fc7,
            fc8,
            architecture: self.clone(),
        };
        let mut in_channels = self.input[0];
        for (i, layer) in self.convs.iter().enumerate() {
            let n = i + 1;
            // The 2012 paper starts conv2, conv4 and conv5 with biases of 1.
            let bias_one = self.family == Family::AlexNet && matches!(n, 2 | 4 | 5);
            *model.conv_slot(&self.conv_name(n)) = Some(conv_layer(in_channels, layer, self.init, bias_one, device));
            if self.batch_norm {
                *model.norm_slot(&self.stage_name(Stage::BatchNorm(n))) =
                    Some(BatchNormConfig::new(layer.filters).init(device));
            }
            in_channels = layer.filters;
        }
        // Burn initialises parameters lazily, on first use; a clone taken before that would
        // draw its own values. Materialise now so clones, records and the model agree.
        model.visit(&mut Materialise);
        Ok(model)
    }

    /// Builds the network on `device`. Panics where [`Architecture::try_init`] errs.
    pub fn init<B: Backend>(&self, device: &B::Device) -> ConvNet<B> {
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
        // Conv layers (the only ones with bias_one false and a kernel) take Kaiming fan-out;
        // linear_layer replaces this with N(0, 0.01).
        InitScheme::TorchvisionVgg => {
            (Some(Initializer::KaimingNormal { gain: std::f64::consts::SQRT_2, fan_out_only: true }), Some(0.0))
        }
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
    let (weights, bias) = match init {
        InitScheme::TorchvisionVgg => (Some(Initializer::Normal { mean: 0.0, std: 0.01 }), Some(0.0)),
        _ => init_rule(init, bias_one),
    };
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

impl<B: Backend> ConvNet<B> {
    /// Logits `[batch, classes]` for images `[batch, channels, height, width]`: conv1..conv5
    /// as in the paper's figure, then fc6..fc8.
    ///
    /// Panics with the expected and actual shape if the input does not match the
    /// architecture; callers that take user input check first with [`Architecture::check_input`].
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.forward_hooked(images, &mut NoHook)
    }

    /// [`ConvNet::forward`] with `hook` called at every layer boundary (see [`LayerHook`]).
    pub fn forward_hooked(&self, images: Tensor<B, 4>, hook: &mut dyn LayerHook<B>) -> Tensor<B, 2> {
        let features = self.forward_features_hooked(images, hook);
        self.forward_classifier_hooked(features, hook)
    }

    /// The conv trunk: conv1..conv5 (with their ReLU, normalisation and pooling) and the
    /// flatten, giving the features fc6 reads, `[n, fc_input_features]`.
    pub fn forward_features(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.forward_features_hooked(images, &mut NoHook)
    }

    /// The classifier: fc6, fc7 (ReLU, dropout where the architecture says) and fc8, from the
    /// features [`ConvNet::forward_features`] gives. Split out so that a trainer can run the FC
    /// layers on part of a batch (the per-chunk FC update of Krizhevsky 2014).
    pub fn forward_classifier(&self, features: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward_classifier_hooked(features, &mut NoHook)
    }

    /// [`ConvNet::forward_features`] with `hook` at every layer boundary.
    pub fn forward_features_hooked(&self, images: Tensor<B, 4>, hook: &mut dyn LayerHook<B>) -> Tensor<B, 2> {
        let arch = &self.architecture;
        if let Err(e) = arch.check_input(images.dims()) {
            panic!("{e}");
        }
        let mut x = Activation::Maps(images);
        for stage in arch.stages().into_iter().take_while(|s| !s.on_features()) {
            if let Stage::Conv(_) = stage {
                x = match x {
                    Activation::Maps(maps) => Activation::Maps(hook.maps(&arch.stage_name(stage), maps)),
                    features => features,
                };
            }
            x = match (stage, x) {
                (Stage::BatchNorm(n), Activation::Maps(maps)) => {
                    let groups = hook.batch_stat_groups(&arch.stage_name(stage));
                    Activation::Maps(crate::batch_norm::batch_norm_in_groups(self.norm(n), maps, groups))
                }
                (stage, x) => self.run_stage(stage, x, DropoutKey::default()),
            };
            if stage.profiled() {
                hook.observe(&arch.stage_name(stage), &x.per_image_shape());
            }
        }
        match x {
            Activation::Features(h) => h,
            Activation::Maps(_) => unreachable!("the trunk ends with Flatten"),
        }
    }

    /// [`ConvNet::forward_classifier`] with `hook` at every layer boundary.
    pub fn forward_classifier_hooked(&self, features: Tensor<B, 2>, hook: &mut dyn LayerHook<B>) -> Tensor<B, 2> {
        let mut h = features;
        // One key for the pass: the hook's, else the next of the model's own count (taken only
        // by a pass in which dropout acts, so evaluation does not move the count).
        let mut key = None;
        let mut entered = None;
        for stage in self.architecture.stages().into_iter().filter(|s| s.on_features()) {
            let layer = self.architecture.stage_layer(stage);
            if layer != entered {
                h = hook.features(layer.as_deref().expect("every FC stage has a layer"), h);
                entered = layer;
            }
            if matches!(stage, Stage::Dropout(_)) && !self.dropout.acts(&h) {
                continue;
            }
            let stage_key = match stage {
                Stage::Dropout(_) => {
                    *key.get_or_insert_with(|| hook.dropout_key().unwrap_or_else(|| self.dropout.passes.take_key()))
                }
                _ => DropoutKey::default(),
            };
            h = match self.run_stage(stage, Activation::Features(h), stage_key) {
                Activation::Features(h) => h,
                Activation::Maps(_) => unreachable!("FC stages keep features"),
            };
            if stage.profiled() {
                hook.observe(&self.architecture.stage_name(stage), &h.dims()[1..]);
            }
        }
        h
    }

    /// [`ConvNet::forward`], calling `observe(layer, per_image_shape)` after every layer that
    /// the profile lists, so tests can hold the profile against the real activations.
    pub fn forward_observed(&self, images: Tensor<B, 4>, observe: &mut dyn FnMut(&str, &[usize])) -> Tensor<B, 2> {
        struct Observer<'a>(&'a mut dyn FnMut(&str, &[usize]));
        impl<B: Backend> LayerHook<B> for Observer<'_> {
            fn observe(&mut self, layer: &str, per_image_shape: &[usize]) {
                (self.0)(layer, per_image_shape)
            }
        }
        self.forward_hooked(images, &mut Observer(observe))
    }
}

/// A [`LayerHook`] that keys the dropout masks and does nothing else: what a trainer on one
/// device passes to draw the masks a mesh draws for the same step.
#[derive(Debug, Clone, Copy)]
pub struct KeyedDropout(pub DropoutKey);

impl<B: Backend> LayerHook<B> for KeyedDropout {
    fn dropout_key(&mut self) -> Option<DropoutKey> {
        Some(self.0)
    }
}

/// Callbacks at the layer boundaries of [`ConvNet::forward_hooked`]. The model stays
/// device-agnostic; a caller uses the hook to label what each layer costs (the parallel
/// trainer's communication phases) or to check activation shapes. Every method defaults to
/// doing nothing.
pub trait LayerHook<B: Backend> {
    /// The input of conv layer `layer` ("conv1".."conv5"), about to be consumed; returns the
    /// tensor the layer reads (usually `x` itself).
    fn maps(&mut self, _layer: &str, x: Tensor<B, 4>) -> Tensor<B, 4> {
        x
    }

    /// The input of FC layer `layer` ("fc6".."fc8"), about to be consumed.
    fn features(&mut self, _layer: &str, h: Tensor<B, 2>) -> Tensor<B, 2> {
        h
    }

    /// Which dropout masks this pass draws (a trainer numbers its steps so that any split of
    /// the batch or of a layer draws the same masks); `None`: the key of the model's next
    /// counted pass ([`crate::PassCounter`]).
    fn dropout_key(&mut self) -> Option<DropoutKey> {
        None
    }

    /// The per-image output shape of a layer the profile lists, after it ran.
    fn observe(&mut self, _layer: &str, _per_image_shape: &[usize]) {}

    /// Into how many groups of rows the batch normalisation `layer` ("bn1_1", ...) splits the
    /// batch for its statistics ([`crate::batch_norm_in_groups`]): 1, the whole batch's. A mesh
    /// whose plan keeps each rank's own statistics (as DDP's `BatchNorm2d`) answers its rank
    /// count, so that each group is one rank's batch shard.
    fn batch_stat_groups(&mut self, _layer: &str) -> usize {
        1
    }
}

/// The hook that does nothing.
struct NoHook;

impl<B: Backend> LayerHook<B> for NoHook {}

impl<B: Backend> ConvNet<B> {
    /// Runs one stage on `x`, dropout masks keyed by `key`. Panics if `x` is maps where the
    /// stage takes features or the reverse (a stage out of order).
    pub fn run_stage(&self, stage: Stage, x: Activation<B>, key: DropoutKey) -> Activation<B> {
        use Activation::{Features, Maps};
        match (stage, x) {
            (Stage::Conv(n), Maps(x)) => Maps(self.conv(n).forward(x)),
            (Stage::BatchNorm(n), Maps(x)) => Maps(crate::batch_norm::batch_norm(self.norm(n), x)),
            (Stage::Relu(_), Maps(x)) => Maps(relu(x)),
            (Stage::FcRelu(_), Features(h)) => Features(relu(h)),
            (Stage::Lrn(_), Maps(x)) => Maps(self.lrn.forward(x)),
            (Stage::Pool(_), Maps(x)) => Maps(self.pool.forward(x)),
            (Stage::AvgPool, Maps(x)) => {
                Maps(self.avgpool.as_ref().expect("AvgPool is a stage only of models with one").forward(x))
            }
            (Stage::Flatten, Maps(x)) => Features(x.flatten(1, 3)),
            (Stage::Dropout(n), Features(h)) => Features(self.dropout.forward(h, key, &format!("fc{n}"))),
            (Stage::Fc(n), Features(h)) => Features(self.fcs()[n - 6].forward(h)),
            (stage, x) => panic!("{stage:?} cannot take {:?}-shaped input", x.per_image_shape()),
        }
    }

    /// Conv layer `n` (1-based, in forward order).
    pub fn conv(&self, n: usize) -> &burn::nn::conv::Conv2d<B> {
        let name = self.architecture.conv_name(n);
        self.conv_named(&name).unwrap_or_else(|| panic!("{} has no {name}", self.architecture.name))
    }

    /// The batch normalisation after conv layer `n`.
    pub fn norm(&self, n: usize) -> &crate::BatchNorm<B> {
        let name = self.architecture.stage_name(Stage::BatchNorm(n));
        self.norm_named(&name).unwrap_or_else(|| panic!("{} has no {name}", self.architecture.name))
    }

    /// Every conv layer in forward order.
    pub fn convs(&self) -> Vec<&burn::nn::conv::Conv2d<B>> {
        (1..=self.architecture.convs.len()).map(|n| self.conv(n)).collect()
    }

    /// fc6..fc8.
    pub fn fcs(&self) -> [&burn::nn::Linear<B>; 3] {
        [&self.fc6, &self.fc7, &self.fc8]
    }
}
