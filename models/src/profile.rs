//! Layer profiles: parameters, multiply-accumulates and output shape of every layer.

use serde::{Deserialize, Serialize};

use crate::architecture::{Architecture, ArchitectureError, ConvLayer};
use crate::stage::Stage;

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

    /// Elements of every layer's output for one image, summed: the activations a training
    /// step keeps per image (saturating at `u64::MAX`).
    pub fn activation_elements(&self) -> u64 {
        self.layers
            .iter()
            .map(|l| l.output_shape.iter().fold(1u64, |acc, &x| acc.saturating_mul(x as u64)))
            .fold(0u64, u64::saturating_add)
    }

    /// Parameters and MACs of the layers whose name starts with `prefix` (e.g. "conv", "fc").
    pub fn sum_by_prefix(&self, prefix: &str) -> (usize, u64) {
        self.layers.iter().filter(|l| l.name.starts_with(prefix)).fold((0, 0), |(p, m), l| (p + l.params, m + l.macs))
    }
}

impl Architecture {
    /// The layer profile (parameters, MACs, output shape per layer), or why the geometry is
    /// impossible (an input too small for the kernels, channels not divisible by groups).
    ///
    /// ```
    /// use owt_models::AlexNetOwtConfig;
    ///
    /// let profile = AlexNetOwtConfig::new().architecture().profile().unwrap();
    /// assert_eq!(profile.total_params, 61_100_840);
    /// assert_eq!(profile.layer("conv1").unwrap().macs, 70_276_800);
    /// let (conv_params, conv_macs) = profile.sum_by_prefix("conv");
    /// assert!(conv_params * 20 < profile.total_params && conv_macs * 10 > profile.total_macs * 9);
    /// ```
    pub fn profile(&self) -> Result<ModelProfile, ArchitectureError> {
        let mut p = ProfileBuilder::new(&self.name, self.input);
        self.check_lists()?;
        for stage in self.stages() {
            let name = self.stage_name(stage);
            match stage {
                Stage::Conv(n) => p.conv(&name, &self.convs[n - 1])?,
                Stage::BatchNorm(_) => p.batch_norm(&name),
                Stage::Lrn(_) => p.shape_only(&name),
                Stage::Pool(_) => p.pool(&name, self.pool.kernel, self.pool.stride)?,
                Stage::AvgPool => p.adaptive_pool(&name, self.adaptive_pool.expect("AvgPool comes with a size")),
                Stage::Flatten => p.flatten()?,
                Stage::Fc(n) => p.linear(&name, self.fc_width(n))?,
                Stage::Relu(_) | Stage::FcRelu(_) | Stage::Dropout(_) => {}
            }
        }
        p.finish()
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
        if h.checked_add(2 * padding).is_none() || w.checked_add(2 * padding).is_none() {
            return Err(self.too_large(name, "input sides"));
        }
        match (output_side(h, kernel, stride, padding), output_side(w, kernel, stride, padding)) {
            (Some(oh), Some(ow)) if oh > 0 && ow > 0 => Ok([oh, ow]),
            _ => Err(ArchitectureError(format!(
                "{}: input too small: {name} needs at least {kernel}x{kernel} (after padding {padding}) but gets {h}x{w}",
                self.model
            ))),
        }
    }

    /// The error for a size that does not fit in 64 bits.
    fn too_large(&self, name: &str, what: &str) -> ArchitectureError {
        ArchitectureError(format!("{}: {name} is too large: its {what} overflow 64-bit arithmetic", self.model))
    }

    pub(crate) fn conv(&mut self, name: &str, conv: &ConvLayer) -> Result<(), ArchitectureError> {
        let in_channels = self.shape[0];
        if conv.groups == 0 || in_channels % conv.groups != 0 || conv.filters % conv.groups != 0 {
            return Err(ArchitectureError(format!(
                "{}: {name} has {} groups but {in_channels} input and {} output channels",
                self.model, conv.groups, conv.filters
            )));
        }
        let [oh, ow] = self.spatial(name, conv.kernel, conv.stride, conv.padding)?;
        let per_filter = (in_channels / conv.groups)
            .checked_mul(conv.kernel)
            .and_then(|x| x.checked_mul(conv.kernel))
            .ok_or_else(|| self.too_large(name, "weights"))?;
        let params = conv
            .filters
            .checked_mul(per_filter)
            .and_then(|x| x.checked_add(conv.filters))
            .ok_or_else(|| self.too_large(name, "parameters"))?;
        let macs = [per_filter, oh, ow]
            .into_iter()
            .try_fold(conv.filters as u64, |acc, x| acc.checked_mul(x as u64))
            .ok_or_else(|| self.too_large(name, "multiply-accumulates"))?;
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

    /// Batch normalisation: a scale and a shift per channel.
    pub(crate) fn batch_norm(&mut self, name: &str) {
        let channels = self.shape[0];
        self.push(name, 2 * channels, 0);
    }

    pub(crate) fn shape_only(&mut self, name: &str) {
        self.push(name, 0, 0);
    }

    pub(crate) fn flatten(&mut self) -> Result<(), ArchitectureError> {
        let features = self
            .shape
            .iter()
            .try_fold(1usize, |acc, &x| acc.checked_mul(x))
            .ok_or_else(|| self.too_large("flatten", "features"))?;
        self.shape = vec![features];
        Ok(())
    }

    pub(crate) fn linear(&mut self, name: &str, width: usize) -> Result<(), ArchitectureError> {
        let d_in = self.shape[0];
        let weights = d_in.checked_mul(width).ok_or_else(|| self.too_large(name, "weights"))?;
        let params = weights.checked_add(width).ok_or_else(|| self.too_large(name, "parameters"))?;
        self.shape = vec![width];
        self.push(name, params, weights as u64);
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<ModelProfile, ArchitectureError> {
        let total_params = self.layers.iter().try_fold(0usize, |acc, l| acc.checked_add(l.params));
        let total_macs = self.layers.iter().try_fold(0u64, |acc, l| acc.checked_add(l.macs));
        match (total_params, total_macs) {
            (Some(total_params), Some(total_macs)) => {
                Ok(ModelProfile { model: self.model, total_params, total_macs, layers: self.layers })
            }
            _ => Err(ArchitectureError(format!(
                "{}: the model is too large: its totals overflow 64-bit arithmetic",
                self.model
            ))),
        }
    }
}
