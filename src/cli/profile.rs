//! `owt bench --profile`: where one training step's time goes on a single device, layer by
//! layer (forward and backward of each conv, ReLU, normalisation, pooling, dropout and FC layer
//! run alone on the activations of a real batch), then the loss head, the optimizer update and
//! the batch upload, beside the whole step timed as training runs it. The PyTorch profile of
//! the same step (`scripts/torch_profile_small.py`) prints the same rows, so the two can be
//! read side by side.

use std::time::Instant;

use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::prelude::*;
use burn::tensor::activation::relu;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Distribution;
use serde::Serialize;

use owt_models::{AlexNet, DropoutKey, Head};

use crate::cli::bench::median;
use crate::error::OwtError;

/// One row of the profile: a layer (or the loss, optimizer, data) and its median times.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRow {
    /// What ran: a layer name as in `owt info` (`conv1`, `relu1`, `lrn1`, `pool1`, ...,
    /// `fc6`), or `loss`, `optimizer`, `upload`.
    pub name: String,
    /// Output shape per image.
    pub shape: Vec<usize>,
    /// Median forward time, ms (autodiff tracking on, as in training).
    pub forward_ms: f64,
    /// Median backward time, ms: the gradient of the layer's input (and parameters) from an
    /// upstream gradient of its output's shape.
    pub backward_ms: f64,
}

/// The profile of one training step (the JSON of `owt bench --profile --json`).
#[derive(Debug, Clone, Serialize)]
pub struct StepProfile {
    /// Model name.
    pub model: String,
    /// Backend name.
    pub backend: String,
    /// Batch size.
    pub batch: usize,
    /// Repetitions behind each median.
    pub repeats: usize,
    /// Layers in order, then `loss`, `optimizer`, `upload`.
    pub rows: Vec<ProfileRow>,
    /// The rows' total, ms.
    pub parts_ms: f64,
    /// Median whole step (forward, loss, backward, update) as training runs it, ms.
    pub step_ms: f64,
}

impl StepProfile {
    /// The profile as a text table.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{} on {}, batch {}, median of {} runs per row\n{:<10} {:>16} {:>12} {:>12} {:>7}\n",
            self.model,
            self.backend,
            self.batch,
            self.repeats,
            "layer",
            "output/image",
            "forward ms",
            "backward ms",
            "share"
        );
        for r in &self.rows {
            let shape = r.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
            out += &format!(
                "{:<10} {:>16} {:>12.2} {:>12.2} {:>6.1}%\n",
                r.name,
                shape,
                r.forward_ms,
                r.backward_ms,
                100.0 * (r.forward_ms + r.backward_ms) / self.parts_ms
            );
        }
        out += &format!(
            "parts {:.1} ms; whole step {:.1} ms (forward, loss, backward, update)\n",
            self.parts_ms, self.step_ms
        );
        out
    }
}

/// An activation between layers: feature maps or flattened features.
#[derive(Clone)]
enum Act<B: Backend> {
    Maps(Tensor<B, 4>),
    Features(Tensor<B, 2>),
}

impl<B: AutodiffBackend> Act<B> {
    /// A copy cut from the graph; `tracked`: gradients flow back into it (every layer's
    /// input but the images, which need none in training either).
    fn fresh_leaf(&self, tracked: bool) -> Self {
        match self {
            Act::Maps(x) => Act::Maps(x.clone().detach().set_require_grad(tracked)),
            Act::Features(x) => Act::Features(x.clone().detach().set_require_grad(tracked)),
        }
    }

    fn per_image_shape(&self) -> Vec<usize> {
        match self {
            Act::Maps(x) => x.dims()[1..].to_vec(),
            Act::Features(x) => x.dims()[1..].to_vec(),
        }
    }

    /// `sum(self * upstream)` for a fixed random upstream gradient: its backward is the
    /// layer's backward from that gradient.
    fn against(&self, upstream: &Act<B>) -> Tensor<B, 1> {
        match (self, upstream) {
            (Act::Maps(x), Act::Maps(g)) => (x.clone() * g.clone()).sum(),
            (Act::Features(x), Act::Features(g)) => (x.clone() * g.clone()).sum(),
            _ => unreachable!("an upstream gradient has its output's rank"),
        }
    }

    fn random_like(&self) -> Act<B> {
        let normal = Distribution::Normal(0.0, 1.0);
        match self {
            Act::Maps(x) => Act::Maps(Tensor::random(x.dims(), normal, &x.device())),
            Act::Features(x) => Act::Features(Tensor::random(x.dims(), normal, &x.device())),
        }
    }
}

/// A layer of the step, in the order the model runs them.
#[derive(Debug, Clone, Copy)]
enum Layer {
    Conv(usize),
    Relu(usize),
    Lrn(usize),
    Pool(usize),
    AvgPool,
    Flatten,
    Dropout(usize),
    Fc(usize),
    FcRelu(usize),
}

impl Layer {
    fn name(self) -> String {
        match self {
            Layer::Conv(s) => format!("conv{s}"),
            Layer::Relu(s) | Layer::FcRelu(s) => format!("relu{s}"),
            Layer::Lrn(s) => format!("lrn{s}"),
            Layer::Pool(s) => format!("pool{s}"),
            Layer::AvgPool => "avgpool".into(),
            Layer::Flatten => "flatten".into(),
            Layer::Dropout(s) => format!("dropout{s}"),
            Layer::Fc(s) => format!("fc{s}"),
        }
    }

    fn apply<B: AutodiffBackend>(self, model: &AlexNet<B>, x: Act<B>) -> Act<B> {
        let convs = [&model.conv1, &model.conv2, &model.conv3, &model.conv4, &model.conv5];
        let fcs = [&model.fc6, &model.fc7, &model.fc8];
        match (self, x) {
            (Layer::Conv(s), Act::Maps(x)) => Act::Maps(convs[s - 1].forward(x)),
            (Layer::Relu(_), Act::Maps(x)) => Act::Maps(relu(x)),
            (Layer::Lrn(_), Act::Maps(x)) => Act::Maps(model.lrn.forward(x)),
            (Layer::Pool(_), Act::Maps(x)) => Act::Maps(model.pool.forward(x)),
            (Layer::AvgPool, Act::Maps(x)) => {
                Act::Maps(model.avgpool.as_ref().expect("avgpool is listed only when the model has one").forward(x))
            }
            (Layer::Flatten, Act::Maps(x)) => Act::Features(x.flatten(1, 3)),
            (Layer::Dropout(s), Act::Features(h)) => {
                Act::Features(model.dropout.forward(h, DropoutKey::default(), &format!("fc{s}")))
            }
            (Layer::Fc(s), Act::Features(h)) => Act::Features(fcs[s - 6].forward(h)),
            (Layer::FcRelu(_), Act::Features(h)) => Act::Features(relu(h)),
            (layer, _) => unreachable!("{layer:?} got an activation of the wrong rank"),
        }
    }
}

/// The layers of `model` in the order its forward pass runs them.
fn layers<B: Backend>(model: &AlexNet<B>) -> Vec<Layer> {
    let arch = &model.architecture;
    let mut out = Vec::new();
    for i in 0..5 {
        let s = i + 1;
        out.push(Layer::Conv(s));
        out.push(Layer::Relu(s));
        if arch.lrn_after[i] {
            out.push(Layer::Lrn(s));
        }
        if arch.pool_after[i] {
            out.push(Layer::Pool(s));
        }
    }
    if model.avgpool.is_some() {
        out.push(Layer::AvgPool);
    }
    out.push(Layer::Flatten);
    for j in 0..3 {
        let s = j + 6;
        if arch.dropout_before_fc[j] {
            out.push(Layer::Dropout(s));
        }
        out.push(Layer::Fc(s));
        if j < 2 {
            out.push(Layer::FcRelu(s));
        }
    }
    out
}

fn sync<B: Backend>(device: &B::Device) -> Result<(), OwtError> {
    B::sync(device).map_err(|e| OwtError::backend(format!("the device failed while profiling: {e:?}")))
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Times forward and backward of `f` on fresh leaves made from `input`, `repeats` times after
/// one untimed run; returns the medians and the output.
fn time_op<B: AutodiffBackend>(
    device: &B::Device,
    input: &Act<B>,
    tracked: bool,
    repeats: usize,
    f: &dyn Fn(Act<B>) -> Act<B>,
) -> Result<(f64, f64, Act<B>), OwtError> {
    let (mut forward, mut backward) = (Vec::new(), Vec::new());
    let mut output = None;
    let mut upstream = None;
    for run in 0..=repeats {
        let x = input.fresh_leaf(tracked);
        sync::<B>(device)?;
        let t = Instant::now();
        let y = f(x);
        sync::<B>(device)?;
        let fwd = ms(t);
        let g = upstream.get_or_insert_with(|| y.random_like()).clone();
        let t = Instant::now();
        let _grads = y.against(&g).backward();
        sync::<B>(device)?;
        let bwd = ms(t);
        if run > 0 {
            forward.push(fwd);
            backward.push(bwd);
        }
        output = Some(y);
    }
    Ok((median(forward), median(backward), output.expect("at least one run")))
}

/// Profiles one training step of `model` on `images`/`labels` (already on the device, as the
/// trainer uploads them): every layer alone, the loss head, the optimizer update, the upload
/// (`upload` times the trainer's own upload and normalisation of this batch), and the whole
/// step as training runs it. The model is updated by the whole-step runs.
#[allow(clippy::too_many_arguments)]
pub fn profile_step<B: AutodiffBackend, O: Optimizer<AlexNet<B>, B>>(
    mut model: AlexNet<B>,
    optim: &mut O,
    lr: f64,
    head: Head,
    images: Tensor<B, 4>,
    labels: Tensor<B, 1, Int>,
    upload: &dyn Fn() -> (Tensor<B, 4>, Tensor<B, 1, Int>),
    repeats: usize,
    backend: &str,
) -> Result<StepProfile, OwtError> {
    let device = images.device();
    let batch = images.dims()[0];
    let mut rows = Vec::new();
    let mut x = Act::Maps(images.clone());
    for (i, layer) in layers(&model).into_iter().enumerate() {
        let (forward_ms, backward_ms, y) = time_op::<B>(&device, &x, i > 0, repeats, &|a| layer.apply(&model, a))?;
        rows.push(ProfileRow { name: layer.name(), shape: y.per_image_shape(), forward_ms, backward_ms });
        x = y;
    }
    let Act::Features(logits) = x else { unreachable!("the classifier ends in features") };
    let loss_of = |a: Act<B>| match a {
        Act::Features(z) => Act::Features(head.loss(z, labels.clone()).unsqueeze::<2>()),
        Act::Maps(_) => unreachable!("logits are features"),
    };
    let (forward_ms, backward_ms, _) = time_op::<B>(&device, &Act::Features(logits), true, repeats, &loss_of)?;
    rows.push(ProfileRow { name: format!("loss ({})", head.name()), shape: vec![1], forward_ms, backward_ms });

    // The optimizer and the whole step: forward, loss, backward, update, as training runs them.
    let (mut update, mut step) = (Vec::new(), Vec::new());
    for run in 0..=repeats {
        sync::<B>(&device)?;
        let t = Instant::now();
        let loss = head.loss(model.forward(images.clone()), labels.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        sync::<B>(&device)?;
        let t_update = Instant::now();
        model = optim.step(lr, model, grads);
        sync::<B>(&device)?;
        if run > 0 {
            update.push(ms(t_update));
            step.push(ms(t));
        }
    }
    let n_params = model.valid().num_params();
    rows.push(ProfileRow {
        name: "optimizer".into(),
        shape: vec![n_params],
        forward_ms: median(update),
        backward_ms: 0.0,
    });
    let mut uploads = Vec::new();
    for _ in 0..=repeats {
        sync::<B>(&device)?;
        let t = Instant::now();
        drop(upload());
        sync::<B>(&device)?;
        uploads.push(ms(t));
    }
    rows.push(ProfileRow {
        name: "upload".into(),
        shape: images.dims()[1..].to_vec(),
        forward_ms: median(uploads),
        backward_ms: 0.0,
    });
    let parts_ms = rows.iter().map(|r| r.forward_ms + r.backward_ms).sum();
    Ok(StepProfile {
        model: model.architecture.name.to_string(),
        backend: backend.to_string(),
        batch,
        repeats,
        rows,
        parts_ms,
        step_ms: median(step),
    })
}
