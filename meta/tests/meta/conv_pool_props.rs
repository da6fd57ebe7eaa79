//! Property tests: over random convolution and pooling hyperparameters (kernel, stride,
//! padding, dilation, groups, output padding, ceil mode), Meta's output shapes equal Flex's.

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::tensor::backend::Backend;
use burn::tensor::module::{avg_pool2d, conv2d, conv_transpose2d, max_pool2d};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::Tensor;
use owt_meta::{Meta, MetaDevice};
use proptest::prelude::*;

fn zeros<B: Backend, const D: usize>(shape: [usize; D], d: &B::Device) -> Tensor<B, D> {
    Tensor::zeros(shape, d)
}

fn conv_shape<B: Backend>(x: [usize; 4], w: [usize; 4], o: ConvOptions<2>, d: &B::Device) -> Vec<usize> {
    conv2d(zeros::<B, 4>(x, d), zeros::<B, 4>(w, d), None, o).shape().to_vec()
}

fn conv_t_shape<B: Backend>(x: [usize; 4], w: [usize; 4], o: ConvTransposeOptions<2>, d: &B::Device) -> Vec<usize> {
    conv_transpose2d(zeros::<B, 4>(x, d), zeros::<B, 4>(w, d), None, o).shape().to_vec()
}

type Pool = ([usize; 2], [usize; 2], [usize; 2], [usize; 2], bool);

fn pool_shapes<B: Backend>(x: [usize; 4], (k, s, p, dil, ceil): Pool, d: &B::Device) -> (Vec<usize>, Vec<usize>) {
    let max = max_pool2d(zeros::<B, 4>(x, d), k, s, p, dil, ceil).shape().to_vec();
    let avg = avg_pool2d(zeros::<B, 4>(x, d), k, s, p, true, ceil).shape().to_vec();
    (max, avg)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn conv2d_shapes_match(
        n in 1usize..3, cin_g in 1usize..3, cout_g in 1usize..3, groups in 1usize..4,
        h in 1usize..13, w in 1usize..13, kh in 1usize..5, kw in 1usize..5,
        stride in (1usize..4, 1usize..4), pad in (0usize..3, 0usize..3), dil in (1usize..3, 1usize..3),
    ) {
        prop_assume!(h + 2 * pad.0 > dil.0 * (kh - 1) && w + 2 * pad.1 > dil.1 * (kw - 1));
        let x = [n, cin_g * groups, h, w];
        let wt = [cout_g * groups, cin_g, kh, kw];
        let o = ConvOptions::new([stride.0, stride.1], [pad.0, pad.1], [dil.0, dil.1], groups);
        prop_assert_eq!(conv_shape::<Meta>(x, wt, o.clone(), &MetaDevice::new()), conv_shape::<Flex>(x, wt, o, &FlexDevice));
    }

    #[test]
    fn conv_transpose2d_shapes_match(
        n in 1usize..3, cin_g in 1usize..3, cout_g in 1usize..3, groups in 1usize..3,
        h in 1usize..8, w in 1usize..8, kh in 1usize..4, kw in 1usize..4,
        stride in (1usize..4, 1usize..4), pad in (0usize..2, 0usize..2), dil in (1usize..3, 1usize..3),
        pad_out in (0usize..3, 0usize..3),
    ) {
        prop_assume!(pad_out.0 < stride.0.max(dil.0) && pad_out.1 < stride.1.max(dil.1));
        prop_assume!((h - 1) * stride.0 + dil.0 * (kh - 1) + 1 + pad_out.0 > 2 * pad.0);
        prop_assume!((w - 1) * stride.1 + dil.1 * (kw - 1) + 1 + pad_out.1 > 2 * pad.1);
        let x = [n, cin_g * groups, h, w];
        let wt = [cin_g * groups, cout_g, kh, kw];
        let o = ConvTransposeOptions::new([stride.0, stride.1], [pad.0, pad.1], [pad_out.0, pad_out.1], [dil.0, dil.1], groups);
        prop_assert_eq!(conv_t_shape::<Meta>(x, wt, o.clone(), &MetaDevice::new()), conv_t_shape::<Flex>(x, wt, o, &FlexDevice));
    }

    #[test]
    fn pool2d_shapes_match(
        h in 1usize..14, w in 1usize..14, kh in 1usize..5, kw in 1usize..5,
        stride in (1usize..4, 1usize..4), dil in (1usize..3, 1usize..3), ceil in any::<bool>(),
        pad_frac in (0usize..3, 0usize..3),
    ) {
        // Padding at most half the kernel, as PyTorch and Burn require.
        let pad = [pad_frac.0.min(kh / 2), pad_frac.1.min(kw / 2)];
        prop_assume!(h + 2 * pad[0] >= dil.0 * (kh - 1) + 1 && w + 2 * pad[1] >= dil.1 * (kw - 1) + 1);
        let x = [2, 3, h, w];
        let p: Pool = ([kh, kw], [stride.0, stride.1], pad, [dil.0, dil.1], ceil);
        let meta = pool_shapes::<Meta>(x, p, &MetaDevice::new());
        let flex = pool_shapes::<Flex>(x, p, &FlexDevice);
        prop_assert_eq!(meta, flex);
    }
}
