//! Module ops of `Meta`: convolutions (1d/2d/3d, transposed, all backward passes), 2d pooling
//! with its backward passes, resizing, attention, deformable convolution, FFTs and `unfold4d`,
//! each logged as one op. Burn's defaults stay for what is built from these or from tensor
//! ops: 1d pooling (through 2d), linear layers, embeddings, layer norm and CTC loss.

use burn::tensor::ops::{
    AttentionModuleOptions, ConvOptions, ConvTransposeOptions, DeformConv2dBackward, DeformConvOptions,
    InterpolateOptions, MaxPool2dBackward, MaxPool2dWithIndices, ModuleOps, UnfoldOptions,
};
use burn::tensor::Shape;

use crate::backend::Meta;
use crate::cost::{ceil_log2, conv_flops};
use crate::ops::{conv, pool};
use crate::shapes;
use crate::tensor::MetaTensor;

type T = MetaTensor;

/// The size along the transformed dimension Flex uses for a real FFT of `n` (or the whole
/// dimension): the next power of two.
fn fft_size(len: usize, n: Option<usize>) -> usize {
    n.unwrap_or(len).next_power_of_two()
}

/// ~2.5·n·log2(n) flops per transformed lane of length `n` (a real-input radix-2 FFT).
fn fft_flops(lanes: usize, n: usize) -> u64 {
    (lanes as u64 * n as u64 * ceil_log2(n) * 5).div_ceil(2)
}

impl ModuleOps<Self> for Meta {
    fn conv1d(x: T, weight: T, bias: Option<T>, options: ConvOptions<1>) -> T {
        conv::conv("conv1d", x, weight, bias, &options)
    }

    fn conv1d_x_backward(x: T, weight: T, output_grad: T, options: ConvOptions<1>) -> T {
        conv::conv_x_backward("conv1d_x_backward", x, weight, output_grad, options.groups)
    }

    fn conv1d_weight_backward(x: T, weight: T, output_grad: T, _options: ConvOptions<1>) -> T {
        conv::conv_weight_backward("conv1d_weight_backward", x, weight, output_grad)
    }

    fn conv1d_bias_backward(_x: T, bias: T, output_grad: T) -> T {
        conv::bias_backward("conv1d_bias_backward", bias, output_grad)
    }

    fn conv2d(x: T, weight: T, bias: Option<T>, options: ConvOptions<2>) -> T {
        conv::conv("conv2d", x, weight, bias, &options)
    }

    fn conv2d_x_backward(x: T, weight: T, output_grad: T, options: ConvOptions<2>) -> T {
        conv::conv_x_backward("conv2d_x_backward", x, weight, output_grad, options.groups)
    }

    fn conv2d_weight_backward(x: T, weight: T, output_grad: T, _options: ConvOptions<2>) -> T {
        conv::conv_weight_backward("conv2d_weight_backward", x, weight, output_grad)
    }

    fn conv2d_bias_backward(_x: T, bias: T, output_grad: T) -> T {
        conv::bias_backward("conv2d_bias_backward", bias, output_grad)
    }

    fn conv3d(x: T, weight: T, bias: Option<T>, options: ConvOptions<3>) -> T {
        conv::conv("conv3d", x, weight, bias, &options)
    }

    fn conv3d_x_backward(x: T, weight: T, output_grad: T, options: ConvOptions<3>) -> T {
        conv::conv_x_backward("conv3d_x_backward", x, weight, output_grad, options.groups)
    }

    fn conv3d_weight_backward(x: T, weight: T, output_grad: T, _options: ConvOptions<3>) -> T {
        conv::conv_weight_backward("conv3d_weight_backward", x, weight, output_grad)
    }

    fn conv3d_bias_backward(_x: T, bias: T, output_grad: T) -> T {
        conv::bias_backward("conv3d_bias_backward", bias, output_grad)
    }

    fn conv_transpose1d(x: T, weight: T, bias: Option<T>, options: ConvTransposeOptions<1>) -> T {
        conv::conv_transpose("conv_transpose1d", x, weight, bias, &options)
    }

    fn conv_transpose1d_x_backward(weight: T, output_grad: T, options: ConvTransposeOptions<1>) -> T {
        conv::conv_transpose_x_backward("conv_transpose1d_x_backward", weight, output_grad, &options)
    }

    fn conv_transpose1d_weight_backward(x: T, weight: T, output_grad: T, _options: ConvTransposeOptions<1>) -> T {
        conv::conv_transpose_weight_backward("conv_transpose1d_weight_backward", x, weight, output_grad)
    }

    fn conv_transpose1d_bias_backward(_x: T, bias: T, output_grad: T) -> T {
        conv::bias_backward("conv_transpose1d_bias_backward", bias, output_grad)
    }

    fn conv_transpose2d(x: T, weight: T, bias: Option<T>, options: ConvTransposeOptions<2>) -> T {
        conv::conv_transpose("conv_transpose2d", x, weight, bias, &options)
    }

    fn conv_transpose2d_x_backward(weight: T, output_grad: T, options: ConvTransposeOptions<2>) -> T {
        conv::conv_transpose_x_backward("conv_transpose2d_x_backward", weight, output_grad, &options)
    }

    fn conv_transpose2d_weight_backward(x: T, weight: T, output_grad: T, _options: ConvTransposeOptions<2>) -> T {
        conv::conv_transpose_weight_backward("conv_transpose2d_weight_backward", x, weight, output_grad)
    }

    fn conv_transpose2d_bias_backward(_x: T, bias: T, output_grad: T) -> T {
        conv::bias_backward("conv_transpose2d_bias_backward", bias, output_grad)
    }

    fn conv_transpose3d(x: T, weight: T, bias: Option<T>, options: ConvTransposeOptions<3>) -> T {
        conv::conv_transpose("conv_transpose3d", x, weight, bias, &options)
    }

    fn conv_transpose3d_x_backward(weight: T, output_grad: T, options: ConvTransposeOptions<3>) -> T {
        conv::conv_transpose_x_backward("conv_transpose3d_x_backward", weight, output_grad, &options)
    }

    fn conv_transpose3d_weight_backward(x: T, weight: T, output_grad: T, _options: ConvTransposeOptions<3>) -> T {
        conv::conv_transpose_weight_backward("conv_transpose3d_weight_backward", x, weight, output_grad)
    }

    fn conv_transpose3d_bias_backward(_x: T, bias: T, output_grad: T) -> T {
        conv::bias_backward("conv_transpose3d_bias_backward", bias, output_grad)
    }

    /// `[N, C·kh·kw, L]` (im2col; a copy: 0 flops), `L` the number of window positions.
    fn unfold4d(x: T, kernel_size: [usize; 2], options: UnfoldOptions) -> T {
        let op = "unfold4d";
        let windows = shapes::pool(op, &x.shape, kernel_size, options.stride, options.padding, options.dilation, false);
        let shape = Shape::new([x.shape[0], x.shape[1] * kernel_size[0] * kernel_size[1], windows[2] * windows[3]]);
        let out = x.like(shape, x.dtype);
        MetaTensor::movement(op, &[&x], out)
    }

    /// `[N, Cout, H_out, W_out]` with the output size read from `offset` `[N, .., H_out, W_out]`
    /// as Flex does; the flops of the plain convolution (the sampling is not counted).
    fn deform_conv2d(
        x: T,
        offset: T,
        weight: T,
        mask: Option<T>,
        bias: Option<T>,
        _options: DeformConvOptions<2>,
    ) -> T {
        let op = "deform_conv2d";
        let shape = Shape::new([x.shape[0], weight.shape[0], offset.shape[2], offset.shape[3]]);
        let out = x.like(shape, x.dtype);
        let flops = conv_flops(&weight.shape, &out.shape);
        let mut inputs = vec![&x, &offset, &weight];
        inputs.extend(mask.as_ref());
        inputs.extend(bias.as_ref());
        MetaTensor::log(op, &inputs, out, flops)
    }

    /// Each gradient has its input's shape; twice the forward's convolution flops.
    fn deform_conv2d_backward(
        x: T,
        offset: T,
        weight: T,
        mask: Option<T>,
        bias: Option<T>,
        output_grad: T,
        _options: DeformConvOptions<2>,
    ) -> DeformConv2dBackward<Self> {
        let op = "deform_conv2d_backward";
        let flops = 2 * conv_flops(&weight.shape, &output_grad.shape);
        let written = x.bytes()
            + offset.bytes()
            + weight.bytes()
            + mask.as_ref().map_or(0, |m| m.bytes())
            + bias.as_ref().map_or(0, |b| b.bytes());
        let read =
            x.bytes() + offset.bytes() + weight.bytes() + output_grad.bytes() + mask.as_ref().map_or(0, |m| m.bytes());
        x.device.record(op, flops, read, written);
        DeformConv2dBackward::new(x, offset, weight, mask, bias)
    }

    fn avg_pool2d(
        x: T,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        _count_include_pad: bool,
        ceil_mode: bool,
    ) -> T {
        pool::pool2d("avg_pool2d", x, kernel_size, stride, padding, [1, 1], ceil_mode)
    }

    fn avg_pool2d_backward(
        x: T,
        grad: T,
        kernel_size: [usize; 2],
        _stride: [usize; 2],
        _padding: [usize; 2],
        _count_include_pad: bool,
        _ceil_mode: bool,
    ) -> T {
        pool::avg_pool2d_backward("avg_pool2d_backward", x, grad, kernel_size)
    }

    fn adaptive_avg_pool2d(x: T, output_size: [usize; 2]) -> T {
        pool::adaptive_avg_pool2d("adaptive_avg_pool2d", x, output_size)
    }

    fn adaptive_avg_pool2d_backward(x: T, grad: T) -> T {
        pool::adaptive_avg_pool2d_backward("adaptive_avg_pool2d_backward", x, grad)
    }

    fn max_pool2d(
        x: T,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
    ) -> T {
        pool::pool2d("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode)
    }

    fn max_pool2d_with_indices(
        x: T,
        kernel_size: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        ceil_mode: bool,
    ) -> MaxPool2dWithIndices<Self> {
        let (output, indices) = pool::max_pool2d_with_indices(
            "max_pool2d_with_indices",
            x,
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode,
        );
        MaxPool2dWithIndices::new(output, indices)
    }

    fn max_pool2d_with_indices_backward(
        x: T,
        _kernel_size: [usize; 2],
        _stride: [usize; 2],
        _padding: [usize; 2],
        _dilation: [usize; 2],
        _ceil_mode: bool,
        output_grad: T,
        indices: T,
    ) -> MaxPool2dBackward<Self> {
        MaxPool2dBackward::new(pool::max_pool2d_backward("max_pool2d_with_indices_backward", x, output_grad, indices))
    }

    fn interpolate(x: T, output_size: [usize; 2], options: InterpolateOptions) -> T {
        pool::interpolate("interpolate", x, output_size, &options)
    }

    fn interpolate_backward(x: T, grad: T, _output_size: [usize; 2], options: InterpolateOptions) -> T {
        pool::interpolate_backward("interpolate_backward", x, grad, &options)
    }

    /// `[B, H, Sq, Dv]` from query `[B, H, Sq, Dk]`, key `[B, H, Sk, Dk]` and value
    /// `[B, H, Sk, Dv]`: 2·B·H·Sq·Sk·(Dk + Dv) flops (the two matmuls).
    fn attention(
        query: T,
        key: T,
        value: T,
        mask: Option<T>,
        attn_bias: Option<T>,
        _options: AttentionModuleOptions,
    ) -> T {
        let op = "attention";
        let (q, k, v) = (&query.shape, &key.shape, &value.shape);
        assert!(q.num_dims() == 4 && k.num_dims() == 4 && v.num_dims() == 4, "{op}: expected rank 4 q, k, v");
        let out = query.like(Shape::new([q[0], q[1], q[2], v[3]]), query.dtype);
        let flops = 2 * (q[0] * q[1] * q[2] * k[2]) as u64 * (q[3] + v[3]) as u64;
        let mut inputs = vec![&query, &key, &value];
        inputs.extend(mask.as_ref());
        inputs.extend(attn_bias.as_ref());
        MetaTensor::log(op, &inputs, out, flops)
    }

    /// Real and imaginary parts with `fft_size/2 + 1` bins along `dim`, `fft_size` the next
    /// power of two of `n` (or of the dimension) as in Flex.
    fn rfft(signal: T, dim: usize, n: Option<usize>) -> (T, T) {
        let op = "rfft";
        shapes::check_dim(op, &signal.shape, dim);
        let size = fft_size(signal.shape[dim], n);
        let shape = shapes::with_dim(op, &signal.shape, dim, size / 2 + 1);
        let re = signal.like(shape.clone(), signal.dtype);
        let im = signal.like(shape, signal.dtype);
        let lanes = signal.numel() / signal.shape[dim].max(1);
        signal.device.record(op, fft_flops(lanes, size), signal.bytes(), re.bytes() + im.bytes());
        (re, im)
    }

    /// A real signal of `fft_size` samples along `dim`: the next power of two of `n` (or of
    /// `2·(bins − 1)`), 1 when that is at most 1, as in Flex.
    fn irfft(spectrum_re: T, spectrum_im: T, dim: usize, n: Option<usize>) -> T {
        let op = "irfft";
        shapes::check_dim(op, &spectrum_re.shape, dim);
        let bins = spectrum_re.shape[dim];
        assert!(bins >= 1, "{op}: spectrum dimension cannot be empty");
        let size = n.unwrap_or(2 * (bins - 1)).next_power_of_two().max(1);
        let out = spectrum_re.like(shapes::with_dim(op, &spectrum_re.shape, dim, size), spectrum_re.dtype);
        let lanes = spectrum_re.numel() / bins;
        let flops = fft_flops(lanes, size);
        MetaTensor::log(op, &[&spectrum_re, &spectrum_im], out, flops)
    }
}
