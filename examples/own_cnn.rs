//! A CNN of your own on a mesh: a small residual network written the ordinary Burn way
//! (convolutions, Burn's `BatchNorm`, residual additions, global average pooling, one linear
//! layer; nothing of owt in the model), trained by an ordinary Burn loop (forward, loss,
//! backward, `GradientsParams`, SGD with momentum) on two virtual ranks of the CPU under a plan
//! of the user's own: every convolution data-parallel, the linear layer split by output
//! columns. For one device, change the one line marked ONE DEVICE: the program is otherwise
//! the same, and ends at the same weights (`tests/owt/own_cnn.rs` holds it to that).
//!
//! Then the same network's communication per layer from a dry run on shape-only devices, the
//! library's `DryRun`: what each step of this plan moves, before any GPU is rented.
//!
//! Last, a second network with an Inception-style block (Szegedy et al. 2016, "Rethinking the
//! Inception Architecture"): a 7x7 window factorised into a 1x7 then a 7x1 convolution, each
//! halving one side with TensorFlow's "same" padding, which is asymmetric there (two columns
//! before, three after), beside a strided 1x1 branch; trained the same way on the same 2 ranks.
//!
//! Run: `cargo run --locked --example own_cnn -- [STEPS]`.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::activation::relu;
use burn::tensor::backend::AutodiffBackend;
use owt_hybrid::prelude::*;
use owt_hybrid::{Exchange, Hybrid, MeshDevice, MeshLayout, Placement, Plan, PlanRule};

/// Two 3x3 convolutions with batch normalisation and the input added back (He et al. 2015).
#[derive(Module, Debug)]
pub struct ResidualBlock<B: Backend> {
    conv1: Conv2d<B>,
    bn1: BatchNorm<B>,
    conv2: Conv2d<B>,
    bn2: BatchNorm<B>,
}

impl<B: Backend> ResidualBlock<B> {
    fn new(channels: usize, device: &B::Device) -> Self {
        let conv = || {
            Conv2dConfig::new([channels, channels], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .with_bias(false)
                .init(device)
        };
        let bn = || BatchNormConfig::new(channels).init(device);
        Self { conv1: conv(), bn1: bn(), conv2: conv(), bn2: bn() }
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let y = relu(self.bn1.forward(self.conv1.forward(x.clone())));
        relu(self.bn2.forward(self.conv2.forward(y)) + x)
    }
}

/// A stem convolution, two residual blocks, global average pooling and a linear classifier.
#[derive(Module, Debug)]
pub struct SmallResNet<B: Backend> {
    /// 3x3 convolution from the image channels to the width.
    pub stem: Conv2d<B>,
    /// The stem's batch normalisation.
    pub stem_bn: BatchNorm<B>,
    /// First residual block.
    pub block1: ResidualBlock<B>,
    /// Second residual block.
    pub block2: ResidualBlock<B>,
    /// Global average pooling.
    pub pool: AdaptiveAvgPool2d,
    /// The classifier.
    pub fc: Linear<B>,
}

/// The network's size.
#[derive(Config, Debug)]
pub struct SmallResNetConfig {
    /// Input channels.
    #[config(default = 1)]
    pub channels: usize,
    /// Channels of the stem and the blocks.
    #[config(default = 16)]
    pub width: usize,
    /// Output classes.
    #[config(default = 10)]
    pub classes: usize,
}

impl SmallResNetConfig {
    /// Builds the network on `device`.
    pub fn init<B: Backend>(&self, device: &B::Device) -> SmallResNet<B> {
        SmallResNet {
            stem: Conv2dConfig::new([self.channels, self.width], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .with_bias(false)
                .init(device),
            stem_bn: BatchNormConfig::new(self.width).init(device),
            block1: ResidualBlock::new(self.width, device),
            block2: ResidualBlock::new(self.width, device),
            pool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc: LinearConfig::new(self.width, self.classes).init(device),
        }
    }
}

impl<B: Backend> SmallResNet<B> {
    /// Logits `[n, classes]` for images `[n, channels, h, w]`.
    pub fn forward(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        let x = relu(self.stem_bn.forward(self.stem.forward(images)));
        let x = self.block2.forward(self.block1.forward(x));
        self.fc.forward(self.pool.forward(x).flatten(1, 3))
    }
}

/// An Inception-style reduction block: a strided 1x1 branch beside a factorised 7x7 branch
/// (1x1, then 1x7 with stride (1, 2), then 7x1 with stride (2, 1)), concatenated by channels;
/// both halve each side. Burn's `Same` padding is TensorFlow's, so on a side of 16 the 1x7
/// pads 2 columns before and 3 after, and the 7x1 likewise rows: asymmetric, which Burn pads
/// explicitly before the convolution (as PyTorch does for cuDNN).
#[derive(Module, Debug)]
pub struct FactorisedBlock<B: Backend> {
    /// The 1x1 branch, stride 2.
    pub reduce: Conv2d<B>,
    /// The factorised branch's 1x1 convolution.
    pub squeeze: Conv2d<B>,
    /// 1x7, stride (1, 2).
    pub row: Conv2d<B>,
    /// 7x1, stride (2, 1).
    pub column: Conv2d<B>,
}

impl<B: Backend> FactorisedBlock<B> {
    /// A block from `channels` to `channels` (half from each branch).
    pub fn new(channels: usize, device: &B::Device) -> Self {
        let half = channels / 2;
        let conv = |from: usize, kernel: [usize; 2], stride: [usize; 2]| {
            Conv2dConfig::new([from, half], kernel).with_stride(stride).with_padding(PaddingConfig2d::Same).init(device)
        };
        Self {
            reduce: conv(channels, [1, 1], [2, 2]),
            squeeze: conv(channels, [1, 1], [1, 1]),
            row: conv(half, [1, 7], [1, 2]),
            column: conv(half, [7, 1], [2, 1]),
        }
    }

    /// `[n, channels, h, w]` to `[n, channels, ceil(h / 2), ceil(w / 2)]`.
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let reduced = relu(self.reduce.forward(x.clone()));
        let factorised = relu(self.column.forward(relu(self.row.forward(relu(self.squeeze.forward(x))))));
        Tensor::cat(vec![reduced, factorised], 1)
    }
}

/// A stem convolution, the factorised block, average pooling to 4 bands of rows and a linear
/// classifier (the class is drawn as a row: a global pool would lose where).
#[derive(Module, Debug)]
pub struct SmallInception<B: Backend> {
    /// 3x3 convolution from the image channels to the width.
    pub stem: Conv2d<B>,
    /// The Inception-style block.
    pub block: FactorisedBlock<B>,
    /// Average pooling to 4 x 1.
    pub pool: AdaptiveAvgPool2d,
    /// The classifier.
    pub fc: Linear<B>,
}

impl SmallResNetConfig {
    /// The Inception-style network of the same size on `device`.
    pub fn init_inception<B: Backend>(&self, device: &B::Device) -> SmallInception<B> {
        SmallInception {
            stem: Conv2dConfig::new([self.channels, self.width], [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device),
            block: FactorisedBlock::new(self.width, device),
            pool: AdaptiveAvgPool2dConfig::new([4, 1]).init(),
            fc: LinearConfig::new(4 * self.width, self.classes).init(device),
        }
    }
}

/// A network that gives class scores for a batch of images: what [`train`] trains.
pub trait Classifier<B: AutodiffBackend>: burn::module::AutodiffModule<B> {
    /// Logits `[n, classes]` for images `[n, channels, h, w]`.
    fn logits(&self, images: Tensor<B, 4>) -> Tensor<B, 2>;
}

impl<B: AutodiffBackend> Classifier<B> for SmallResNet<B> {
    fn logits(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        self.forward(images)
    }
}

impl<B: AutodiffBackend> Classifier<B> for SmallInception<B> {
    fn logits(&self, images: Tensor<B, 4>) -> Tensor<B, 2> {
        let x = relu(self.stem.forward(images));
        self.fc.forward(self.pool.forward(self.block.forward(x)).flatten(1, 3))
    }
}

/// Batch `step` of a deterministic stream of `n` images `[n, 1, 16, 16]` whose class is drawn
/// in them: a bright band at a class-dependent row, on a faint pattern.
pub fn batch(step: usize, n: usize) -> (TensorData, TensorData) {
    let side = 16;
    let labels: Vec<i64> = (0..n).map(|i| ((i * 7 + step * 3) % 10) as i64).collect();
    let mut pixels = Vec::with_capacity(n * side * side);
    for (i, &y) in labels.iter().enumerate() {
        for r in 0..side {
            for c in 0..side {
                let band = if r == y as usize + 3 { 1.0 } else { 0.0 };
                pixels.push(band + 0.1 * ((r * 3 + c + i + step) as f32 * 0.7).sin());
            }
        }
    }
    (TensorData::new(pixels, [n, 1, side, side]), TensorData::new(labels, [n]))
}

/// `steps` steps of SGD with momentum, batch `batch`, the ordinary Burn way, on whatever
/// device `device` is; the losses of the steps.
pub fn train<B: AutodiffBackend, N: Classifier<B>>(
    mut model: N,
    device: &B::Device,
    steps: usize,
    batch_size: usize,
) -> (N, Vec<f64>) {
    let mut optim = SgdConfig::new()
        .with_momentum(Some(MomentumConfig { momentum: 0.9, dampening: 0.0, nesterov: false }))
        .init::<B, N>();
    let loss_fn = CrossEntropyLossConfig::new().init(device);
    let mut losses = Vec::new();
    for step in 0..steps {
        let (images, labels) = batch(step, batch_size);
        let images = Tensor::<B, 4>::from_data(images, device);
        let labels = Tensor::<B, 1, Int>::from_data(labels, device);
        let loss = loss_fn.forward(model.logits(images), labels);
        losses.push(loss.clone().into_scalar().elem::<f64>());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(0.05, model, grads);
    }
    (model, losses)
}

/// The plan: every parameter replicated (data parallelism) but the classifier's, split by
/// output columns (its weight `[in, out]` by dimension 1, its bias by 0); the batch split by
/// rows. Patterns name the module's own parameter paths.
pub fn my_plan() -> Plan {
    let rule = |pattern: &str, placement| PlanRule { pattern: pattern.into(), placement };
    Plan {
        name: "my-resnet-plan".into(),
        rules: vec![rule("fc.weight", Placement::Shard(1)), rule("fc.bias", Placement::Shard(0))],
        default: Placement::Replicate,
        input: Placement::Shard(0),
        ranks: None,
        towers: None,
        batch_stats: Default::default(),
    }
}

/// The traffic of one step of this network under [`my_plan`] on `ranks` shape-only devices,
/// by layer, phase and collective (a dry run: no data, the step's very code).
pub fn dry_run(ranks: usize, batch_size: usize) -> owt_hybrid::DryRunReport {
    dry_run_of(my_plan(), Exchange::AllGather, ranks, batch_size).expect("my plan fits")
}

/// [`dry_run`] under any plan and scheme (an error where the plan does not fit the network).
pub fn dry_run_of(
    plan: Plan,
    scheme: Exchange,
    ranks: usize,
    batch_size: usize,
) -> Result<owt_hybrid::DryRunReport, owt_hybrid::PlanError> {
    dry_run_with(plan, scheme, ranks, batch_size, |mesh| SmallResNetConfig::new().init(mesh))
}

/// The traffic of one step of the Inception-style network under [`my_plan`] on `ranks`
/// shape-only devices (its classifier is named `fc` too).
pub fn inception_dry_run(ranks: usize, batch_size: usize) -> owt_hybrid::DryRunReport {
    dry_run_with(my_plan(), Exchange::AllGather, ranks, batch_size, |mesh| {
        SmallResNetConfig::new().init_inception(mesh)
    })
    .expect("my plan fits")
}

/// One step of the network `build` makes, under `plan` and `scheme`, on `ranks` shape-only
/// devices.
fn dry_run_with<N: Classifier<Autodiff<Hybrid<owt_meta::Meta>>>>(
    plan: Plan,
    scheme: Exchange,
    ranks: usize,
    batch_size: usize,
    build: impl FnOnce(&MeshDevice<owt_meta::MetaDevice>) -> N,
) -> Result<owt_hybrid::DryRunReport, owt_hybrid::PlanError> {
    let dry = owt_hybrid::DryRun::new(ranks);
    let layout = MeshLayout::<owt_meta::Meta>::new(dry.mesh().clone(), plan, scheme);
    let model = layout.place_module(build(dry.mesh()))?;
    dry.begin_step();
    let _ = train(model, dry.mesh(), 1, batch_size);
    Ok(dry.report())
}

/// The plan the cost model predicts fastest for this network on `ranks` devices of `profile`:
/// owt_hybrid's search over its conv and linear layers (replicated or split) and the three
/// schemes, each candidate a dry run of the step above priced on the profile.
pub fn auto_plan(
    ranks: usize,
    batch_size: usize,
    profile: &owt_hybrid::DeviceProfile,
) -> owt_hybrid::auto_plan::AutoPlan {
    use owt_hybrid::auto_plan::{search, splittable_layers};
    let shapes = owt_hybrid::parameter_paths(&SmallResNetConfig::new().init::<Autodiff<Flex>>(&FlexDevice));
    let schemes = [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices];
    search(&splittable_layers(shapes), &schemes, |plan, scheme| {
        Some(dry_run_of(plan.clone(), scheme, ranks, batch_size).ok()?.predict(profile).serial_s)
    })
    .expect("data parallelism runs")
}

fn main() {
    let steps = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(30);
    // Where the program runs: two virtual ranks of the CPU under my_plan. ONE DEVICE:
    // let layout = owt_hybrid::SingleDevice::<Autodiff<Flex>>::new(FlexDevice);
    let layout = MeshLayout::<Flex>::new(MeshDevice::virtual_ranks(FlexDevice, 2), my_plan(), Exchange::AllGather);
    let model = layout.place_module(SmallResNetConfig::new().init(layout.device())).expect("the plan fits");
    let (model, losses) = train(model, layout.device(), steps, 32);
    println!(
        "{} parameters, loss {:.4} -> {:.4} over {steps} steps on {}",
        model.num_params(),
        losses[0],
        losses[losses.len() - 1],
        layout.describe()
    );
    println!("one step on 2 ranks, batch 32, by layer (dry run):");
    for t in dry_run(2, 32).comm.layers {
        println!(
            "  {:<10} {:<9} {:<15} {:>9} bytes {:>4} messages",
            t.layer, t.phase, t.collective, t.bytes, t.messages
        );
    }
    // The Inception-style network, the same way on the same ranks.
    let model = layout.place_module(SmallResNetConfig::new().init_inception(layout.device())).expect("the plan fits");
    let (model, losses) = train(model, layout.device(), steps, 32);
    let step = inception_dry_run(2, 32).ledger.total();
    println!(
        "inception-style: {} parameters, loss {:.4} -> {:.4} over {steps} steps; on 2 ranks at batch 32 a step moves {} bytes in {} messages",
        model.num_params(),
        losses[0],
        losses[losses.len() - 1],
        step.bytes,
        step.messages
    );
}
