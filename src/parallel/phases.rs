//! The AlexNet family's [`LayerHook`] over a step layout's labels: each conv and FC layer's
//! traffic labelled by the layer's name (`conv3:forward`, `fc6:backward`, ...) on a mesh, and
//! the pass's dropout masks keyed by the training step. On one device the labels do nothing and
//! the hook only keys the masks.

use std::marker::PhantomData;

use burn::prelude::*;

use owt_hybrid::StepLabels;
use owt_models::{DropoutKey, LayerHook};

/// Labels an AlexNet pass layer by layer through `L` and keys its dropout masks.
pub struct LayerPhases<B: Backend, L: StepLabels<B>> {
    labels: L,
    dropout: Option<DropoutKey>,
    backend: PhantomData<B>,
}

impl<B: Backend, L: StepLabels<B>> LayerPhases<B, L> {
    /// Labels through `labels`; the masks are keyed by `dropout` (`None`: the model's own
    /// count of passes).
    pub fn new(labels: L, dropout: Option<DropoutKey>) -> Self {
        Self { labels, dropout, backend: PhantomData }
    }

    /// Ends a run of layers at `x` (the conv trunk's features).
    pub fn close<const D: usize>(&mut self, x: Tensor<B, D>) -> Tensor<B, D> {
        self.labels.close(x)
    }

    /// Enters the loss computation with `logits`; the layout labels the backward pass's start.
    pub fn enter_loss(&mut self, logits: Tensor<B, 2>) -> Tensor<B, 2> {
        self.labels.enter("loss", logits)
    }
}

impl<B: Backend, L: StepLabels<B>> LayerHook<B> for LayerPhases<B, L> {
    fn maps(&mut self, layer: &str, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.labels.enter(layer, x)
    }

    fn features(&mut self, layer: &str, h: Tensor<B, 2>) -> Tensor<B, 2> {
        self.labels.enter(layer, h)
    }

    fn dropout_key(&mut self) -> Option<DropoutKey> {
        self.dropout
    }

    fn batch_stat_groups(&mut self, _layer: &str) -> usize {
        self.labels.batch_stat_groups()
    }
}
