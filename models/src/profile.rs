//! Layer profiles: parameters, multiply-accumulates and output shape of every layer.

use serde::{Deserialize, Serialize};

use crate::architecture::{ArchitectureError, ConvLayer};

/// Cost of one layer for one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerProfile {
    /// Layer name as in the module (`conv1`, `fc6`, ...), so plans and profiles agree.
    pub name: String,
    /// Trainable parameters (weights + biases).
    pub params: usize,
    /// Multiply-accumulates per image in the forward pass.
    pub macs: u64,
    /// Output shape per image (`[channels, height, width]` or `[features]`).
    pub output_shape: Vec<usize>,
}

/// Per-layer costs of a whole network, as `owt info` prints them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelProfile {
    /// Model name.
    pub model: String,
    /// Sum of the layers' parameters.
    pub total_params: usize,
    /// Sum of the layers' MACs per image.
    pub total_macs: u64,
    /// Layers in forward order.
    pub layers: Vec<LayerProfile>,
}

impl ModelProfile {
    /// The layer called `name`, if any.
    pub fn layer(&self, name: &str) -> Option<&LayerProfile> {
        self.layers.iter().find(|l| l.name == name)
    }

    /// Parameters and MACs of the layers whose name starts with `prefix` (e.g. "conv", "fc").
    pub fn sum_by_prefix(&self, prefix: &str) -> (usize, u64) {
        self.layers.iter().filter(|l| l.name.starts_with(prefix)).fold((0, 0), |(p, m), l| (p + l.params, m + l.macs))
    }
}

/// Walks a network's stages, tracking the activation shape.
pub(crate) struct ProfileBuilder {
    model: String,
    shape: Vec<usize>,
    layers: Vec<LayerProfile>,
}

fn output_side(input: usize, kernel: usize, stride: usize, padding: usize) -> Option<usize> {
    (input + 2 * padding).checked_sub(kernel).map(|span| span / stride + 1)
}

impl ProfileBuilder {
    pub(crate) fn new(model: &str, input: [usize; 3]) -> Self {
        Self { model: model.to_string(), shape: input.to_vec(), layers: Vec::new() }
    }

    fn push(&mut self, name: &str, params: usize, macs: u64) {
        self.layers.push(LayerProfile { name: name.to_string(), params, macs, output_shape: self.shape.clone() });
    }

    fn spatial(
        &self,
        name: &str,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<[usize; 2], ArchitectureError> {
        let [h, w] = [self.shape[1], self.shape[2]];
        match (output_side(h, kernel, stride, padding), output_side(w, kernel, stride, padding)) {
            (Some(oh), Some(ow)) if oh > 0 && ow > 0 => Ok([oh, ow]),
            _ => Err(ArchitectureError(format!(
                "{}: input too small: {name} needs at least {kernel}x{kernel} (after padding {padding}) but gets {h}x{w}",
                self.model
            ))),
        }
    }

    pub(crate) fn conv(&mut self, name: &str, conv: &ConvLayer) -> Result<(), ArchitectureError> {
        let in_channels = self.shape[0];
        if in_channels % conv.groups != 0 || conv.filters % conv.groups != 0 {
            return Err(ArchitectureError(format!(
                "{}: {name} has {} groups but {in_channels} input and {} output channels",
                self.model, conv.groups, conv.filters
            )));
        }
        let [oh, ow] = self.spatial(name, conv.kernel, conv.stride, conv.padding)?;
        let per_filter = in_channels / conv.groups * conv.kernel * conv.kernel;
        let params = conv.filters * per_filter + conv.filters;
        let macs = (conv.filters * per_filter * oh * ow) as u64;
        self.shape = vec![conv.filters, oh, ow];
        self.push(name, params, macs);
        Ok(())
    }

    pub(crate) fn pool(&mut self, name: &str, kernel: usize, stride: usize) -> Result<(), ArchitectureError> {
        let [oh, ow] = self.spatial(name, kernel, stride, 0)?;
        self.shape = vec![self.shape[0], oh, ow];
        self.push(name, 0, 0);
        Ok(())
    }

    pub(crate) fn adaptive_pool(&mut self, name: &str, side: usize) {
        self.shape = vec![self.shape[0], side, side];
        self.push(name, 0, 0);
    }

    pub(crate) fn shape_only(&mut self, name: &str) {
        self.push(name, 0, 0);
    }

    pub(crate) fn flatten(&mut self) {
        self.shape = vec![self.shape.iter().product()];
    }

    pub(crate) fn linear(&mut self, name: &str, width: usize) {
        let d_in = self.shape[0];
        self.shape = vec![width];
        self.push(name, d_in * width + width, (d_in * width) as u64);
    }

    pub(crate) fn finish(self) -> ModelProfile {
        ModelProfile {
            model: self.model,
            total_params: self.layers.iter().map(|l| l.params).sum(),
            total_macs: self.layers.iter().map(|l| l.macs).sum(),
            layers: self.layers,
        }
    }
}
