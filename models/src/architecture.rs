//! One description of an AlexNet-family network: the single source for both the module that
//! [`crate::AlexNet`] builds and the [`crate::ModelProfile`] that reports its cost.

use serde::{Deserialize, Serialize};

use crate::profile::{ModelProfile, ProfileBuilder};
use crate::stage::Stage;

/// One convolution stage: filters, kernel, stride, padding and groups (towers it is split in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvLayer {
    /// Number of filters (output channels).
    pub filters: usize,
    /// Square kernel side.
    pub kernel: usize,
    /// Stride in both directions.
    pub stride: usize,
    /// Zero padding on every side.
    pub padding: usize,
    /// Channel groups: 2 in the 2012 network's tower-local layers, 1 where towers meet.
    pub groups: usize,
}

impl ConvLayer {
    /// A stride-1, ungrouped layer with "same" padding for an odd kernel.
    pub const fn same(filters: usize, kernel: usize) -> Self {
        Self { filters, kernel, stride: 1, padding: kernel / 2, groups: 1 }
    }

    /// This layer with `groups` channel groups.
    pub const fn grouped(self, groups: usize) -> Self {
        Self { groups, ..self }
    }
}

/// How weights start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InitScheme {
    /// The 2012 paper: weights N(0, 0.01); biases 1 in conv2, conv4, conv5 and the hidden FC
    /// layers (to give ReLUs positive inputs early), 0 elsewhere.
    Paper2012,
    /// Burn's and PyTorch's layer default (Kaiming-uniform with a = sqrt(5), biases uniform in
    /// +-1/sqrt(fan_in)): what torchvision's AlexNet starts from.
    TorchDefault,
    /// He et al. 2015: weights N(0, 2/fan_in), biases 0. Keeps activations at unit scale
    /// through ReLUs, so a small network learns from the first steps.
    He,
}

/// Full description of an AlexNet-family network.
///
/// Stage `i` (1..=5) is: conv, ReLU, then response normalisation if `lrn_after[i-1]`, then
/// 3x3 stride-2 max pooling if `pool_after[i-1]`. Then an optional adaptive average pool,
/// flatten, and fc6, fc7 (ReLU) and fc8 (logits), with dropout in front of FC layer `j` when
/// `dropout_before_fc[j]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    /// CLI name of the family member ("alexnet-2012", ...).
    pub name: String,
    /// Input as `[channels, height, width]`.
    pub input: [usize; 3],
    /// conv1..conv5.
    pub convs: [ConvLayer; 5],
    /// Response normalisation after the ReLU of conv1..conv5.
    pub lrn_after: [bool; 5],
    /// Overlapping max pooling (3x3, stride 2) after conv1..conv5.
    pub pool_after: [bool; 5],
    /// Adaptive average pooling to this spatial size before the FC layers (torchvision).
    pub adaptive_pool: Option<usize>,
    /// Widths of fc6 and fc7.
    pub hidden: [usize; 2],
    /// Number of classes (width of fc8).
    pub classes: usize,
    /// Dropout probability.
    pub dropout: f64,
    /// Dropout on the input of fc6, fc7, fc8.
    pub dropout_before_fc: [bool; 3],
    /// Towers the response normalisation is confined to (2 for the two-tower networks).
    pub towers: usize,
    /// Weight initialisation.
    pub init: InitScheme,
}

/// Why an architecture cannot be built for the requested geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchitectureError(pub String);

impl std::fmt::Display for ArchitectureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArchitectureError {}

/// Side of the overlapping max-pooling window (the 2012 paper's z = 3).
pub const POOL_KERNEL: usize = 3;
/// Stride of the overlapping max pooling (the 2012 paper's s = 2).
pub const POOL_STRIDE: usize = 2;

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
        for stage in self.stages() {
            let name = stage.name();
            match stage {
                Stage::Conv(n) => p.conv(&name, &self.convs[n - 1])?,
                Stage::Lrn(_) => p.shape_only(&name),
                Stage::Pool(_) => p.pool(&name, POOL_KERNEL, POOL_STRIDE)?,
                Stage::AvgPool => p.adaptive_pool(&name, self.adaptive_pool.expect("AvgPool comes with a size")),
                Stage::Flatten => p.flatten()?,
                Stage::Fc(n) => p.linear(&name, self.fc_width(n))?,
                Stage::Relu(_) | Stage::Dropout(_) => {}
            }
        }
        p.finish()
    }

    /// Every parameter's path and shape, as the module built from this architecture holds
    /// them (`conv1.weight` `[filters, in/groups, k, k]`, `fc6.weight` `[in, out]`, biases),
    /// without building it: what a parallel plan is checked against.
    pub fn parameters(&self) -> Result<Vec<(String, Vec<usize>)>, ArchitectureError> {
        let mut width = self.fc_input_features()?;
        let mut channels = self.input[0];
        let mut params = Vec::new();
        for stage in self.stages() {
            let name = stage.name();
            let (weight, out) = match stage {
                Stage::Conv(n) => {
                    let conv = &self.convs[n - 1];
                    let weight = vec![conv.filters, channels / conv.groups, conv.kernel, conv.kernel];
                    channels = conv.filters;
                    (weight, conv.filters)
                }
                Stage::Fc(n) => {
                    let out = self.fc_width(n);
                    let weight = vec![width, out];
                    width = out;
                    (weight, out)
                }
                _ => continue,
            };
            params.push((format!("{name}.weight"), weight));
            params.push((format!("{name}.bias"), vec![out]));
        }
        Ok(params)
    }

    /// Number of features entering fc6 (256x6x6 = 9216 for the full-size networks).
    pub fn fc_input_features(&self) -> Result<usize, ArchitectureError> {
        let profile = self.profile()?;
        let fc6 = profile.layers.iter().position(|l| l.name == "fc6").expect("every architecture has fc6");
        Ok(profile.layers[fc6 - 1].output_shape.iter().product())
    }

    /// Checks a batch shape `[batch, channels, height, width]` against the expected input.
    pub fn check_input(&self, dims: [usize; 4]) -> Result<(), ArchitectureError> {
        let [_, c, h, w] = dims;
        if [c, h, w] != self.input {
            let [ec, eh, ew] = self.input;
            return Err(ArchitectureError(format!(
                "{} expects input [N, {ec}, {eh}, {ew}] (channels, height, width), got [N, {c}, {h}, {w}]",
                self.name
            )));
        }
        Ok(())
    }
}
