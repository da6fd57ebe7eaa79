//! The stages of an AlexNet forward pass, in order: the one list that the module's forward
//! pass ([`crate::AlexNet::forward`]), the layer profile ([`Architecture::profile`]), the
//! parameter list ([`Architecture::parameters`]) and owt's per-layer timing all walk, so the
//! network's sequence is written once.

use burn::prelude::*;
use burn::tensor::activation::relu;

use crate::alexnet::AlexNet;
use crate::architecture::Architecture;
use crate::dropout::DropoutKey;

/// One step of the forward pass. Conv layers are numbered 1..=5 and FC layers 6..=8, as in
/// the papers (`Relu(n)` follows conv n or fc n).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Convolution `n`.
    Conv(usize),
    /// The ReLU after layer `n`.
    Relu(usize),
    /// Response normalisation after conv `n`'s ReLU.
    Lrn(usize),
    /// Overlapping max pooling after conv `n`.
    Pool(usize),
    /// Adaptive average pooling in front of the FC layers (torchvision's layout).
    AvgPool,
    /// Feature maps to one feature vector per image.
    Flatten,
    /// Dropout on the input of FC layer `n`.
    Dropout(usize),
    /// Fully-connected layer `n`.
    Fc(usize),
}

impl Stage {
    /// The stage's name (`conv1`, `relu1`, `lrn1`, `pool1`, `avgpool`, `flatten`, `dropout6`,
    /// `fc6`, `relu6`): the layer profile's and the timing profile's row names.
    pub fn name(self) -> String {
        match self {
            Stage::Conv(n) => format!("conv{n}"),
            Stage::Relu(n) => format!("relu{n}"),
            Stage::Lrn(n) => format!("lrn{n}"),
            Stage::Pool(n) => format!("pool{n}"),
            Stage::AvgPool => "avgpool".into(),
            Stage::Flatten => "flatten".into(),
            Stage::Dropout(n) => format!("dropout{n}"),
            Stage::Fc(n) => format!("fc{n}"),
        }
    }

    /// The layer with parameters the stage belongs to (`conv3` for `Lrn(3)`, `fc6` for
    /// `Dropout(6)`): what parameter paths and traffic labels name. `None` for the stages
    /// between the conv trunk and the FC layers.
    pub fn layer(self) -> Option<String> {
        match self {
            Stage::Conv(n) | Stage::Lrn(n) | Stage::Pool(n) => Some(format!("conv{n}")),
            Stage::Relu(n) if n <= 5 => Some(format!("conv{n}")),
            Stage::Relu(n) | Stage::Dropout(n) | Stage::Fc(n) => Some(format!("fc{n}")),
            Stage::AvgPool | Stage::Flatten => None,
        }
    }

    /// Whether the layer profile has a row for this stage (layers that change the shape or
    /// hold parameters; ReLU, dropout and flatten do not).
    pub fn profiled(self) -> bool {
        matches!(self, Stage::Conv(_) | Stage::Lrn(_) | Stage::Pool(_) | Stage::AvgPool | Stage::Fc(_))
    }

    /// Whether the stage runs on flattened features (after [`Stage::Flatten`]).
    pub fn on_features(self) -> bool {
        matches!(self, Stage::Dropout(_) | Stage::Fc(_)) || matches!(self, Stage::Relu(n) if n >= 6)
    }
}

impl Architecture {
    /// The stages of the forward pass in order: conv n, its ReLU, response normalisation and
    /// pooling where marked (n = 1..5); the adaptive pool if any; flatten; then for FC layer
    /// n = 6..8 dropout where marked, the layer and (for 6 and 7) its ReLU.
    ///
    /// ```
    /// use owt_models::{AlexNet2012Config, Stage};
    ///
    /// let stages = AlexNet2012Config::new().architecture().stages();
    /// let names: Vec<String> = stages.iter().take(5).map(|s| s.name()).collect();
    /// assert_eq!(names, ["conv1", "relu1", "lrn1", "pool1", "conv2"]);
    /// assert_eq!(stages.last(), Some(&Stage::Fc(8)));
    /// ```
    pub fn stages(&self) -> Vec<Stage> {
        let mut stages = Vec::new();
        for i in 0..5 {
            let n = i + 1;
            stages.extend([Stage::Conv(n), Stage::Relu(n)]);
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
                stages.push(Stage::Relu(n));
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

impl<B: Backend> AlexNet<B> {
    /// Runs one stage on `x`, dropout masks keyed by `key`. Panics if `x` is maps where the
    /// stage takes features or the reverse (a stage out of order).
    pub fn run_stage(&self, stage: Stage, x: Activation<B>, key: DropoutKey) -> Activation<B> {
        use Activation::{Features, Maps};
        match (stage, x) {
            (Stage::Conv(n), Maps(x)) => Maps(self.convs()[n - 1].forward(x)),
            (Stage::Relu(_), Maps(x)) => Maps(relu(x)),
            (Stage::Relu(_), Features(h)) => Features(relu(h)),
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

    /// conv1..conv5.
    pub fn convs(&self) -> [&burn::nn::conv::Conv2d<B>; 5] {
        [&self.conv1, &self.conv2, &self.conv3, &self.conv4, &self.conv5]
    }

    /// fc6..fc8.
    pub fn fcs(&self) -> [&burn::nn::Linear<B>; 3] {
        [&self.fc6, &self.fc7, &self.fc8]
    }
}
