//! The grid of convolutions of issue 77 (kernels 1x7, 7x1, 3x5, 11x11; strides (1,1), (2,1),
//! (1,3), (4,4); dilations (1,1), (2,1), (2,3); padding symmetric, asymmetric, `Same` and
//! `Valid`; groups 1, 2 and depthwise; channel counts that do and do not split over 2 ranks;
//! odd input sides), the small network each runs in and the layouts of its parameters over
//! 2 ranks: one definition for the test binaries that hold it on Flex (`parallel_training`,
//! f64) and on the wgpu mesh (`owt`, f32).

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::ops::{ConvOptions, PadMode};
use owt_hybrid::{Placement, PlanRule};

/// A user's small network around one convolution of the grid.
#[derive(Module, Debug)]
pub(crate) struct GridNet<B: Backend> {
    /// The convolution of the grid.
    pub(crate) conv: Conv2d<B>,
    /// A linear layer from its channels' means to the classes.
    pub(crate) fc: Linear<B>,
}

impl<B: Backend> GridNet<B> {
    pub(crate) fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let y = burn::tensor::activation::relu(self.conv.forward(x));
        let [n, c, _, _] = y.dims();
        self.fc.forward(y.mean_dim(3).mean_dim(2).reshape([n, c]))
    }
}

/// One configuration of the grid.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) kernel: [usize; 2],
    pub(crate) stride: [usize; 2],
    pub(crate) dilation: [usize; 2],
    pub(crate) padding: PaddingConfig2d,
    /// (input channels, output channels, groups).
    pub(crate) channels: (usize, usize, usize),
    /// Rows and columns of the input.
    pub(crate) input: [usize; 2],
}

pub(crate) const CLASSES: usize = 3;
pub(crate) const BATCH: usize = 4;

/// The grid: every kernel, stride, dilation and padding, each with one of the channel layouts
/// in turn (groups 1, 2 and depthwise; counts that split over 2 ranks and counts that do
/// not). `Same` at a stride above 1 is TensorFlow's (the output `ceil(side / stride)`, more
/// padding after than before where the total is odd), which Burn computes and PyTorch refuses.
pub(crate) fn grid() -> Vec<Case> {
    let channels = [(4, 6, 1), (3, 5, 1), (4, 6, 2), (6, 4, 2), (4, 8, 4), (3, 3, 3)];
    let mut cases = Vec::new();
    for kernel in [[1, 7], [7, 1], [3, 5], [11, 11]] {
        for stride in [[1, 1], [2, 1], [1, 3], [4, 4]] {
            for dilation in [[1, 1], [2, 1], [2, 3]] {
                let paddings = [
                    PaddingConfig2d::Explicit(1, 2, 1, 2),
                    PaddingConfig2d::Explicit(0, 1, 2, 3),
                    PaddingConfig2d::Same,
                    PaddingConfig2d::Valid,
                ];
                for padding in paddings {
                    // Odd sides, large enough for the dilated kernel.
                    let side = |i: usize| ((kernel[i] - 1) * dilation[i] + 1 + 4) | 1;
                    let channels = channels[cases.len() % channels.len()];
                    cases.push(Case { kernel, stride, dilation, padding, channels, input: [side(0), side(1) + 2] });
                }
            }
        }
    }
    cases
}

/// A deterministic batch: values from a fixed sequence, labels cycling over the classes.
pub(crate) fn batch(case: &Case) -> (TensorData, TensorData) {
    let (c, [h, w]) = (case.channels.0, case.input);
    let n = BATCH * c * h * w;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<f64> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect();
    let labels: Vec<i64> = (0..BATCH as i64).map(|i| i % CLASSES as i64).collect();
    (TensorData::new(values, [BATCH, c, h, w]), TensorData::new(labels, [BATCH]))
}

pub(crate) fn init<B: Backend>(case: &Case, device: &B::Device) -> GridNet<B> {
    let (c_in, c_out, groups) = case.channels;
    GridNet {
        conv: Conv2dConfig::new([c_in, c_out], case.kernel)
            .with_stride(case.stride)
            .with_dilation(case.dilation)
            .with_padding(case.padding.clone())
            .with_groups(groups)
            .init(device),
        fc: LinearConfig::new(c_out, CLASSES).init(device),
    }
}

/// The three layouts: (name, conv rules, input placement).
pub(crate) fn layouts() -> [(&'static str, Vec<PlanRule>, Placement); 3] {
    let rule = |pattern: &str, placement| PlanRule { pattern: pattern.into(), placement };
    let split_filters = vec![rule("conv.weight", Placement::Shard(0)), rule("conv.bias", Placement::Shard(0))];
    [
        ("data parallel", vec![], Placement::Shard(0)),
        ("model parallel over channels", split_filters.clone(), Placement::Replicate),
        ("two towers", split_filters, Placement::Shard(1)),
    ]
}

/// (loss, gradients, updated weights) of one SGD step.
pub(crate) type Step = (f64, Vec<(String, Vec<f64>)>, Vec<(String, Vec<f64>)>);

/// One SGD step (learning rate 0.1) of `model` on `x` and `y`: its loss, gradients and
/// updated weights as values, and the updated model.
pub(crate) fn step<B: burn::tensor::backend::AutodiffBackend>(
    model: GridNet<B>,
    x: Tensor<B, 4>,
    y: Tensor<B, 1, Int>,
    device: &B::Device,
) -> (Step, GridNet<B>) {
    let loss = CrossEntropyLossConfig::new().init(device).forward(model.forward(x), y);
    let value = loss.clone().into_scalar().elem::<f64>();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let gradients = owt_hybrid::gradient_values(&model, &grads)
        .into_iter()
        .map(|(name, g)| {
            let g = g.unwrap_or_else(|| panic!("{name} has no gradient"));
            (name, g)
        })
        .collect();
    let model = SgdConfig::new().init::<B, GridNet<B>>().step(0.1, model, grads);
    ((value, gradients, owt_hybrid::parameter_values(&model)), model)
}

/// The input and options the backend's convolution receives for `case` on input `x`: Burn
/// 0.21's `conv2d` pads an asymmetric padding (top != bottom or left != right, `Same` where
/// its total is odd) into the input first and passes zero padding, as PyTorch does before
/// cuDNN; a symmetric one goes to the backend in its options, a padding per axis.
pub(crate) fn as_the_backend_sees_it<B: Backend>(case: &Case, x: Tensor<B, 4>) -> (Tensor<B, 4>, ConvOptions<2>) {
    let ((top, bottom), (left, right)) = (padding_pair(case, 0), padding_pair(case, 1));
    let options = |padding| ConvOptions::new(case.stride, padding, case.dilation, case.channels.2);
    if (top, left) == (bottom, right) {
        (x, options([top, left]))
    } else {
        (x.pad((left, right, top, bottom), PadMode::Constant(0.0)), options([0, 0]))
    }
}

/// (before, after) zero rows (`axis` 0) or columns (1) of `case`, as Burn's `Conv2d` pads:
/// `Same` is TensorFlow's (`ceil(side / stride)` outputs from the kernel's undilated span, the
/// odd one after).
pub(crate) fn padding_pair(case: &Case, axis: usize) -> (usize, usize) {
    let (side, k, s) = (case.input[axis], case.kernel[axis], case.stride[axis]);
    match case.padding {
        PaddingConfig2d::Valid => (0, 0),
        PaddingConfig2d::Explicit(top, left, bottom, right) => [(top, bottom), (left, right)][axis],
        PaddingConfig2d::Same => {
            let total = ((side.div_ceil(s) - 1) * s + k).saturating_sub(side);
            (total / 2, total - total / 2)
        }
    }
}
