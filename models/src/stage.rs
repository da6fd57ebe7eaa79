//! The stages of a forward pass, in order: the one list that the module's forward
//! pass ([`crate::ConvNet::forward`]), the layer profile ([`Architecture::profile`]), the
//! parameter list ([`Architecture::parameters`]) and owt's per-layer timing all walk, so the
//! network's sequence is written once.

use burn::prelude::*;
use burn::tensor::activation::relu;

use crate::alexnet::ConvNet;
use crate::architecture::{Architecture, Family};
use crate::dropout::DropoutKey;

/// One step of the forward pass. Conv-side stages carry the conv layer's position in the
/// network (1..=`convs.len()`), FC-side stages the FC layer's number (6..=8, as in the
/// papers); [`Architecture::stage_name`] names them (`conv3`, `conv3_2`, `bn3_2`, `fc6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Convolution `n`.
    Conv(usize),
    /// Batch normalisation of conv `n`'s output (VGG-BN).
    BatchNorm(usize),
    /// The ReLU after conv `n`.
    Relu(usize),
    /// Response normalisation after conv `n`'s ReLU.
    Lrn(usize),
    /// Max pooling after conv `n`.
    Pool(usize),
    /// Adaptive average pooling in front of the FC layers (torchvision's layout).
    AvgPool,
    /// Feature maps to one feature vector per image.
    Flatten,
    /// Dropout on the input of FC layer `n`.
    Dropout(usize),
    /// Fully-connected layer `n`.
    Fc(usize),
    /// The ReLU after FC layer `n`.
    FcRelu(usize),
}

impl Stage {
    /// Whether the layer profile has a row for this stage (layers that change the shape or
    /// hold parameters; ReLU, dropout and flatten do not).
    pub fn profiled(self) -> bool {
        matches!(
            self,
            Stage::Conv(_) | Stage::BatchNorm(_) | Stage::Lrn(_) | Stage::Pool(_) | Stage::AvgPool | Stage::Fc(_)
        )
    }

    /// Whether the stage runs on flattened features (after [`Stage::Flatten`]).
    pub fn on_features(self) -> bool {
        matches!(self, Stage::Dropout(_) | Stage::Fc(_) | Stage::FcRelu(_))
    }
}

impl Architecture {
    /// The suffix that names conv layer `n` and its stages: `3` in an AlexNet, `3_2` (block 3,
    /// second layer; blocks end at a pooling) in a VGG.
    fn conv_suffix(&self, n: usize) -> String {
        match self.family {
            Family::AlexNet => n.to_string(),
            Family::Vgg => {
                let block = self.block_of(n);
                let first = self.pool_after[..n - 1].iter().rposition(|&p| p).map_or(1, |i| i + 2);
                format!("{block}_{}", n - first + 1)
            }
        }
    }

    /// The block conv layer `n` is in: 1 + the poolings before it.
    fn block_of(&self, n: usize) -> usize {
        1 + self.pool_after[..n - 1].iter().filter(|&&p| p).count()
    }

    /// The name of conv layer `n` (1-based): `conv3`, or `conv3_2` in a VGG.
    pub fn conv_name(&self, n: usize) -> String {
        format!("conv{}", self.conv_suffix(n))
    }

    /// The stage's name (`conv1`, `bn1_1`, `relu1`, `lrn1`, `pool1`, `avgpool`, `flatten`,
    /// `dropout6`, `fc6`, `relu6`): the layer profile's and the timing profile's row names.
    /// A VGG's pooling is named by its block (`pool3` after `conv3_3`), as in its Caffe models.
    pub fn stage_name(&self, stage: Stage) -> String {
        match stage {
            Stage::Conv(n) => self.conv_name(n),
            Stage::BatchNorm(n) => format!("bn{}", self.conv_suffix(n)),
            Stage::Relu(n) => format!("relu{}", self.conv_suffix(n)),
            Stage::Lrn(n) => format!("lrn{}", self.conv_suffix(n)),
            Stage::Pool(n) => match self.family {
                Family::AlexNet => format!("pool{n}"),
                Family::Vgg => format!("pool{}", self.block_of(n)),
            },
            Stage::AvgPool => "avgpool".into(),
            Stage::Flatten => "flatten".into(),
            Stage::Dropout(n) => format!("dropout{n}"),
            Stage::Fc(n) => format!("fc{n}"),
            Stage::FcRelu(n) => format!("relu{n}"),
        }
    }

    /// The layer the stage belongs to (`conv3` for `Lrn(3)`, `conv3_2` for its batch
    /// normalisation, `fc6` for `Dropout(6)`): what traffic labels name. `None` for the
    /// stages between the conv trunk and the FC layers.
    pub fn stage_layer(&self, stage: Stage) -> Option<String> {
        match stage {
            Stage::Conv(n) | Stage::BatchNorm(n) | Stage::Relu(n) | Stage::Lrn(n) | Stage::Pool(n) => {
                Some(self.conv_name(n))
            }
            Stage::Dropout(n) | Stage::Fc(n) | Stage::FcRelu(n) => Some(format!("fc{n}")),
            Stage::AvgPool | Stage::Flatten => None,
        }
    }

    /// The stages of the forward pass in order: conv n, its batch normalisation where the
    /// network has it, its ReLU, response normalisation and pooling where marked; the
    /// adaptive pool if any; flatten; then for FC layer n = 6..8 dropout where marked, the
    /// layer and (for 6 and 7) its ReLU.
    ///
    /// ```
    /// use owt_models::{AlexNet2012Config, Stage, VggConfig};
    ///
    /// let arch = AlexNet2012Config::new().architecture();
    /// let stages = arch.stages();
    /// let names: Vec<String> = stages.iter().take(5).map(|&s| arch.stage_name(s)).collect();
    /// assert_eq!(names, ["conv1", "relu1", "lrn1", "pool1", "conv2"]);
    /// assert_eq!(stages.last(), Some(&Stage::Fc(8)));
    ///
    /// let vgg = VggConfig::new(16).with_batch_norm(true).architecture();
    /// let names: Vec<String> = vgg.stages().iter().take(8).map(|&s| vgg.stage_name(s)).collect();
    /// assert_eq!(names, ["conv1_1", "bn1_1", "relu1_1", "conv1_2", "bn1_2", "relu1_2", "pool1", "conv2_1"]);
    /// ```
    pub fn stages(&self) -> Vec<Stage> {
        let mut stages = Vec::new();
        for i in 0..self.convs.len() {
            let n = i + 1;
            stages.push(Stage::Conv(n));
            if self.batch_norm {
                stages.push(Stage::BatchNorm(n));
            }
            stages.push(Stage::Relu(n));
            if self.lrn_after[i] {
                stages.push(Stage::Lrn(n));
            }
            if self.pool_after[i] {
                stages.push(Stage::Pool(n));
            }
        }
        if self.adaptive_pool.is_some() {
            stages.push(Stage::AvgPool);
        }
        stages.push(Stage::Flatten);
        for j in 0..3 {
            let n = j + 6;
            if self.dropout_before_fc[j] {
                stages.push(Stage::Dropout(n));
            }
            stages.push(Stage::Fc(n));
            if n < 8 {
                stages.push(Stage::FcRelu(n));
            }
        }
        stages
    }

    /// The output width of FC layer `n` (6, 7 or 8).
    pub fn fc_width(&self, n: usize) -> usize {
        match n {
            6 => self.hidden[0],
            7 => self.hidden[1],
            _ => self.classes,
        }
    }
}

/// An activation between stages: feature maps `[n, c, h, w]` or features `[n, f]`.
#[derive(Debug, Clone)]
pub enum Activation<B: Backend> {
    /// Feature maps, before [`Stage::Flatten`].
    Maps(Tensor<B, 4>),
    /// Features, after it.
    Features(Tensor<B, 2>),
}

impl<B: Backend> Activation<B> {
    /// The shape of one image's activation.
    pub fn per_image_shape(&self) -> Vec<usize> {
        match self {
            Activation::Maps(x) => x.dims()[1..].to_vec(),
            Activation::Features(h) => h.dims()[1..].to_vec(),
        }
    }
}

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
