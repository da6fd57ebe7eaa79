//! Every conv layer of the three AlexNets (AlexNetSmall with one and two towers) and the VGGs,
//! as built by owt-models, described for cuDNN (`owt_hybrid::cudnn::ConvProblem`): the
//! descriptor's padding, stride, dilation, groups and filter are the layer's own, and cuDNN's
//! output side (its documented formula) is Burn's own output-shape arithmetic
//! (`calculate_conv_output_sizes`) and the shape the layer's forward pass gives on Flex. The
//! input gradient and the weight gradient are described over the same tensors.

use burn::backend::Flex;
use burn::nn::PaddingConfig2d;
use burn::prelude::*;
use burn::tensor::ops::conv::calculate_conv_output_sizes;
use burn::tensor::ops::ConvOptions;
use owt_hybrid::cudnn::{output_dims, ConvDtype, ConvOp, ConvProblem, Math};
use owt_models::{ConvNet, ModelKind, ModelSpec};

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
