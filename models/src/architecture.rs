//! One description of a network of the AlexNet and VGG families: the single source for both the module that
//! [`crate::ConvNet`] builds and the [`crate::ModelProfile`] that reports its cost.

use serde::{Deserialize, Serialize};

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
    /// torchvision's VGG: conv weights N(0, 2/fan_out), Linear weights N(0, 0.01), biases 0,
    /// batch normalisation scale 1 and shift 0.
    TorchvisionVgg,
}

/// How a network's conv layers are named: what parameter paths, plans and profiles say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Family {
    /// `conv1`..`conv5`, as the AlexNet papers number them.
    AlexNet,
    /// `conv{block}_{i}` (`conv1_1`..`conv5_3`, blocks ending at a pooling), batch
    /// normalisation `bn{block}_{i}`: the names of the VGG paper's Caffe models.
    Vgg,
}

/// A max-pooling window: side and stride.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolWindow {
    /// Square window side.
    pub kernel: usize,
    /// Stride in both directions.
    pub stride: usize,
}

impl PoolWindow {
    /// AlexNet's overlapping pooling: 3x3, stride 2.
    pub const OVERLAPPING: PoolWindow = PoolWindow { kernel: POOL_KERNEL, stride: POOL_STRIDE };
    /// VGG's pooling: 2x2, stride 2 (halves the sides).
    pub const HALVING: PoolWindow = PoolWindow { kernel: 2, stride: 2 };
}

/// Full description of a plain convolutional network of the AlexNet and VGG families.
///
/// Conv stage `i` (1..=`convs.len()`) is: conv, batch normalisation if `batch_norm`, ReLU,
/// then response normalisation if `lrn_after[i-1]`, then max pooling (`pool`) if
/// `pool_after[i-1]`. Then an optional adaptive average pool, flatten, and fc6, fc7 (ReLU)
/// and fc8 (logits), with dropout in front of FC layer `j` when `dropout_before_fc[j]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    /// CLI name of the family member ("alexnet-2012", "vgg16-bn", ...).
    pub name: String,
    /// How the conv layers are named (`conv3` or `conv3_2`).
    pub family: Family,
    /// Input as `[channels, height, width]`.
    pub input: [usize; 3],
    /// The conv layers in order (five in an AlexNet, 8 to 13 in a VGG).
    pub convs: Vec<ConvLayer>,
    /// Batch normalisation between every conv layer and its ReLU (the VGG-BN networks).
    pub batch_norm: bool,
    /// Response normalisation after the ReLU of each conv layer.
    pub lrn_after: Vec<bool>,
    /// Max pooling after each conv layer.
    pub pool_after: Vec<bool>,
    /// The max-pooling window (AlexNet's overlapping 3x3 stride 2, VGG's 2x2 stride 2).
    pub pool: PoolWindow,
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
    /// Every parameter's path and shape, as the module built from this architecture holds
    /// them (`conv1.weight` `[filters, in/groups, k, k]`, `fc6.weight` `[in, out]`, biases),
    /// without building it: what a parallel plan is checked against.
    pub fn parameters(&self) -> Result<Vec<(String, Vec<usize>)>, ArchitectureError> {
        let mut width = self.fc_input_features()?;
        let mut channels = self.input[0];
        let mut params = Vec::new();
        for stage in self.stages() {
            let name = self.stage_name(stage);
            let (weight, out) = match stage {
                Stage::BatchNorm(_) => {
                    params.push((format!("{name}.gamma"), vec![channels]));
                    params.push((format!("{name}.beta"), vec![channels]));
                    continue;
                }
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

    /// The state a module built from this architecture keeps besides its parameters: the
    /// running means and variances of batch normalisation (`bn1_1.running_mean` `[64]`), which
    /// its record holds and evaluation reads, but no optimizer updates.
    pub fn buffers(&self) -> Vec<(String, Vec<usize>)> {
        let mut buffers = Vec::new();
        for stage in self.stages() {
            if let Stage::BatchNorm(n) = stage {
                let name = self.stage_name(stage);
                let channels = vec![self.convs[n - 1].filters];
                buffers.push((format!("{name}.running_mean"), channels.clone()));
                buffers.push((format!("{name}.running_var"), channels));
            }
        }
        buffers
    }

    /// Refuses per-conv lists of another length than the conv layers, and a VGG of more conv
    /// layers in a block than its module has room for.
    pub(crate) fn check_lists(&self) -> Result<(), ArchitectureError> {
        let n = self.convs.len();
        if n == 0 || self.lrn_after.len() != n || self.pool_after.len() != n {
            return Err(ArchitectureError(format!(
                "{}: {n} conv layers need as many response-normalisation and pooling marks, got {} and {}",
                self.name,
                self.lrn_after.len(),
                self.pool_after.len()
            )));
        }
        for i in 1..=n {
            let name = self.conv_name(i);
            if !CONV_FIELDS.contains(&name.as_str()) {
                return Err(ArchitectureError(format!(
                    "{}: conv layer {i} would be {name}, which the module has no field for (AlexNet: conv1..conv5; VGG: up to conv5_3, 2-2-3-3-3 per block)",
                    self.name
                )));
            }
        }
        Ok(())
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

/// The conv layers a [`crate::ConvNet`] has fields for, by name.
pub(crate) const CONV_FIELDS: [&str; 18] = [
    "conv1", "conv2", "conv3", "conv4", "conv5", "conv1_1", "conv1_2", "conv2_1", "conv2_2", "conv3_1", "conv3_2",
    "conv3_3", "conv4_1", "conv4_2", "conv4_3", "conv5_1", "conv5_2", "conv5_3",
];

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
