//! Every conv layer of the three AlexNets (AlexNetSmall with one and two towers) and the VGGs,
//! as built by owt-models, described for cuDNN (`owt_hybrid::cudnn::ConvProblem`): the
//! descriptor's padding, stride, dilation, groups and filter are the layer's own, and cuDNN's
//! output side (its documented formula) is Burn's own output-shape arithmetic
//! (`calculate_conv_output_sizes`) and the shape the layer's forward pass gives on Flex. The
//! input gradient and the weight gradient are described over the same tensors.
//!
//! Then issue 77's grid of convolutions (non-square kernels, strides, dilations and paddings
//! that differ by axis, asymmetric and `Same` paddings, groups), each as the backend's
//! convolution receives it from Burn's `Conv2d`: a padding symmetric on each axis in the
//! descriptor, an asymmetric one padded into the input first and none in the descriptor (the
//! one place this is decided is Burn 0.21's `conv2d`, which owt's backend follows; cuDNN's
//! descriptors have a padding per axis, as PyTorch's do). Both ways give the layer's own
//! output, values and shape, and cuDNN's output shape.

use burn::backend::Flex;
use burn::nn::PaddingConfig2d;
use burn::prelude::*;
use burn::tensor::ops::conv::calculate_conv_output_sizes;
use burn::tensor::ops::ConvOptions;
use burn::tensor::Distribution;
use owt_hybrid::cudnn::{output_dims, ConvDtype, ConvOp, ConvProblem, Math};
use owt_models::{ConvNet, ModelKind, ModelSpec};

use crate::conv_grid_cases::{as_the_backend_sees_it, grid, init, GridNet};

/// The options the backend's op receives for `conv` (burn-nn pads symmetrically through them).
fn options(conv: &burn::nn::conv::Conv2d<Flex>) -> ConvOptions<2> {
    let padding = match conv.padding {
        PaddingConfig2d::Explicit(top, left, bottom, right) => {
            assert_eq!((top, left), (bottom, right), "owt's layers pad symmetrically");
            [top, left]
        }
        PaddingConfig2d::Valid => [0, 0],
        PaddingConfig2d::Same => panic!("owt's layers give their padding"),
    };
    ConvOptions::new(conv.stride, padding, conv.dilation, conv.groups)
}

fn packed(d: [usize; 4]) -> [usize; 4] {
    [d[1] * d[2] * d[3], d[2] * d[3], d[3], 1]
}

#[test]
fn every_conv_layer_maps_to_cudnns_descriptors_with_burns_output_shapes() {
    let device = Default::default();
    let mut checked = 0;
    let models = [
        (ModelKind::AlexNetSmall, None, Some(2)),
        (ModelKind::AlexNetSmall, None, Some(1)),
        (ModelKind::AlexNetOwt, None, None),
        (ModelKind::AlexNet2012, None, None),
        // The VGGs' layers at a 32-pixel input (a layer's arithmetic is the same at any side).
        (ModelKind::Vgg11, Some(32), None),
        (ModelKind::Vgg16Bn, Some(32), None),
    ];
    for (kind, input, towers) in models {
        let spec = ModelSpec { input, towers, ..ModelSpec::new(kind) };
        let arch = spec.architecture().unwrap();
        let model: ConvNet<Flex> = arch.try_init(&device).unwrap();
        let profile = arch.profile().unwrap();
        // Each conv layer's input: the model's, else the output of the layer before it.
        let mut shape = arch.input.to_vec();
        let mut inputs = Vec::new();
        for layer in &profile.layers {
            if layer.name.starts_with("conv") {
                inputs.push(shape.clone());
            }
            shape = layer.output_shape.clone();
        }
        let convs = model.convs();
        assert_eq!(convs.len(), inputs.len(), "{kind:?}: conv layers");
        for (n, (conv, input)) in convs.into_iter().zip(inputs).enumerate() {
            let what = format!("{kind:?} towers {towers:?} conv{}", n + 1);
            let o = options(conv);
            let w: [usize; 4] = conv.weight.val().dims();
            let x_dims = [3, input[0], input[1], input[2]];
            let y = output_dims(x_dims, w, &o).unwrap_or_else(|e| panic!("{what}: {e}"));
            let burn = calculate_conv_output_sizes(&conv.kernel_size, &o.stride, &o.padding, &o.dilation, &x_dims[2..]);
            assert_eq!(y, [3, w[0], burn[0], burn[1]], "{what}: cuDNN's formula against Burn's arithmetic");
            let forward = conv.forward(Tensor::<Flex, 4>::zeros(x_dims, &device)).dims();
            assert_eq!(y, forward, "{what}: against the layer's forward pass");
            for op in [ConvOp::Forward, ConvOp::BackwardData, ConvOp::BackwardFilter] {
                let p =
                    ConvProblem::new(op, ConvDtype::F32, Math::Tf32, (x_dims, packed(x_dims)), w, (y, packed(y)), &o)
                        .unwrap_or_else(|e| panic!("{what} {op:?}: {e}"));
                let int = |v: [usize; 2]| v.map(|x| x as i32);
                assert_eq!(
                    (p.padding, p.stride, p.dilation, p.groups as usize, p.w.map(|x| x as usize)),
                    (int(o.padding), int(o.stride), int(o.dilation), conv.groups, w),
                    "{what} {op:?}"
                );
                assert_eq!(p.y.dims.map(|d| d as usize), y, "{what} {op:?}");
            }
            checked += 1;
        }
    }
    // 5 + 5 + 5 + 5 AlexNet layers, 8 of VGG-11, 13 of VGG-16.
    assert_eq!(checked, 41);
}

#[test]
fn every_convolution_of_the_grid_maps_to_cudnns_descriptors_padded_first_where_asymmetric() {
    let device = Default::default();
    let (mut symmetric, mut padded_first) = (0, 0);
    for case in grid() {
        let (c, o, g) = case.channels;
        let net: GridNet<Flex> = init(&case, &device);
        let x =
            Tensor::<Flex, 4>::random([3, c, case.input[0], case.input[1]], Distribution::Normal(0.0, 1.0), &device);
        let layer = net.conv.forward(x.clone());
        let (input, o_) = as_the_backend_sees_it(&case, x.clone());
        if input.dims() == x.dims() {
            symmetric += 1;
        } else {
            padded_first += 1;
        }
        // The backend's convolution of what it receives is the layer's output.
        let direct = burn::tensor::module::conv2d(
            input.clone(),
            net.conv.weight.val(),
            net.conv.bias.as_ref().map(|b| b.val()),
            o_.clone(),
        );
        assert_eq!(direct.dims(), layer.dims(), "{case:?}");
        let off = (direct - layer.clone()).abs().max().into_scalar();
        let scale = layer.clone().abs().max().into_scalar().max(1e-6);
        assert!(off <= 1e-5 * scale, "{case:?}: the convolution as the backend receives it is off by {off}");
        // cuDNN's formula over those descriptors gives the layer's shape, for all three ops.
        let (x_dims, w) = (input.dims(), [o, c / g, case.kernel[0], case.kernel[1]]);
        let y = output_dims(x_dims, w, &o_).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        assert_eq!(y, layer.dims(), "{case:?}: cuDNN's output side");
        for op in [ConvOp::Forward, ConvOp::BackwardData, ConvOp::BackwardFilter] {
            let p = ConvProblem::new(op, ConvDtype::F32, Math::Tf32, (x_dims, packed(x_dims)), w, (y, packed(y)), &o_)
                .unwrap_or_else(|e| panic!("{case:?} {op:?}: {e}"));
            let int = |v: [usize; 2]| v.map(|x| x as i32);
            assert_eq!(
                (p.padding, p.stride, p.dilation, p.groups as usize),
                (int(o_.padding), int(case.stride), int(case.dilation), g),
                "{case:?} {op:?}"
            );
            assert_eq!(p.x.dims.map(|d| d as usize), x_dims, "{case:?} {op:?}");
        }
    }
    // Both ways are walked: Explicit (1, 2, 1, 2), Valid and even Same totals in the
    // descriptor; Explicit (0, 1, 2, 3) and odd Same totals padded first.
    assert!(symmetric >= 40 && padded_first >= 40, "{symmetric} symmetric, {padded_first} padded first");
}
