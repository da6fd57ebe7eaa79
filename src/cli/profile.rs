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
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Distribution;
use serde::Serialize;

use owt_models::{Activation, Architecture, ConvNet, DropoutKey, Head, Stage};

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
    /// Whose formulation ran where owt chooses one (convolution gradients, pooling): owt's
    /// (`owt_hybrid::conv_grad`, `owt_hybrid::max_pool`) or the backend's; empty elsewhere.
    pub formulation: String,
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
            "{} on {}, batch {}, median of {} runs per row\n{:<10} {:>16} {:>12} {:>12} {:>7}  {}\n",
            self.model,
            self.backend,
            self.batch,
            self.repeats,
            "layer",
            "output/image",
            "forward ms",
            "backward ms",
            "share",
            "formulation"
        );
        for r in &self.rows {
            let shape = r.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
            let line = format!(
                "{:<10} {:>16} {:>12.2} {:>12.2} {:>6.1}%  {}",
                r.name,
                shape,
                r.forward_ms,
                r.backward_ms,
                100.0 * (r.forward_ms + r.backward_ms) / self.parts_ms,
                r.formulation
            );
            out += line.trim_end();
            out += "\n";
        }
        out += &format!(
            "parts {:.1} ms; whole step {:.1} ms (forward, loss, backward, update)\n",
            self.parts_ms, self.step_ms
        );
        out
    }
}

type Act<B> = Activation<B>;

/// Whose formulations run `stage` on input `x_dims` of `arch` on the backend `backend`: for a
/// convolution its three gradients (owt's weight-gradient layout by name), for a pooling the
/// training pass's and the passes' without autodiff; empty for the other stages.
pub fn formulation<B: burn::tensor::backend::Backend>(
    stage: Stage,
    arch: &Architecture,
    x_dims: &[usize],
    backend: &str,
) -> String {
    use owt_hybrid::conv_grad::{self, Formulation};
    let owt = |f: Formulation| f == Formulation::Owt;
    match stage {
        Stage::Conv(n) => {
            let choice = conv_grad::Choice::for_backend::<B>();
            let layer = arch.convs[n - 1];
            let &[batch, c, h, w] = x_dims else { return String::new() };
            let weight = [layer.filters, c / layer.groups, layer.kernel, layer.kernel];
            let (s, p) = (layer.stride, layer.padding);
            let options = burn::tensor::ops::ConvOptions::new([s, s], [p, p], [1, 1], layer.groups);
            let weight_by = match conv_grad::weight_method([batch, c, h, w], weight, &options) {
                Some(method) if owt(choice.weight) => format!("owt's {}", method.name()),
                _ => format!("{backend}'s"),
            };
            let input_by = if n == 1 {
                "none (the images)".to_string()
            } else if owt(choice.input) {
                "owt's (a forward convolution)".to_string()
            } else {
                format!("{backend}'s")
            };
            let bias_by = if owt(choice.bias) { "owt's sum".to_string() } else { format!("{backend}'s") };
            format!("forward {backend}'s; gradients: weight {weight_by}, input {input_by}, bias {bias_by}")
        }
        Stage::Pool(_) if owt(owt_hybrid::max_pool::formulation_for::<B>()) => {
            format!("training {backend}'s (with indices); without autodiff owt's")
        }
        Stage::Pool(_) => format!("{backend}'s"),
        _ => String::new(),
    }
}

/// A copy of `a` cut from the graph; `tracked`: gradients flow back into it (every layer's
/// input but the images, which need none in training either).
fn fresh_leaf<B: AutodiffBackend>(a: &Act<B>, tracked: bool) -> Act<B> {
    match a {
        Act::Maps(x) => Act::Maps(x.clone().detach().set_require_grad(tracked)),
        Act::Features(x) => Act::Features(x.clone().detach().set_require_grad(tracked)),
    }
}

/// `sum(a * upstream)` for a fixed random upstream gradient: its backward is the layer's
/// backward from that gradient.
fn against<B: AutodiffBackend>(a: &Act<B>, upstream: &Act<B>) -> Tensor<B, 1> {
    match (a, upstream) {
        (Act::Maps(x), Act::Maps(g)) => (x.clone() * g.clone()).sum(),
        (Act::Features(x), Act::Features(g)) => (x.clone() * g.clone()).sum(),
        _ => unreachable!("an upstream gradient has its output's rank"),
    }
}

fn random_like<B: AutodiffBackend>(a: &Act<B>) -> Act<B> {
    let normal = Distribution::Normal(0.0, 1.0);
    match a {
        Act::Maps(x) => Act::Maps(Tensor::random(x.dims(), normal, &x.device())),
        Act::Features(x) => Act::Features(Tensor::random(x.dims(), normal, &x.device())),
    }
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
        let x = fresh_leaf(input, tracked);
        sync::<B>(device)?;
        let t = Instant::now();
        let y = f(x);
        sync::<B>(device)?;
        let fwd = ms(t);
        let g = upstream.get_or_insert_with(|| random_like(&y)).clone();
        let t = Instant::now();
        let _grads = against(&y, &g).backward();
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
pub fn profile_step<B: AutodiffBackend, O: Optimizer<ConvNet<B>, B>>(
    mut model: ConvNet<B>,
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
    for (i, stage) in model.architecture.stages().into_iter().enumerate() {
        let run = |a| model.run_stage(stage, a, DropoutKey::default());
        let dims = match &x {
            Act::Maps(t) => t.dims().to_vec(),
            Act::Features(t) => t.dims().to_vec(),
        };
        let formulation = formulation::<B>(stage, &model.architecture, &dims, backend);
        let (forward_ms, backward_ms, y) = time_op::<B>(&device, &x, i > 0, repeats, &run)?;
        rows.push(ProfileRow {
            name: model.architecture.stage_name(stage),
            shape: y.per_image_shape(),
            forward_ms,
            backward_ms,
            formulation,
        });
        x = y;
    }
    let Act::Features(logits) = x else { unreachable!("the classifier ends in features") };
    let loss_of = |a: Act<B>| match a {
        Act::Features(z) => Act::Features(head.loss(z, labels.clone()).unsqueeze::<2>()),
        Act::Maps(_) => unreachable!("logits are features"),
    };
    let (forward_ms, backward_ms, _) = time_op::<B>(&device, &Act::Features(logits), true, repeats, &loss_of)?;
    rows.push(ProfileRow {
        name: format!("loss ({})", head.name()),
        shape: vec![1],
        forward_ms,
        backward_ms,
        formulation: String::new(),
    });

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
        formulation: String::new(),
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
        formulation: String::new(),
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

/// The median of `xs` (not empty).
pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}
