//! Any convolution a Burn user writes (issue 77, point 1, on Flex): a grid of `Conv2d`
//! configurations (kernels 1x7, 7x1, 3x5, 11x11; strides (1,1), (2,1), (1,3), (4,4); dilations
//! (1,1), (2,1), (2,3); padding symmetric, asymmetric (`Explicit` with top != bottom and
//! left != right), `Same` and `Valid`; groups 1, 2 and depthwise; channel counts that do and
//! do not split over 2 ranks; odd input sides), each in a small network (conv, ReLU, mean over
//! the map, linear), trained one SGD step on one device and on `Hybrid<Flex>` on 2 ranks under
//! data parallelism (batch shards), model parallelism over the output channels (filters and
//! bias split) and the two towers' layout (filters and input channels split): the loss, every
//! gradient and every updated weight equal one device's in f64 within 1e-10 of each tensor's
//! scale.

use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement, Plan, PlanRule};

use crate::{relative_gap, serial, use_f64};

type Ref = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

/// Relative tolerance against one device, as the other one-step tests hold (f64).
const TOLERANCE: f64 = 1e-10;

/// A user's small network around one convolution of the grid.
#[derive(Module, Debug)]
struct GridNet<B: Backend> {
    conv: Conv2d<B>,
    fc: Linear<B>,
}

impl<B: Backend> GridNet<B> {
    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let y = burn::tensor::activation::relu(self.conv.forward(x));
        let [n, c, _, _] = y.dims();
        self.fc.forward(y.mean_dim(3).mean_dim(2).reshape([n, c]))
    }
}

/// One configuration of the grid.
#[derive(Debug, Clone)]
struct Case {
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    padding: PaddingConfig2d,
    /// (input channels, output channels, groups).
    channels: (usize, usize, usize),
    input: [usize; 2],
}

const CLASSES: usize = 3;
const BATCH: usize = 4;

/// The grid: every kernel, stride, dilation and padding (`Same` at stride 1 only, as PyTorch
/// and Burn take it), each with one of the channel layouts in turn (groups 1, 2 and
/// depthwise; counts that split over 2 ranks and counts that do not).
fn grid() -> Vec<Case> {
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
                    if matches!(padding, PaddingConfig2d::Same) && stride != [1, 1] {
                        continue;
                    }
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
fn batch(case: &Case) -> (TensorData, TensorData) {
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

fn init<B: Backend>(case: &Case, device: &B::Device) -> GridNet<B> {
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

/// (loss, gradients, updated weights) of one SGD step.
type Step = (f64, Vec<(String, Vec<f64>)>, Vec<(String, Vec<f64>)>);

fn step<B: burn::tensor::backend::AutodiffBackend>(
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

/// The three layouts: (name, conv rules, input placement).
fn layouts() -> [(&'static str, Vec<PlanRule>, Placement); 3] {
    let rule = |pattern: &str, placement| PlanRule { pattern: pattern.into(), placement };
    let split_filters = vec![rule("conv.weight", Placement::Shard(0)), rule("conv.bias", Placement::Shard(0))];
    [
        ("data parallel", vec![], Placement::Shard(0)),
        ("model parallel over channels", split_filters.clone(), Placement::Replicate),
        ("two towers", split_filters, Placement::Shard(1)),
    ]
}

#[test]
fn every_convolution_of_the_grid_steps_on_two_ranks_as_on_one_device() {
    let rd = Default::default();
    use_f64::<Ref>(&rd);
    let cases = grid();
    assert!(cases.len() >= 150, "{}", cases.len());
    let mut compared = 0;
    for case in &cases {
        let (x, y) = batch(case);
        let model: GridNet<Ref> = {
            let _turn = serial();
            init(case, &rd)
        };
        let bytes = record_to_bytes::<Ref, _>(model.clone().into_record()).unwrap();
        let model = model.load_record(record_from_bytes::<Ref, _>(&bytes, &rd).unwrap());
        let (want, _) = step(model, Tensor::from_data(x.clone(), &rd), Tensor::from_data(y.clone(), &rd), &rd);
        for (name, rules, input) in layouts() {
            // A split dimension needs an entry per rank (the two towers' input channels too).
            if input == Placement::Shard(1) && case.channels.0 < 2 {
                continue;
            }
            let mesh = MeshDevice::virtual_ranks(rd, 2);
            use_f64::<H>(&mesh);
            let plan = Plan { name: name.into(), rules, input, ..owt_hybrid::PlanKind::DataParallel.plan() };
            let model: GridNet<H> = {
                let _turn = serial();
                init(case, &mesh)
            };
            let model = model.load_record(record_from_bytes::<H, _>(&bytes, &mesh).unwrap());
            let model = plan.try_apply(model, 2).unwrap_or_else(|e| panic!("{name} {case:?}: {e}"));
            let xs = Tensor::<H, 4>::from_data(x.clone(), &mesh).distribute(input);
            let ys = Tensor::<H, 1, Int>::from_data(y.clone(), &mesh);
            let ys = if input == Placement::Shard(0) { ys.distribute(input) } else { ys };
            let ((loss, grads, weights), _) = step(model, xs, ys, &mesh);
            let what = format!("{name}, {case:?}");
            assert!((loss - want.0).abs() <= TOLERANCE * want.0.abs(), "{what}: loss {loss} against {}", want.0);
            let (gap, tensor) = relative_gap(&grads, &want.1);
            assert!(gap <= TOLERANCE, "{what}: the gradient of {tensor} differs by {gap:e} of its scale");
            let (gap, tensor) = relative_gap(&weights, &want.2);
            assert!(gap <= TOLERANCE, "{what}: the updated {tensor} differs by {gap:e} of its scale");
            compared += 1;
        }
    }
    eprintln!("conv grid: {} configurations, {compared} compared on 2 ranks", cases.len());
}
