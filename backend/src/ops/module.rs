//! Module ops of `Hybrid<B>`: convolutions (data-parallel on batch shards, tower-local on
//! channel shards; their gradients from the formulation [`crate::conv_grad::Choice`] picks for
//! the inner backend), pooling on any shards, and gathered fallbacks for the rest.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{
    AttentionModuleOptions, ConvOptions, ConvTransposeOptions, DeformConv2dBackward, DeformConvOptions,
    InterpolateOptions, MaxPool2dBackward, MaxPool2dWithIndices, ModuleOps,
};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::conv_grad::{Choice, Formulation};
use crate::ops::dispatch::{
    assemble, context, fixed, gathered_all, outer_opt, run1, run1_two, run2, run3, run_opt, run_opt_inner, spec,
    OuterLayout,
};
use crate::rules::resolved;
use crate::rules::{self, Context, ConvLayout, ConvPass, Spec, Strategy};
use crate::spec::placement::Placement;
use crate::tensor::kind::{BoolKind, FloatKind, IntKind};

type F<B> = HybridFloat<B>;
type I<B> = HybridInt<B>;
type Bo<B> = HybridBool<B>;

/// The rule of a convolution gradient (input, filter, output gradient) on batch shards
/// (`rules::batch_conv_grad`), its result `out`.
fn batch_grad(out: Placement) -> impl Fn(&[Spec], &Context) -> Strategy {
    move |sp: &[Spec], cx: &Context| rules::batch_conv_grad(&sp[0], &sp[2], out, cx)
}

/// The options each rank runs a convolution with: under the two-tower layout each rank holds
/// `groups / K` of the groups.
fn per_rank_options(options: &ConvOptions<2>, layout: ConvLayout, k: usize) -> ConvOptions<2> {
    let mut o = options.clone();
    if layout == ConvLayout::Towers {
        o.groups /= k;
    }
    o
}

impl<B: Backend> ModuleOps<Self> for Hybrid<B> {
    fn conv2d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvOptions<2>) -> F<B> {
        let (x, weight, bias, outer) = conv_outer("conv2d", ConvPass::Forward, options.groups, x, weight, bias);
        let ctx = context(&x);
        let bias_spec: Option<Spec> = bias.as_ref().map(spec);
        let (s, layout) =
            rules::conv(ConvPass::Forward, &spec(&x), &spec(&weight), bias_spec.as_ref(), options.groups, &ctx);
        let opts = per_rank_options(&options, layout, ctx.ranks);
        run_opt_inner("conv2d", &s, x, weight, bias, &outer, |_, x, w, b| B::conv2d(x, w, b, opts.clone()))
    }

    fn conv2d_x_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<2>) -> F<B> {
        conv_grad(ConvPass::InputGrad, "conv2d_x_backward", x, weight, output_grad, options, |x, w, g, o| {
            match Choice::of::<B>(&x).input {
                Formulation::Owt => crate::conv_grad::conv2d_x_backward::<B>(x, w, g, o),
                Formulation::Backend => B::conv2d_x_backward(x, w, g, o),
            }
        })
    }

    fn conv2d_weight_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<2>) -> F<B> {
        conv_grad(ConvPass::WeightGrad, "conv2d_weight_backward", x, weight, output_grad, options, |x, w, g, o| {
            match Choice::of::<B>(&x).weight {
                Formulation::Owt => crate::conv_grad::conv2d_weight_backward::<B>(x, w, g, o),
                Formulation::Backend => B::conv2d_weight_backward(x, w, g, o),
            }
        })
    }

    fn conv2d_bias_backward(x: F<B>, bias: F<B>, output_grad: F<B>) -> F<B> {
        let rule = |sp: &[Spec], cx: &Context| rules::conv(ConvPass::BiasGrad, &sp[0], &sp[1], sp.get(2), 1, cx).0;
        run3("conv2d_bias_backward", rule, x, bias, output_grad, |_, x, b, g| match Choice::of::<B>(&x).bias {
            Formulation::Owt => crate::conv_grad::conv2d_bias_backward::<B>(g),
            Formulation::Backend => B::conv2d_bias_backward(x, b, g),
        })
    }

    fn deform_conv2d(
        x: F<B>,
        offset: F<B>,
        weight: F<B>,
        mask: Option<F<B>>,
        bias: Option<F<B>>,
        options: DeformConvOptions<2>,
    ) -> F<B> {
        let mut ins =
            gathered_all::<B, FloatKind>("deform_conv2d", vec![Some(x), Some(offset), Some(weight), mask, bias])
                .into_iter();
        let (x, offset, weight) =
            (ins.next().flatten().unwrap(), ins.next().flatten().unwrap(), ins.next().flatten().unwrap());
        let (mask, bias) = (ins.next().flatten(), ins.next().flatten());
        let mesh = x.mesh.clone();
        let shards = (0..x.shards.len())
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
        let ins = gathered_all::<B, FloatKind>(
            "deform_conv2d_backward",
            vec![Some(x), Some(offset), Some(weight), Some(output_grad), mask, bias],
        );
        let mut ins = ins.into_iter();
        let mut next = || ins.next().flatten();
        let (x, offset, weight, grad) = (next().unwrap(), next().unwrap(), next().unwrap(), next().unwrap());
        let (mask, bias) = (next(), next());
        let mesh = x.mesh.clone();
        let parts: Vec<_> = (0..x.shards.len())
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
        let with_bias = bias.is_some();
        let rule = |sp: &[Spec], _: &Context| rules::batch_conv(&sp[0], with_bias);
        run_opt("conv3d", rule, x, weight, bias, |_, x, w, b| B::conv3d(x, w, b, options.clone()))
    }

    fn conv_transpose2d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvTransposeOptions<2>) -> F<B> {
        let with_bias = bias.is_some();
        let rule = |sp: &[Spec], _: &Context| rules::batch_conv(&sp[0], with_bias);
        run_opt("conv_transpose2d", rule, x, weight, bias, |_, x, w, b| B::conv_transpose2d(x, w, b, options.clone()))
    }

    fn conv_transpose3d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvTransposeOptions<3>) -> F<B> {
        let with_bias = bias.is_some();
        let rule = |sp: &[Spec], _: &Context| rules::batch_conv(&sp[0], with_bias);
        run_opt("conv_transpose3d", rule, x, weight, bias, |_, x, w, b| B::conv_transpose3d(x, w, b, options.clone()))
    }

    fn avg_pool2d(
        x: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> F<B> {
        pool("avg_pool2d", x, |p| B::avg_pool2d(p, kernel_size, stride, padding, count_include_pad, ceil_mode))
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
        pool_backward("avg_pool2d_backward", x, grad, |x, g| {
            B::avg_pool2d_backward(x, g, kernel_size, stride, padding, count_include_pad, ceil_mode)
        })
    }

    fn adaptive_avg_pool2d(x: F<B>, output_size: [usize; 2]) -> F<B> {
        pool("adaptive_avg_pool2d", x, |p| B::adaptive_avg_pool2d(p, output_size))
    }

    fn adaptive_avg_pool2d_backward(x: F<B>, grad: F<B>) -> F<B> {
        pool_backward("adaptive_avg_pool2d_backward", x, grad, |x, g| B::adaptive_avg_pool2d_backward(x, g))
    }

    fn max_pool2d(
        x: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
    ) -> F<B> {
        pool("max_pool2d", x, |p| {
            if owt_max_pool::<B>(&p, kernel_size, padding, dilation, ceil_mode) {
                crate::max_pool::max_pool2d(float::<B>(p), kernel_size, stride).into_primitive().tensor()
            } else {
                B::max_pool2d(p, kernel_size, stride, padding, dilation, ceil_mode)
            }
        })
    }

    fn max_pool2d_with_indices(
        x: F<B>,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
    ) -> MaxPool2dWithIndices<Self> {
        let rule = |sp: &[Spec], _: &Context| rules::pool(&sp[0]);
        let (output, indices) =
            run1_two::<B, FloatKind, FloatKind, IntKind>("max_pool2d_with_indices", rule, x, |_, p| {
                let r = B::max_pool2d_with_indices(p, kernel_size, stride, padding, dilation, ceil_mode);
                (r.output, r.indices)
            });
        MaxPool2dWithIndices::new(output, indices)
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
        let rule = |sp: &[Spec], _: &Context| rules::pool_backward(&sp[0], &sp[1], &sp[2..]);
        MaxPool2dBackward::new(run3("max_pool2d_with_indices_backward", rule, x, output_grad, indices, |_, x, g, i| {
            B::max_pool2d_with_indices_backward(x, kernel_size, stride, padding, dilation, ceil_mode, g, i).x_grad
        }))
    }

    fn interpolate(x: F<B>, output_size: [usize; 2], options: burn::tensor::ops::InterpolateOptions) -> F<B> {
        pool("interpolate", x, |p| B::interpolate(p, output_size, options.clone()))
    }

    fn interpolate_backward(x: F<B>, grad: F<B>, output_size: [usize; 2], options: InterpolateOptions) -> F<B> {
        pool_backward("interpolate_backward", x, grad, |x, g| {
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
        let mut floats =
            gathered_all::<B, FloatKind>(op, vec![Some(query), Some(key), Some(value), attn_bias]).into_iter();
        let mut next = || floats.next().flatten();
        let (q, k, v, attn_bias) = (next().unwrap(), next().unwrap(), next().unwrap(), next());
        let mask = gathered_all::<B, BoolKind>(op, vec![mask]).pop().flatten();
        let mesh = q.mesh.clone();
        let shards = (0..q.shards.len())
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
        run1_two::<B, FloatKind, FloatKind, FloatKind>("rfft", fixed(Strategy::gathered(1)), signal, |_, p| {
            B::rfft(p, dim, n)
        })
    }

    fn irfft(spectrum_re: F<B>, spectrum_im: F<B>, dim: usize, n: Option<usize>) -> F<B> {
        run2("irfft", fixed(Strategy::gathered(2)), spectrum_re, spectrum_im, |_, a, b| B::irfft(a, b, dim, n))
    }

    // Ops Burn gives a default body that Flex runs its own way: the inner backend's op, by a
    // rule where one is natural (batch shards), gathered otherwise.

    fn conv1d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvOptions<1>) -> F<B> {
        let with_bias = bias.is_some();
        let rule = |sp: &[Spec], _: &Context| rules::batch_conv(&sp[0], with_bias);
        run_opt("conv1d", rule, x, weight, bias, |_, x, w, b| B::conv1d(x, w, b, options.clone()))
    }

    fn conv_transpose1d(x: F<B>, weight: F<B>, bias: Option<F<B>>, options: ConvTransposeOptions<1>) -> F<B> {
        let with_bias = bias.is_some();
        let rule = |sp: &[Spec], _: &Context| rules::batch_conv(&sp[0], with_bias);
        run_opt("conv_transpose1d", rule, x, weight, bias, |_, x, w, b| B::conv_transpose1d(x, w, b, options.clone()))
    }

    /// The input gradient of a batch-split 1-D convolution stays split (as conv2d's).
    fn conv1d_x_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<1>) -> F<B> {
        run3("conv1d_x_backward", batch_grad(Placement::Shard(0)), x, weight, output_grad, |_, x, w, g| {
            B::conv1d_x_backward(x, w, g, options.clone())
        })
    }

    /// The weight gradient of a batch-split 1-D convolution is a summand per rank (`Partial`).
    fn conv1d_weight_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<1>) -> F<B> {
        run3("conv1d_weight_backward", batch_grad(Placement::PARTIAL_SUM), x, weight, output_grad, |_, x, w, g| {
            B::conv1d_weight_backward(x, w, g, options.clone())
        })
    }

    fn conv3d_x_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<3>) -> F<B> {
        run3("conv3d_x_backward", batch_grad(Placement::Shard(0)), x, weight, output_grad, |_, x, w, g| {
            B::conv3d_x_backward(x, w, g, options.clone())
        })
    }

    fn conv3d_weight_backward(x: F<B>, weight: F<B>, output_grad: F<B>, options: ConvOptions<3>) -> F<B> {
        run3("conv3d_weight_backward", batch_grad(Placement::PARTIAL_SUM), x, weight, output_grad, |_, x, w, g| {
            B::conv3d_weight_backward(x, w, g, options.clone())
        })
    }

    fn ctc_loss(log_probs: F<B>, targets: I<B>, input_lengths: I<B>, target_lengths: I<B>, blank: usize) -> F<B> {
        let mut floats = gathered_all::<B, FloatKind>("ctc_loss", vec![Some(log_probs)]).into_iter();
        let log_probs = floats.next().flatten().expect("log_probs");
        let (targets, input_lengths, target_lengths) =
            ctc_int_inputs::<B>("ctc_loss", targets, input_lengths, target_lengths);
        let mesh = log_probs.mesh.clone();
        let shards = (0..log_probs.shards.len())
            .map(|r| {
                B::ctc_loss(
                    log_probs.shards[r].clone(),
                    targets.shards[r].clone(),
                    input_lengths.shards[r].clone(),
                    target_lengths.shards[r].clone(),
                    blank,
                )
            })
            .collect();
        assemble(mesh, Placement::Replicate, shards)
    }

    fn has_ctc_loss_backward() -> bool {
        B::has_ctc_loss_backward()
    }

    fn ctc_loss_backward(
        log_probs: F<B>,
        targets: I<B>,
        input_lengths: I<B>,
        target_lengths: I<B>,
        grad_loss: F<B>,
        blank: usize,
    ) -> F<B> {
        let mut floats = gathered_all::<B, FloatKind>("ctc_loss_backward", vec![Some(log_probs), Some(grad_loss)])
            .into_iter()
            .flatten();
        let (log_probs, grad_loss) = (floats.next().unwrap(), floats.next().unwrap());
        let (targets, input_lengths, target_lengths) =
            ctc_int_inputs::<B>("ctc_loss_backward", targets, input_lengths, target_lengths);
        let mesh = log_probs.mesh.clone();
        let shards = (0..log_probs.shards.len())
            .map(|r| {
                B::ctc_loss_backward(
                    log_probs.shards[r].clone(),
                    targets.shards[r].clone(),
                    input_lengths.shards[r].clone(),
                    target_lengths.shards[r].clone(),
                    grad_loss.shards[r].clone(),
                    blank,
                )
            })
            .collect();
        assemble(mesh, Placement::Replicate, shards)
    }

    /// Rows of a batch-split index tensor look up their rows of a whole table on their rank.
    fn embedding(weights: F<B>, indices: I<B>) -> F<B> {
        let rule = |sp: &[Spec], cx: &Context| match (resolved(sp[0].placement), sp[1].placement) {
            (Placement::Replicate, Placement::Shard(0)) if sp[1].shape[0] >= cx.ranks => {
                Strategy::local(vec![Placement::Replicate, Placement::Shard(0)], Placement::Shard(0))
            }
            (Placement::Replicate, Placement::Replicate) => {
                Strategy::local(vec![Placement::Replicate; 2], Placement::Replicate)
            }
            _ => Strategy::gathered(2),
        };
        run2::<B, FloatKind, IntKind, FloatKind>("embedding", rule, weights, indices, |_, w, i| B::embedding(w, i))
    }

    /// From batch-split gradients and indices each rank's table gradient is a summand
    /// (`Partial`), as a weight gradient of batch shards is.
    fn embedding_backward(weights: F<B>, output_grad: F<B>, indices: I<B>) -> F<B> {
        let rule = |sp: &[Spec], cx: &Context| {
            let split = |s: &Spec| s.placement == Placement::Shard(0) && s.shape[0] >= cx.ranks;
            if resolved(sp[0].placement) == Placement::Replicate && split(&sp[1]) && split(&sp[2]) {
                let inputs = vec![Placement::Replicate, Placement::Shard(0), Placement::Shard(0)];
                return Strategy::local(inputs, Placement::PARTIAL_SUM);
            }
            Strategy::gathered(3)
        };
        run3::<B, FloatKind, FloatKind, IntKind, FloatKind>(
            "embedding_backward",
            rule,
            weights,
            output_grad,
            indices,
            |_, w, g, i| B::embedding_backward(w, g, i),
        )
    }

    /// Normalised over the last dimension: rank-local wherever that dimension is whole.
    fn layer_norm(tensor: F<B>, gamma: F<B>, beta: Option<F<B>>, epsilon: f64) -> F<B> {
        let n = 2 + usize::from(beta.is_some());
        let rule = move |sp: &[Spec], _: &Context| {
            let last = sp[0].shape.num_dims() - 1;
            let params_whole = sp[1..].iter().all(|s| resolved(s.placement) == Placement::Replicate);
            match resolved(sp[0].placement) {
                p @ (Placement::Replicate | Placement::Shard(_)) if p != Placement::Shard(last) && params_whole => {
                    let mut inputs = vec![p];
                    inputs.extend(std::iter::repeat_n(Placement::Replicate, n - 1));
                    Strategy::local(inputs, p)
                }
                _ => Strategy::gathered(n),
            }
        };
        run_opt("layer_norm", rule, tensor, gamma, beta, |_, t, g, b| B::layer_norm(t, g, b, epsilon))
    }
}

/// The input or weight gradient of a 2d convolution by the conv table; each rank runs `f` with
/// its own options (`groups / K` under the two-tower layout).
fn conv_grad<B: Backend>(
    pass: ConvPass,
    op: &str,
    x: F<B>,
    weight: F<B>,
    grad: F<B>,
    options: ConvOptions<2>,
    f: impl Fn(
            B::FloatTensorPrimitive,
            B::FloatTensorPrimitive,
            B::FloatTensorPrimitive,
            ConvOptions<2>,
        ) -> B::FloatTensorPrimitive
        + Sync,
) -> F<B> {
    let (x, weight, grad, outer) = conv_outer(op, pass, options.groups, x, weight, Some(grad));
    let grad = grad.expect("given");
    let ctx = context(&x);
    let (s, layout) = rules::conv(pass, &spec(&x), &spec(&weight), Some(&spec(&grad)), options.groups, &ctx);
    let opts = per_rank_options(&options, layout, ctx.ranks);
    run_opt_inner(op, &s, x, weight, Some(grad), &outer, |_, x, w, g| f(x, w, g.expect("given"), opts.clone()))
}

/// The outer step of a convolution pass: its rule along each outer dimension, where the
/// two-tower layout (each process a part of the groups) is not taken: the inputs are
/// gathered there instead.
fn conv_outer<B: Backend>(
    op: &str,
    pass: ConvPass,
    groups: usize,
    x: F<B>,
    weight: F<B>,
    third: Option<F<B>>,
) -> (F<B>, F<B>, Option<F<B>>, OuterLayout) {
    let rule = |sp: &[Spec], cx: &Context| match rules::conv(pass, &sp[0], &sp[1], sp.get(2), groups, cx) {
        (_, ConvLayout::Towers) => Strategy::gathered(sp.len()),
        (s, _) => s,
    };
    outer_opt(op, &rule, x, weight, third)
}

/// Whether a max pooling of the shard `x` takes owt's formulation ([`crate::max_pool`]): on the
/// backends it is chosen for, with the settings it covers.
fn owt_max_pool<B: Backend>(
    x: &B::FloatTensorPrimitive,
    kernel: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
) -> bool {
    let dims: [usize; 4] = float::<B>(x.clone()).dims();
    crate::max_pool::formulation_for::<B>() == Formulation::Owt
        && crate::max_pool::applies(dims, kernel, padding, dilation, ceil_mode)
}

fn float<B: Backend>(x: B::FloatTensorPrimitive) -> burn::tensor::Tensor<B, 4> {
    burn::tensor::Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(x))
}

/// A pooling or resizing op: local on batch or channel shards.
fn pool<B: Backend>(op: &str, x: F<B>, f: impl Fn(B::FloatTensorPrimitive) -> B::FloatTensorPrimitive + Sync) -> F<B> {
    run1(op, |sp, _| rules::pool(&sp[0]), x, |_, p| f(p))
}

/// The backward of a pooling or resizing op, in the input's layout.
fn pool_backward<B: Backend>(
    op: &str,
    x: F<B>,
    grad: F<B>,
    f: impl Fn(B::FloatTensorPrimitive, B::FloatTensorPrimitive) -> B::FloatTensorPrimitive + Sync,
) -> F<B> {
    run2(op, |sp, _| rules::pool_backward(&sp[0], &sp[1], &[]), x, grad, |_, x, g| f(x, g))
}

/// The integer inputs of the CTC loss and its gradient (targets, input lengths, target
/// lengths), gathered whole on every rank as `op` needs them.
fn ctc_int_inputs<B: Backend>(
    op: &str,
    targets: I<B>,
    input_lengths: I<B>,
    target_lengths: I<B>,
) -> (I<B>, I<B>, I<B>) {
    let mut ints = gathered_all::<B, IntKind>(op, vec![Some(targets), Some(input_lengths), Some(target_lengths)])
        .into_iter()
        .flatten();
    (ints.next().unwrap(), ints.next().unwrap(), ints.next().unwrap())
}
