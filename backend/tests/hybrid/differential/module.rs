//! `ModuleOps`: every method, forward (the gradients' own ops are methods too, run here on
//! given gradients).

use burn::tensor::ops::{
    AttentionModuleOptions, ConvOptions, ConvTransposeOptions, DeformConvOptions, InterpolateMode, InterpolateOptions,
    UnfoldOptions,
};
use burn::tensor::{DType, TensorData};

use super::{bl, case, check, finite, fl, float_data, it, rf, ri, Case, Input, Match};

/// `shapes` filled with finite values, in f32 and f16, one set per dtype.
fn set(shapes: &[&[usize]]) -> Vec<Input> {
    [DType::F32, DType::F16]
        .into_iter()
        .map(|dtype| Input {
            what: format!("{dtype:?} {shapes:?}"),
            data: shapes.iter().enumerate().map(|(i, s)| float_data(finite(s.iter().product(), i), s, dtype)).collect(),
        })
        .collect()
}

/// As [`set`] for each batch size: `shapes(n)`.
fn batches(shapes: fn(usize) -> Vec<Vec<usize>>) -> Vec<Input> {
    [3usize, 4]
        .into_iter()
        .flat_map(|n| {
            let s = shapes(n);
            let refs: Vec<&[usize]> = s.iter().map(|v| v.as_slice()).collect();
            set(&refs)
        })
        .collect()
}

// x [n, 4, 6, 5], weight [6, 4 / groups, 3, 3], grad of the output [n, 6, 3, 3] (stride 2, padding 1).
fn conv2d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 4, 6, 5], vec![6, 2, 3, 3], vec![6], vec![n, 6, 3, 3]])
}

fn conv2d_options() -> ConvOptions<2> {
    ConvOptions::new([2, 2], [1, 1], [1, 1], 2)
}

fn conv1d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 4, 7], vec![6, 4, 3], vec![6], vec![n, 6, 4]])
}

fn conv1d_options() -> ConvOptions<1> {
    ConvOptions::new([2], [1], [1], 1)
}

fn conv3d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 2, 4, 4, 3], vec![3, 2, 2, 2, 2], vec![3], vec![n, 3, 3, 3, 2]])
}

fn conv3d_options() -> ConvOptions<3> {
    ConvOptions::new([1, 1, 1], [0, 0, 0], [1, 1, 1], 1)
}

// Transposed: x [n, 4, 3, 3], weight [4, 3, 3, 3] (in, out), grad of the output [n, 3, 7, 7].
fn conv_transpose2d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 4, 3, 3], vec![4, 3, 3, 3], vec![3], vec![n, 3, 7, 7]])
}

fn conv_transpose2d_options() -> ConvTransposeOptions<2> {
    ConvTransposeOptions::new([2, 2], [0, 0], [0, 0], [1, 1], 1)
}

fn conv_transpose1d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 4, 5], vec![4, 3, 3], vec![3], vec![n, 3, 11]])
}

fn conv_transpose1d_options() -> ConvTransposeOptions<1> {
    ConvTransposeOptions::new([2], [0], [0], [1], 1)
}

fn conv_transpose3d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 2, 2, 2, 2], vec![2, 3, 2, 2, 2], vec![3], vec![n, 3, 3, 3, 3]])
}

fn conv_transpose3d_options() -> ConvTransposeOptions<3> {
    ConvTransposeOptions::new([1, 1, 1], [0, 0, 0], [0, 0, 0], [1, 1, 1], 1)
}

// Deformable: x [n, 2, 4, 4], weight [3, 2, 3, 3], offset [n, 18, 2, 2], mask [n, 9, 2, 2],
// bias [3], grad of the output [n, 3, 2, 2].
fn deform_inputs() -> Vec<Input> {
    batches(|n| {
        vec![vec![n, 2, 4, 4], vec![3, 2, 3, 3], vec![n, 18, 2, 2], vec![n, 9, 2, 2], vec![3], vec![n, 3, 2, 2]]
    })
}

fn deform_options() -> DeformConvOptions<2> {
    DeformConvOptions::new([1, 1], [0, 0], [1, 1], 1, 1)
}

// Pooling: x [n, 3, 7, 6] and grads of each pooling's output.
fn pool2d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 3, 7, 6], vec![n, 3, 3, 3], vec![n, 3, 2, 2]])
}

fn pool1d_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 3, 7], vec![n, 3, 3], vec![n, 3, 2]])
}

// Linear: x [n, 5], weight [5, 4], bias [4], grad of the output [n, 4].
fn linear_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 5], vec![5, 4], vec![4], vec![n, 4]])
}

// Attention: query, key, value [2, 3, n, 4] (batch, heads, sequence, head size), bias [2, 3, n, n].
fn attention_inputs() -> Vec<Input> {
    batches(|n| vec![vec![2, 3, n, 4], vec![2, 3, n, 4], vec![2, 3, n, 4], vec![2, 3, n, n]])
}

// layer_norm: x [n, 3, 5], gamma and beta [5].
fn norm_inputs() -> Vec<Input> {
    batches(|n| vec![vec![n, 3, 5], vec![5], vec![5]])
}

// Signals [n, 8] for the real FFT along dimension 1 (and their spectra [n, 5]).
fn fft_inputs() -> Vec<Input> {
    let mut out = batches(|n| vec![vec![n, 8], vec![n, 5], vec![n, 5]]);
    out.retain(|i| i.data[0].dtype == DType::F32);
    out
}

/// An embedding table [7, 4] with [n, 3] indices into it and grads of the output [n, 3, 4].
fn embedding_inputs() -> Vec<Input> {
    [3usize, 4]
        .into_iter()
        .flat_map(|n| {
            [DType::F32, DType::F16].map(|dtype| Input {
                what: format!("{dtype:?} table [7, 4], indices [{n}, 3]"),
                data: vec![
                    float_data(finite(28, 0), &[7, 4], dtype),
                    TensorData::new((0..n as i64 * 3).map(|i| (i * 5 + 2) % 7).collect::<Vec<_>>(), [n, 3]),
                    float_data(finite(n * 12, 2), &[n, 3, 4], dtype),
                ],
            })
        })
        .collect()
}

/// Log-probabilities [6, n, 4] (time, batch, classes), targets [n, 2] (no blank), their lengths.
fn ctc_inputs() -> Vec<Input> {
    [3usize, 4]
        .into_iter()
        .map(|n| {
            let lp: Vec<f32> = (0..6 * n * 4).map(|i| -1.0 - (i % 7) as f32 * 0.3).collect();
            Input {
                what: format!("F32 batch {n}"),
                data: vec![
                    TensorData::new(lp, [6, n, 4]),
                    TensorData::new((0..n as i64 * 2).map(|i| 1 + i % 3).collect::<Vec<_>>(), [n, 2]),
                    TensorData::new(vec![6i64; n], [n]),
                    TensorData::new((0..n as i64).map(|i| 1 + i % 2).collect::<Vec<_>>(), [n]),
                    TensorData::new(vec![1.0f32; n], [n]),
                ],
            }
        })
        .collect()
}

fn attention_mask(n: usize) -> TensorData {
    TensorData::new((0..2 * 3 * n * n).map(|i| i % 5 == 0).collect::<Vec<_>>(), [2, 3, n, n])
}

fn cases() -> Vec<Case> {
    vec![
        case!(conv2d, conv2d_inputs, Match::Rounding, |d, x| vec![
            rf::<B>(B::conv2d(fl::<B>(&x[0], d), fl::<B>(&x[1], d), Some(fl::<B>(&x[2], d)), conv2d_options())),
            rf::<B>(B::conv2d(fl::<B>(&x[0], d), fl::<B>(&x[1], d), None, conv2d_options()))
        ]),
        case!(conv2d_x_backward, conv2d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv2d_x_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            fl::<B>(&x[3], d),
            conv2d_options()
        ))]),
        case!(conv2d_weight_backward, conv2d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv2d_weight_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            fl::<B>(&x[3], d),
            conv2d_options()
        ))]),
        case!(conv2d_bias_backward, conv2d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv2d_bias_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[2], d),
            fl::<B>(&x[3], d)
        ))]),
        case!(conv1d, conv1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv1d(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            Some(fl::<B>(&x[2], d)),
            conv1d_options()
        ))]),
        case!(conv1d_x_backward, conv1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv1d_x_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            fl::<B>(&x[3], d),
            conv1d_options()
        ))]),
        case!(conv1d_weight_backward, conv1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv1d_weight_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            fl::<B>(&x[3], d),
            conv1d_options()
        ))]),
        case!(conv1d_bias_backward, conv1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv1d_bias_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[2], d),
            fl::<B>(&x[3], d)
        ))]),
        case!(conv3d, conv3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv3d(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            Some(fl::<B>(&x[2], d)),
            conv3d_options()
        ))]),
        case!(conv3d_x_backward, conv3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv3d_x_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            fl::<B>(&x[3], d),
            conv3d_options()
        ))]),
        case!(conv3d_weight_backward, conv3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv3d_weight_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            fl::<B>(&x[3], d),
            conv3d_options()
        ))]),
        case!(conv3d_bias_backward, conv3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv3d_bias_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[2], d),
            fl::<B>(&x[3], d)
        ))]),
        case!(conv_transpose2d, conv_transpose2d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv_transpose2d(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            Some(fl::<B>(&x[2], d)),
            conv_transpose2d_options()
        ))]),
        case!(conv_transpose2d_x_backward, conv_transpose2d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose2d_x_backward(fl::<B>(&x[1], d), fl::<B>(&x[3], d), conv_transpose2d_options())
        )]),
        case!(conv_transpose2d_weight_backward, conv_transpose2d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose2d_weight_backward(
                fl::<B>(&x[0], d),
                fl::<B>(&x[1], d),
                fl::<B>(&x[3], d),
                conv_transpose2d_options()
            )
        )]),
        case!(conv_transpose2d_bias_backward, conv_transpose2d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose2d_bias_backward(fl::<B>(&x[0], d), fl::<B>(&x[2], d), fl::<B>(&x[3], d))
        )]),
        case!(conv_transpose1d, conv_transpose1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv_transpose1d(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            Some(fl::<B>(&x[2], d)),
            conv_transpose1d_options()
        ))]),
        case!(conv_transpose1d_x_backward, conv_transpose1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose1d_x_backward(fl::<B>(&x[1], d), fl::<B>(&x[3], d), conv_transpose1d_options())
        )]),
        case!(conv_transpose1d_weight_backward, conv_transpose1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose1d_weight_backward(
                fl::<B>(&x[0], d),
                fl::<B>(&x[1], d),
                fl::<B>(&x[3], d),
                conv_transpose1d_options()
            )
        )]),
        case!(conv_transpose1d_bias_backward, conv_transpose1d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose1d_bias_backward(fl::<B>(&x[0], d), fl::<B>(&x[2], d), fl::<B>(&x[3], d))
        )]),
        case!(conv_transpose3d, conv_transpose3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::conv_transpose3d(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            Some(fl::<B>(&x[2], d)),
            conv_transpose3d_options()
        ))]),
        case!(conv_transpose3d_x_backward, conv_transpose3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose3d_x_backward(fl::<B>(&x[1], d), fl::<B>(&x[3], d), conv_transpose3d_options())
        )]),
        case!(conv_transpose3d_weight_backward, conv_transpose3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose3d_weight_backward(
                fl::<B>(&x[0], d),
                fl::<B>(&x[1], d),
                fl::<B>(&x[3], d),
                conv_transpose3d_options()
            )
        )]),
        case!(conv_transpose3d_bias_backward, conv_transpose3d_inputs, Match::Rounding, |d, x| vec![rf::<B>(
            B::conv_transpose3d_bias_backward(fl::<B>(&x[0], d), fl::<B>(&x[2], d), fl::<B>(&x[3], d))
        )]),
        case!(deform_conv2d, deform_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::deform_conv2d(
            fl::<B>(&x[0], d),
            fl::<B>(&x[2], d),
            fl::<B>(&x[1], d),
            Some(fl::<B>(&x[3], d)),
            Some(fl::<B>(&x[4], d)),
            deform_options()
        ))]),
        case!(deform_conv2d_backward, deform_inputs, Match::Rounding, |d, x| {
            let g = B::deform_conv2d_backward(
                fl::<B>(&x[0], d),
                fl::<B>(&x[2], d),
                fl::<B>(&x[1], d),
                Some(fl::<B>(&x[3], d)),
                Some(fl::<B>(&x[4], d)),
                fl::<B>(&x[5], d),
                deform_options(),
            );
            let mut out = vec![rf::<B>(g.x_grad), rf::<B>(g.offset_grad), rf::<B>(g.weight_grad)];
            out.extend(g.mask_grad.map(rf::<B>));
            out.extend(g.bias_grad.map(rf::<B>));
            out
        }),
        case!(linear, linear_inputs, Match::Rounding, |d, x| vec![
            rf::<B>(B::linear(fl::<B>(&x[0], d), fl::<B>(&x[1], d), Some(fl::<B>(&x[2], d)))),
            rf::<B>(B::linear(fl::<B>(&x[0], d), fl::<B>(&x[1], d), None))
        ]),
        case!(linear_x_backward, linear_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::linear_x_backward(
            fl::<B>(&x[1], d),
            fl::<B>(&x[3], d)
        ))]),
        case!(linear_weight_backward, linear_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::linear_weight_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[3], d)
        ))]),
        case!(linear_bias_backward, linear_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::linear_bias_backward(
            fl::<B>(&x[3], d)
        ))]),
        case!(unfold4d, pool2d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::unfold4d(
            fl::<B>(&x[0], d),
            [3, 2],
            UnfoldOptions::new([2, 1], [1, 0], [1, 1])
        ))]),
        case!(avg_pool2d, pool2d_inputs, Match::Bits, |d, x| vec![
            rf::<B>(B::avg_pool2d(fl::<B>(&x[0], d), [3, 3], [2, 2], [1, 0], true, false)),
            rf::<B>(B::avg_pool2d(fl::<B>(&x[0], d), [2, 2], [2, 2], [0, 0], false, true))
        ]),
        case!(avg_pool2d_backward, pool2d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::avg_pool2d_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            [3, 3],
            [2, 2],
            [0, 0],
            true,
            false
        ))]),
        case!(adaptive_avg_pool2d, pool2d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::adaptive_avg_pool2d(
            fl::<B>(&x[0], d),
            [3, 3]
        ))]),
        case!(adaptive_avg_pool2d_backward, pool2d_inputs, Match::Bits, |d, x| vec![rf::<B>(
            B::adaptive_avg_pool2d_backward(fl::<B>(&x[0], d), fl::<B>(&x[1], d))
        )]),
        case!(max_pool2d, pool2d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::max_pool2d(
            fl::<B>(&x[0], d),
            [3, 3],
            [2, 2],
            [0, 0],
            [1, 1],
            false
        ))]),
        case!(max_pool2d_with_indices, pool2d_inputs, Match::Bits, |d, x| {
            let p = B::max_pool2d_with_indices(fl::<B>(&x[0], d), [3, 3], [2, 2], [0, 0], [1, 1], false);
            vec![rf::<B>(p.output), ri::<B>(p.indices)]
        }),
        // 3 x 3 windows, stride 2, one column of padding: [7, 6] pools to the gradient's [3, 3].
        case!(max_pool2d_with_indices_backward, pool2d_inputs, Match::Rounding, |d, x| {
            let p = B::max_pool2d_with_indices(fl::<B>(&x[0], d), [3, 3], [2, 2], [0, 1], [1, 1], false);
            let g = B::max_pool2d_with_indices_backward(
                fl::<B>(&x[0], d),
                [3, 3],
                [2, 2],
                [0, 1],
                [1, 1],
                false,
                fl::<B>(&x[1], d),
                p.indices,
            );
            vec![rf::<B>(g.x_grad)]
        }),
        case!(avg_pool1d, pool1d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::avg_pool1d(
            fl::<B>(&x[0], d),
            3,
            2,
            1,
            true,
            false
        ))]),
        case!(avg_pool1d_backward, pool1d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::avg_pool1d_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[1], d),
            3,
            2,
            0,
            true,
            false
        ))]),
        case!(adaptive_avg_pool1d, pool1d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::adaptive_avg_pool1d(
            fl::<B>(&x[0], d),
            3
        ))]),
        case!(adaptive_avg_pool1d_backward, pool1d_inputs, Match::Bits, |d, x| vec![rf::<B>(
            B::adaptive_avg_pool1d_backward(fl::<B>(&x[0], d), fl::<B>(&x[1], d))
        )]),
        case!(max_pool1d, pool1d_inputs, Match::Bits, |d, x| vec![rf::<B>(B::max_pool1d(
            fl::<B>(&x[0], d),
            3,
            2,
            0,
            1,
            false
        ))]),
        case!(max_pool1d_with_indices, pool1d_inputs, Match::Bits, |d, x| {
            let p = B::max_pool1d_with_indices(fl::<B>(&x[0], d), 3, 2, 0, 1, false);
            vec![rf::<B>(p.output), ri::<B>(p.indices)]
        }),
        case!(max_pool1d_with_indices_backward, pool1d_inputs, Match::Rounding, |d, x| {
            let p = B::max_pool1d_with_indices(fl::<B>(&x[0], d), 3, 2, 0, 1, false);
            let g =
                B::max_pool1d_with_indices_backward(fl::<B>(&x[0], d), 3, 2, 0, 1, false, fl::<B>(&x[1], d), p.indices);
            vec![rf::<B>(g.x_grad)]
        }),
        case!(interpolate, pool2d_inputs, Match::Bits, |d, x| [
            InterpolateMode::Nearest,
            InterpolateMode::Bilinear,
            InterpolateMode::Bicubic
        ]
        .into_iter()
        .map(|m| rf::<B>(B::interpolate(fl::<B>(&x[0], d), [5, 9], InterpolateOptions::new(m))))
        .collect()),
        case!(interpolate_backward, pool2d_inputs, Match::Rounding, |d, x| [
            InterpolateMode::Nearest,
            InterpolateMode::Bilinear
        ]
        .into_iter()
        .map(|m| rf::<B>(B::interpolate_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[2], d),
            [2, 2],
            InterpolateOptions::new(m)
        )))
        .collect()),
        case!(attention, attention_inputs, Match::Rounding, |d, x| {
            let n = x[0].shape[2];
            vec![
                rf::<B>(B::attention(
                    fl::<B>(&x[0], d),
                    fl::<B>(&x[1], d),
                    fl::<B>(&x[2], d),
                    None,
                    None,
                    AttentionModuleOptions::default(),
                )),
                rf::<B>(B::attention(
                    fl::<B>(&x[0], d),
                    fl::<B>(&x[1], d),
                    fl::<B>(&x[2], d),
                    Some(bl::<B>(&attention_mask(n), d)),
                    Some(fl::<B>(&x[3], d)),
                    AttentionModuleOptions { is_causal: true, ..Default::default() },
                )),
            ]
        }),
        case!(layer_norm, norm_inputs, Match::Rounding, |d, x| vec![
            rf::<B>(B::layer_norm(fl::<B>(&x[0], d), fl::<B>(&x[1], d), Some(fl::<B>(&x[2], d)), 1e-5)),
            rf::<B>(B::layer_norm(fl::<B>(&x[0], d), fl::<B>(&x[1], d), None, 1e-5))
        ]),
        case!(embedding, embedding_inputs, Match::Bits, |d, x| vec![rf::<B>(B::embedding(
            fl::<B>(&x[0], d),
            it::<B>(&x[1], d)
        ))]),
        case!(embedding_backward, embedding_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::embedding_backward(
            fl::<B>(&x[0], d),
            fl::<B>(&x[2], d),
            it::<B>(&x[1], d)
        ))]),
        case!(ctc_loss, ctc_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::ctc_loss(
            fl::<B>(&x[0], d),
            it::<B>(&x[1], d),
            it::<B>(&x[2], d),
            it::<B>(&x[3], d),
            0
        ))]),
        case!(has_ctc_loss_backward, ctc_inputs, Match::Bits, |d, x| vec![TensorData::new(
            vec![B::has_ctc_loss_backward()],
            [1]
        )]),
        case!(ctc_loss_backward, ctc_inputs, Match::Rounding, |d, x| match B::has_ctc_loss_backward() {
            true => vec![rf::<B>(B::ctc_loss_backward(
                fl::<B>(&x[0], d),
                it::<B>(&x[1], d),
                it::<B>(&x[2], d),
                it::<B>(&x[3], d),
                fl::<B>(&x[4], d),
                0
            ))],
            false => Vec::new(),
        }),
        case!(rfft, fft_inputs, Match::Rounding, |d, x| {
            let (re, im) = B::rfft(fl::<B>(&x[0], d), 1, None);
            vec![rf::<B>(re), rf::<B>(im)]
        }),
        case!(irfft, fft_inputs, Match::Rounding, |d, x| vec![rf::<B>(B::irfft(
            fl::<B>(&x[1], d),
            fl::<B>(&x[2], d),
            1,
            Some(8)
        ))]),
        case!(max_pool2d_with_indices, pool2d_inputs, Match::Bits, |d, x| {
            // Dilated, padded, in ceil mode.
            let p = B::max_pool2d_with_indices(fl::<B>(&x[0], d), [2, 2], [1, 2], [1, 1], [2, 1], true);
            vec![rf::<B>(p.output), ri::<B>(p.indices)]
        }),
    ]
}

/// The module cases, for the coverage check.
pub(crate) fn all() -> Vec<Case> {
    cases()
}

#[test]
fn every_module_op_computes_what_flex_does() {
    let counts = check(&cases());
    counts.report("module ops");
}
