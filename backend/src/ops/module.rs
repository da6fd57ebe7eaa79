//! Module ops of `Hybrid<B>`: convolutions (data-parallel on batch shards, tower-local on
//! channel shards), pooling on any shards, and gathered fallbacks for the rest.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{
    AttentionModuleOptions, ConvOptions, ConvTransposeOptions, DeformConv2dBackward, DeformConvOptions,
    InterpolateOptions, MaxPool2dBackward, MaxPool2dWithIndices, ModuleOps,
};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::collectives::{all_gather, redistribute};
use crate::kind::{FloatKind, IntKind};
use crate::placement::Placement;
use crate::rules::{assemble, gather_for, resolve_partial, zip3};

type F<B> = HybridFloat<B>;
type I<B> = HybridInt<B>;
type Bo<B> = HybridBool<B>;

/// Whether channel shards over `k` ranks split `groups` groups into whole groups per rank.
fn towers_align(in_channels: usize, out_channels: usize, groups: usize, k: usize) -> bool {
    groups % k == 0 && in_channels % k == 0 && out_channels % k == 0
}

/// Gathers every input of an op without a rule (Replicate, summands resolved).
fn gathered<B: Backend>(op: &str, t: F<B>) -> F<B> {
    resolve_partial(gather_for(op, t))
}

/// How a convolution runs, from the placements of input and weight.
enum ConvPlan {
    /// Batch shards against a whole weight: data parallel, output Shard(0).
    DataParallel,
    /// Channel shards against filter shards, whole groups per rank: output Shard(1).
    Towers,
    /// Channel shards meeting a full (groups = 1) conv: gather the input's channels first.
    GatherChannels,
    /// Whole input against filter shards: output Shard(1).
    FilterShards,
    /// Everything whole.
    Replicated,
}

fn conv_plan<B: Backend>(x: &F<B>, w: &F<B>, groups: usize) -> Option<ConvPlan> {
    use Placement::*;
    let k = x.ranks();
    match (x.placement, w.placement) {
        (Shard(0), Replicate) => Some(ConvPlan::DataParallel),
        (Shard(1), Shard(0)) if groups > 1 && towers_align(x.shape[1], w.shape[0], groups, k) => Some(ConvPlan::Towers),
        (Shard(1), Shard(0)) if groups == 1 => Some(ConvPlan::GatherChannels),
        (Replicate, Shard(0)) if groups == 1 => Some(ConvPlan::FilterShards),
        (Replicate, Replicate) => Some(ConvPlan::Replicated),
        _ => None,
    }
}

fn per_rank_options(options: &ConvOptions<2>, plan: &ConvPlan, k: usize) -> ConvOptions<2> {
    let mut o = options.clone();
    if matches!(plan, ConvPlan::Towers) {
        o.groups /= k;
    }
    o
}

impl<B: Backend> ModuleOps<Self> for Hybrid<B> {
    fn conv2d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvOptions<2>) -> F<B> {
        x.mesh.check_same(&weight.mesh, "conv2d");
        let k = x.ranks();
        let (x, weight) = (resolve_partial(x), resolve_partial(weight));
        let (x, weight, out, plan) = match conv_plan(&x, &weight, options.groups) {
            Some(ConvPlan::DataParallel) => (x, weight, Placement::Shard(0), ConvPlan::DataParallel),
            Some(ConvPlan::Towers) => (x, weight, Placement::Shard(1), ConvPlan::Towers),
            Some(ConvPlan::GatherChannels) => (all_gather(x, 1), weight, Placement::Shard(1), ConvPlan::GatherChannels),
            Some(ConvPlan::FilterShards) => (x, weight, Placement::Shard(1), ConvPlan::FilterShards),
            Some(ConvPlan::Replicated) => (x, weight, Placement::Replicate, ConvPlan::Replicated),
            None => (gathered("conv2d", x), gathered("conv2d", weight), Placement::Replicate, ConvPlan::Replicated),
        };
        let bias_placement = match out {
            Placement::Shard(1) => Placement::Shard(0),
            _ => Placement::Replicate,
        };
        let bias = bias.map(|b| redistribute(resolve_partial(b), bias_placement));
        let opts = per_rank_options(&options, &plan, k);
        with_bias(out, x, weight, bias, |x, w, b| B::conv2d(x, w, b, opts.clone()))
    }

    fn conv2d_x_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<2>) -> F<B> {
        use Placement::*;
        let k = x.ranks();
        let output_grad = resolve_partial(output_grad);
        let plan = conv_plan(&x, &weight, options.groups);
        let (x, weight, grad, out, opts) = match (plan, output_grad.placement) {
            (Some(ConvPlan::DataParallel), Shard(0)) => (x, weight, output_grad, Shard(0), options),
            (Some(ConvPlan::Towers), Shard(1)) => {
                let opts = per_rank_options(&options, &ConvPlan::Towers, k);
                (x, weight, output_grad, Shard(1), opts)
            }
            // Each rank's filters contribute to every input channel: summands.
            (Some(ConvPlan::GatherChannels), Shard(1)) | (Some(ConvPlan::FilterShards), Shard(1)) => {
                (x, weight, output_grad, Partial, options)
            }
            (Some(ConvPlan::Replicated), Replicate) => (x, weight, output_grad, Replicate, options),
            _ => (
                gathered("conv2d_x_backward", x),
                gathered("conv2d_x_backward", weight),
                gathered("conv2d_x_backward", output_grad),
                Replicate,
                options,
            ),
        };
        zip3(out, x, weight, grad, |x, w, g| B::conv2d_x_backward(x, w, g, opts.clone()))
    }

    fn conv2d_weight_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<2>) -> F<B> {
        use Placement::*;
        let k = x.ranks();
        let output_grad = resolve_partial(output_grad);
        let plan = conv_plan(&x, &weight, options.groups);
        let (x, weight, grad, out, opts) = match (plan, output_grad.placement) {
            // Batch shards: each rank's weight gradient is a summand, synced when consumed.
            (Some(ConvPlan::DataParallel), Shard(0)) => (x, weight, output_grad, Partial, options),
            (Some(ConvPlan::Towers), Shard(1)) => {
                let opts = per_rank_options(&options, &ConvPlan::Towers, k);
                (x, weight, output_grad, Shard(0), opts)
            }
            (Some(ConvPlan::GatherChannels), Shard(1)) => (all_gather(x, 1), weight, output_grad, Shard(0), options),
            (Some(ConvPlan::FilterShards), Shard(1)) => (x, weight, output_grad, Shard(0), options),
            (Some(ConvPlan::Replicated), Replicate) => (x, weight, output_grad, Replicate, options),
            _ => (
                gathered("conv2d_weight_backward", x),
                gathered("conv2d_weight_backward", weight),
                gathered("conv2d_weight_backward", output_grad),
                Replicate,
                options,
            ),
        };
        zip3(out, x, weight, grad, |x, w, g| B::conv2d_weight_backward(x, w, g, opts.clone()))
    }

    fn conv2d_bias_backward(x: F<B>, bias: F<B>, output_grad: F<B>) -> F<B> {
        use Placement::*;
        let output_grad = resolve_partial(output_grad);
        // The inner op reads the batch size from `x`: its rows must be split as the gradient's.
        let batch_split = x.placement == Shard(0);
        let (x, bias, grad, out) = match (output_grad.placement, bias.placement) {
            (Shard(0), Replicate) if batch_split => (x, bias, output_grad, Partial),
            (Shard(1), Shard(0)) if !batch_split => (x, bias, output_grad, Shard(0)),
            (Replicate, Replicate) if !batch_split => (x, bias, output_grad, Replicate),
            _ => (
                gathered("conv2d_bias_backward", x),
                gathered("conv2d_bias_backward", bias),
                gathered("conv2d_bias_backward", output_grad),
                Replicate,
            ),
        };
        zip3(out, x, bias, grad, |x, b, g| B::conv2d_bias_backward(x, b, g))
    }

    fn deform_conv2d(
        x: F<B>,
        offset: F<B>,
        weight: F<B>,
        mask: Option<F<B>>,
        bias: Option<F<B>>,
        options: DeformConvOptions<2>,
    ) -> F<B> {
        let op = "deform_conv2d";
        let (x, offset, weight) = (gathered(op, x), gathered(op, offset), gathered(op, weight));
        let mask = mask.map(|m| gathered(op, m));
        let bias = bias.map(|b| gathered(op, b));
        let mesh = x.mesh.clone();
        let shards = (0..mesh.size())
            .map(|r| {
                B::deform_conv2d(
                    x.shards[r].clone(),
                    offset.shards[r].clone(),
                    weight.shards[r].clone(),
                    mask.as_ref().map(|m| m.shards[r].clone()),
                    bias.as_ref().map(|b| b.shards[r].clone()),
                    options.clone(),
                )
            })
            .collect();
        assemble(mesh, Placement::Replicate, shards)
    }

    fn deform_conv2d_backward(
        x: F<B>,
        offset: F<B>,
        weight: F<B>,
        mask: Option<F<B>>,
        bias: Option<F<B>>,
        output_grad: F<B>,
        options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        let op = "deform_conv2d_backward";
        let (x, offset, weight, grad) =
            (gathered(op, x), gathered(op, offset), gathered(op, weight), gathered(op, output_grad));
        let mask = mask.map(|m| gathered(op, m));
        let bias = bias.map(|b| gathered(op, b));
        let mesh = x.mesh.clone();
        let parts: Vec<_> = (0..mesh.size())
            .map(|r| {
                B::deform_conv2d_backward(
                    x.shards[r].clone(),
                    offset.shards[r].clone(),
                    weight.shards[r].clone(),
                    mask.as_ref().map(|m| m.shards[r].clone()),
                    bias.as_ref().map(|b| b.shards[r].clone()),
                    grad.shards[r].clone(),
                    options.clone(),
                )
            })
            .collect();
        let (mut xg, mut og, mut wg, mut mg, mut bg) = (vec![], vec![], vec![], vec![], vec![]);
        for p in parts {
            xg.push(p.x_grad);
            og.push(p.offset_grad);
            wg.push(p.weight_grad);
            mg.push(p.mask_grad);
            bg.push(p.bias_grad);
        }
        let whole = |v: Vec<_>| assemble::<B, FloatKind>(mesh.clone(), Placement::Replicate, v);
        let opt = |v: Vec<Option<_>>| {
            if v.iter().all(Option::is_some) {
                Some(whole(v.into_iter().flatten().collect()))
            } else {
                None
            }
        };
        DeformConv2dBackward::new(whole(xg), whole(og), whole(wg), opt(mg), opt(bg))
    }

    fn conv3d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvOptions<3>) -> F<B> {
        let op = "conv3d";
        let (x, weight) = (gathered(op, x), gathered(op, weight));
        let bias = bias.map(|b| gathered(op, b));
        with_bias(Placement::Replicate, x, weight, bias, |x, w, b| B::conv3d(x, w, b, options.clone()))
    }

    fn conv_transpose2d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvTransposeOptions<2>) -> F<B> {
        let (x, weight) = (resolve_partial(x), resolve_partial(weight));
        // Batch shards against a whole weight stay data parallel; anything else is gathered.
        let (x, weight, bias, out) = match (x.placement, weight.placement) {
            (Placement::Shard(0), Placement::Replicate) => {
                (x, weight, bias.map(|b| gathered("conv_transpose2d", b)), Placement::Shard(0))
            }
            _ => {
                let op = "conv_transpose2d";
                (gathered(op, x), gathered(op, weight), bias.map(|b| gathered(op, b)), Placement::Replicate)
            }
        };
        with_bias(out, x, weight, bias, |x, w, b| B::conv_transpose2d(x, w, b, options.clone()))
    }

    fn conv_transpose3d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvTransposeOptions<3>) -> F<B> {
        let op = "conv_transpose3d";
        let (x, weight) = (gathered(op, x), gathered(op, weight));
        let bias = bias.map(|b| gathered(op, b));
        with_bias(Placement::Replicate, x, weight, bias, |x, w, b| B::conv_transpose3d(x, w, b, options.clone()))
    }

    fn avg_pool2d(
        x: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> F<B> {
        spatial_local(x, "avg_pool2d", |p| B::avg_pool2d(p, kernel_size, stride, padding, count_include_pad, ceil_mode))
    }

    fn avg_pool2d_backward(
        x: F<B>,
        grad: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> F<B> {
        spatial_local2(x, grad, "avg_pool2d_backward", |x, g| {
            B::avg_pool2d_backward(x, g, kernel_size, stride, padding, count_include_pad, ceil_mode)
        })
    }

    fn adaptive_avg_pool2d(x: F<B>, output_size: [usize; 2]) -> F<B> {
        spatial_local(x, "adaptive_avg_pool2d", |p| B::adaptive_avg_pool2d(p, output_size))
    }

    fn adaptive_avg_pool2d_backward(x: F<B>, grad: F<B>) -> F<B> {
        spatial_local2(x, grad, "adaptive_avg_pool2d_backward", |x, g| B::adaptive_avg_pool2d_backward(x, g))
    }

    fn max_pool2d(
        x: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
    ) -> F<B> {
        spatial_local(x, "max_pool2d", |p| B::max_pool2d(p, kernel_size, stride, padding, dilation, ceil_mode))
    }

    fn max_pool2d_with_indices(
        x: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
    ) -> MaxPool2dWithIndices<Self> {
        let x = spatial_input(x, "max_pool2d_with_indices");
        let placement = x.placement;
        let mesh = x.mesh.clone();
        let (mut outs, mut idxs) = (Vec::new(), Vec::new());
        for p in x.shards {
            let r = B::max_pool2d_with_indices(p, kernel_size, stride, padding, dilation, ceil_mode);
            outs.push(r.output);
            idxs.push(r.indices);
        }
        MaxPool2dWithIndices::new(
            assemble::<B, FloatKind>(mesh.clone(), placement, outs),
            assemble::<B, IntKind>(mesh, placement, idxs),
        )
    }

    fn max_pool2d_with_indices_backward(
        x: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
        output_grad: F<B>,
        indices: I<B>,
    ) -> MaxPool2dBackward<Self> {
        let output_grad = crate::rules::settle_partial(output_grad, x.placement);
        let local =
            x.placement == output_grad.placement && x.placement == indices.placement && is_spatially_local(x.placement);
        let (x, grad, indices) = if local {
            (x, output_grad, indices)
        } else {
            let op = "max_pool2d_with_indices_backward";
            (gathered(op, x), gathered(op, output_grad), resolve_partial(gather_for(op, indices)))
        };
        let placement = x.placement;
        let mesh = x.mesh.clone();
        let shards = x
            .shards
            .into_iter()
            .zip(grad.shards)
            .zip(indices.shards)
            .map(|((x, g), i)| {
                B::max_pool2d_with_indices_backward(x, kernel_size, stride, padding, dilation, ceil_mode, g, i).x_grad
            })
            .collect();
        MaxPool2dBackward::new(assemble(mesh, placement, shards))
    }

    fn interpolate(x: F<B>, output_size: [usize; 2], options: burn::tensor::ops::InterpolateOptions) -> F<B> {
        spatial_local(x, "interpolate", |p| B::interpolate(p, output_size, options.clone()))
    }

    fn interpolate_backward(x: F<B>, grad: F<B>, output_size: [usize; 2], options: InterpolateOptions) -> F<B> {
        spatial_local2(x, grad, "interpolate_backward", |x, g| {
            B::interpolate_backward(x, g, output_size, options.clone())
        })
    }

    fn attention(
        query: F<B>,
        key: F<B>,
        value: F<B>,
        mask: Option<Bo<B>>,
        attn_bias: Option<F<B>>,
        options: AttentionModuleOptions,
    ) -> F<B> {
        let op = "attention";
        let (q, k, v) = (gathered(op, query), gathered(op, key), gathered(op, value));
        let mask = mask.map(|m| gather_for(op, m));
        let attn_bias = attn_bias.map(|b| gathered(op, b));
        let mesh = q.mesh.clone();
        let shards = (0..mesh.size())
            .map(|r| {
                B::attention(
                    q.shards[r].clone(),
                    k.shards[r].clone(),
                    v.shards[r].clone(),
                    mask.as_ref().map(|m| m.shards[r].clone()),
                    attn_bias.as_ref().map(|b| b.shards[r].clone()),
                    options,
                )
            })
            .collect();
        assemble(mesh, Placement::Replicate, shards)
    }

    fn rfft(signal: F<B>, dim: usize, n: Option<usize>) -> (F<B>, F<B>) {
        let signal = gathered("rfft", signal);
        let mesh = signal.mesh.clone();
        let (re, im): (Vec<_>, Vec<_>) = signal.shards.into_iter().map(|p| B::rfft(p, dim, n)).unzip();
        (assemble(mesh.clone(), Placement::Replicate, re), assemble(mesh, Placement::Replicate, im))
    }

    fn irfft(spectrum_re: F<B>, spectrum_im: F<B>, dim: usize, n: Option<usize>) -> F<B> {
        let (re, im) = (gathered("irfft", spectrum_re), gathered("irfft", spectrum_im));
        let mesh = re.mesh.clone();
        let shards = re.shards.into_iter().zip(im.shards).map(|(a, b)| B::irfft(a, b, dim, n)).collect();
        assemble(mesh, Placement::Replicate, shards)
    }
}

/// Runs a convolution-like op rank by rank on input, weight and optional bias already laid out
/// for output placement `out`.
fn with_bias<B: Backend>(
    out: Placement,
    x: F<B>,
    weight: F<B>,
    bias: Option<F<B>>,
    mut f: impl FnMut(
        B::FloatTensorPrimitive,
        B::FloatTensorPrimitive,
        Option<B::FloatTensorPrimitive>,
    ) -> B::FloatTensorPrimitive,
) -> F<B> {
    let mesh = x.mesh.clone();
    let mut biases =
        bias.map(|b| b.shards.into_iter().map(Some).collect::<Vec<_>>()).unwrap_or_else(|| vec![None; mesh.size()]);
    let shards = x.shards.into_iter().zip(weight.shards).zip(biases.drain(..)).map(|((x, w), b)| f(x, w, b)).collect();
    assemble(mesh, out, shards)
}

/// Pooling and resizing work per image and per channel: batch or channel shards stay local.
fn is_spatially_local(p: Placement) -> bool {
    matches!(p, Placement::Shard(0) | Placement::Shard(1) | Placement::Replicate)
}

fn spatial_input<B: Backend>(x: F<B>, op: &str) -> F<B> {
    let x = resolve_partial(x);
    if is_spatially_local(x.placement) {
        x
    } else {
        gathered(op, x)
    }
}

fn spatial_local<B: Backend>(
    x: F<B>,
    op: &str,
    f: impl FnMut(B::FloatTensorPrimitive) -> B::FloatTensorPrimitive,
) -> F<B> {
    crate::rules::per_rank(spatial_input(x, op), f)
}

fn spatial_local2<B: Backend>(
    x: F<B>,
    grad: F<B>,
    op: &str,
    mut f: impl FnMut(B::FloatTensorPrimitive, B::FloatTensorPrimitive) -> B::FloatTensorPrimitive,
) -> F<B> {
    let grad = crate::rules::settle_partial(grad, x.placement);
    let (x, grad) = if x.placement == grad.placement && is_spatially_local(x.placement) {
        (x, grad)
    } else {
        (gathered(op, x), gathered(op, grad))
    };
    let placement = x.placement;
    let mesh = x.mesh.clone();
    let shards = x.shards.into_iter().zip(grad.shards).map(|(x, g)| f(x, g)).collect();
    assemble(mesh, placement, shards)
}
