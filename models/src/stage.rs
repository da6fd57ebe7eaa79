//! The stages of a forward pass ([`Stage`]) and what flows between them ([`Activation`]). A
//! network's stages in order ([`crate::Architecture::stages`]) are the one list that the
//! module's forward pass ([`crate::ConvNet::forward`]), the layer profile
//! ([`crate::Architecture::profile`]), the parameter list ([`crate::Architecture::parameters`])
//! and owt's per-layer timing all walk, so the network's sequence is written once.

use burn::prelude::*;

/// One step of the forward pass. Conv-side stages carry the conv layer's position in the
/// network (1..=`convs.len()`), FC-side stages the FC layer's number (6..=8, as in the
/// papers); [`crate::Architecture::stage_name`] names them (`conv3`, `conv3_2`, `bn3_2`, `fc6`).
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
