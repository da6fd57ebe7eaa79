//! owt's convolution gradients ([`owt_hybrid::conv_grad`]) against burn-backend's generic
//! formulations (Flex 0.21 takes all three from them, so Flex's `ModuleOps` is the oracle): every
//! conv layer of the three AlexNets, in f32 (within 1e-5 of the largest magnitude) and f64
//! (1e-12), and properties over kernel size, stride, padding, dilation, groups and odd sizes.

use burn::backend::Flex;
use burn::tensor::ops::{ConvOptions, FloatTensor, ModuleOps};
use burn::tensor::{DType, Tensor, TensorData, TensorPrimitive};
use owt_hybrid::conv_grad;
use proptest::prelude::*;

/// A convolution: input `[n, c, h, w]`, `o` output channels, square kernel `k`, stride,
/// padding, dilation, groups.
#[derive(Debug, Clone, Copy)]
struct Case {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    o: usize,
    k: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    groups: usize,
}

impl Case {
    fn out(&self, side: usize) -> usize {
        (side + 2 * self.padding - self.dilation * (self.k - 1) - 1) / self.stride + 1
    }
    fn options(&self) -> ConvOptions<2> {
        let (s, p, d) = (self.stride, self.padding, self.dilation);
        ConvOptions::new([s, s], [p, p], [d, d], self.groups)
    }
}

/// Values in [-1, 1) from a 64-bit LCG seeded by `seed`, as a `dtype` tensor.
fn values(shape: [usize; 4], seed: u64, dtype: DType) -> FloatTensor<Flex> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect();
    let t = Tensor::<Flex, 4>::from_data(TensorData::new(data, shape), (&Default::default(), DType::F64));
    t.cast(dtype).into_primitive().tensor()
}

fn host<const D: usize>(t: FloatTensor<Flex>) -> Vec<f64> {
    Tensor::<Flex, D>::from_primitive(TensorPrimitive::Float(t)).cast(DType::F64).into_data().to_vec().unwrap()
}

/// The largest difference relative to the largest magnitude of `reference`.
fn gap(ours: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(ours.len(), reference.len());
    let scale = reference.iter().fold(0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
    ours.iter().zip(reference).fold(0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

/// The three gradients of `case` by owt's formulation and by the generic one: their gaps.
fn gaps(case: Case, dtype: DType, seed: u64) -> [f64; 3] {
    let (ho, wo) = (case.out(case.h), case.out(case.w));
    let x = values([case.n, case.c, case.h, case.w], seed, dtype);
    let w = values([case.o, case.c / case.groups, case.k, case.k], seed + 1, dtype);
    let b = values([1, 1, 1, case.o], seed + 2, dtype);
    let b = Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(b)).reshape([case.o]).into_primitive().tensor();
    let gy = values([case.n, case.o, ho, wo], seed + 3, dtype);
    let opts = case.options();
    let ours_w = conv_grad::conv2d_weight_backward::<Flex>(x.clone(), w.clone(), gy.clone(), opts.clone());
    let theirs_w = Flex::conv2d_weight_backward(x.clone(), w.clone(), gy.clone(), opts.clone());
    let ours_x = conv_grad::conv2d_x_backward::<Flex>(x.clone(), w.clone(), gy.clone(), opts.clone());
    let theirs_x = Flex::conv2d_x_backward(x.clone(), w.clone(), gy.clone(), opts);
    let ours_b = conv_grad::conv2d_bias_backward::<Flex>(gy.clone());
    let theirs_b = Flex::conv2d_bias_backward(x, b, gy);
    [
        gap(&host::<4>(ours_w), &host::<4>(theirs_w)),
        gap(&host::<4>(ours_x), &host::<4>(theirs_x)),
        gap(&host::<1>(ours_b), &host::<1>(theirs_b)),
    ]
}

/// Every conv layer of AlexNetSmall (both tower counts), AlexNetOwt and the 2012 AlexNet, at
/// batch 2 (the 2012 and owt nets at their full input sides).
fn alexnet_layers() -> Vec<(&'static str, Case)> {
    let conv = |n, c, side, o, k, stride, padding, groups| Case {
        n,
        c,
        h: side,
        w: side,
        o,
        k,
        stride,
        padding,
        dilation: 1,
        groups,
    };
    vec![
        ("small conv1", conv(2, 1, 28, 32, 5, 1, 2, 1)),
        ("small conv2 (2 towers)", conv(2, 32, 13, 64, 5, 1, 2, 2)),
        ("small conv2 (1 tower)", conv(2, 32, 13, 64, 5, 1, 2, 1)),
        ("small conv3", conv(2, 64, 6, 96, 3, 1, 1, 1)),
        ("small conv4 (2 towers)", conv(2, 96, 6, 96, 3, 1, 1, 2)),
        ("small conv5 (2 towers)", conv(2, 96, 6, 64, 3, 1, 1, 2)),
        ("owt conv1", conv(2, 3, 224, 64, 11, 4, 2, 1)),
        ("owt conv2", conv(2, 64, 27, 192, 5, 1, 2, 1)),
        ("owt conv3", conv(2, 192, 13, 384, 3, 1, 1, 1)),
        ("owt conv4", conv(2, 384, 13, 256, 3, 1, 1, 1)),
        ("owt conv5", conv(2, 256, 13, 256, 3, 1, 1, 1)),
        ("2012 conv1", conv(2, 3, 227, 96, 11, 4, 0, 1)),
        ("2012 conv2", conv(2, 96, 27, 256, 5, 1, 2, 2)),
        ("2012 conv3", conv(2, 256, 13, 384, 3, 1, 1, 1)),
        ("2012 conv4", conv(2, 384, 13, 384, 3, 1, 1, 2)),
        ("2012 conv5", conv(2, 384, 13, 256, 3, 1, 1, 2)),
    ]
}

/// Every distinct conv layer of the VGGs (3x3, padding 1, stride 1; VGG-16's channel pairs
/// hold VGG-11's and VGG-13's), at batch 2 on 32x32 images (the side a VGG for Fashion-MNIST
/// takes; a layer's arithmetic is the same at any side).
fn vgg_layers() -> Vec<(String, Case)> {
    let pairs = [
        (3, 64, 32),
        (64, 64, 32),
        (64, 128, 16),
        (128, 128, 16),
        (128, 256, 8),
        (256, 256, 8),
        (256, 512, 4),
        (512, 512, 2),
    ];
    pairs
        .into_iter()
        .map(|(c, o, side)| {
            let case = Case { n: 2, c, h: side, w: side, o, k: 3, stride: 1, padding: 1, dilation: 1, groups: 1 };
            (format!("vgg {c}->{o} at {side}"), case)
        })
        .collect()
}

/// Every conv layer of the three AlexNets and the VGGs.
fn every_layer() -> impl Iterator<Item = (String, Case)> {
    alexnet_layers().into_iter().map(|(n, c)| (n.to_string(), c)).chain(vgg_layers())
}

#[test]
fn every_alexnet_and_vgg_conv_layer_has_the_generic_gradients() {
    for (name, case) in every_layer() {
        for (dtype, bound) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            let [w, x, b] = gaps(case, dtype, 7);
            assert!(w <= bound && x <= bound && b <= bound, "{name} {dtype:?}: weight {w:e}, input {x:e}, bias {b:e}");
        }
    }
}

/// owt's weight gradient of `case` laid out by `method`, against the generic one: its gap.
fn weight_gap(case: Case, method: conv_grad::Method, dtype: DType, seed: u64) -> f64 {
    let (ho, wo) = (case.out(case.h), case.out(case.w));
    let x = values([case.n, case.c, case.h, case.w], seed, dtype);
    let w = values([case.o, case.c / case.groups, case.k, case.k], seed + 1, dtype);
    let gy = values([case.n, case.o, ho, wo], seed + 3, dtype);
    let geo = conv_grad::Geometry::of(
        [case.n, case.c, case.h, case.w],
        [case.o, case.c / case.groups, case.k, case.k],
        &case.options(),
    )
    .expect("a stride-1 case with padding within the kernel's reach");
    let tensor = |t: FloatTensor<Flex>| Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(t));
    let ours = conv_grad::weight_grad::<Flex>(tensor(x.clone()), tensor(gy.clone()), &geo, method);
    let theirs = Flex::conv2d_weight_backward(x, w, gy, case.options());
    gap(&host::<4>(ours.into_primitive().tensor()), &host::<4>(theirs))
}

const METHODS: [conv_grad::Method; 2] = [conv_grad::Method::PerImage, conv_grad::Method::ChannelMajor];

/// Both layouts of the weight gradient on every stride-1 conv layer of the three AlexNets
/// (all but the big nets' conv1, whose stride is 4 and whose gradient stays the backend's).
#[test]
fn every_stride_one_alexnet_layer_has_the_generic_weight_gradient_by_either_layout() {
    let mut checked = 0;
    for (name, case) in alexnet_layers() {
        let dims = ([case.n, case.c, case.h, case.w], [case.o, case.c / case.groups, case.k, case.k]);
        if conv_grad::Geometry::of(dims.0, dims.1, &case.options()).is_none() {
            assert_eq!(case.stride, 4, "{name}: only the stride-4 layers are left to the backend");
            continue;
        }
        for method in METHODS {
            for (dtype, bound) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
                let g = weight_gap(case, method, dtype, 11);
                assert!(g <= bound, "{name} {method:?} {dtype:?}: weight {g:e}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 14);
}

/// The layout each AlexNetSmall layer takes at batch 64, as measured (conv_grad::weight's doc):
/// per-image at conv1 and conv2, channel-major at conv3-5.
#[test]
fn alexnet_small_layers_take_the_measured_weight_layouts() {
    use conv_grad::Method::*;
    let small = [
        ([64, 1, 28, 28], [32, 1, 5, 5], 2, 1, PerImage),
        ([64, 32, 13, 13], [64, 16, 5, 5], 2, 2, PerImage),
        ([64, 64, 6, 6], [96, 64, 3, 3], 1, 1, ChannelMajor),
        ([64, 96, 6, 6], [96, 48, 3, 3], 1, 2, ChannelMajor),
        ([64, 96, 6, 6], [64, 48, 3, 3], 1, 2, ChannelMajor),
    ];
    for (x, w, p, g, want) in small {
        let options = ConvOptions::new([1, 1], [p, p], [1, 1], g);
        assert_eq!(conv_grad::weight_method(x, w, &options), Some(want), "x {x:?} w {w:?}");
    }
}

/// owt's unfolded GEMM ([`conv_grad::unfolded`]) against the generic weight gradient: its gap.
fn unfolded_gap(case: Case, dtype: DType, seed: u64) -> f64 {
    let (ho, wo) = (case.out(case.h), case.out(case.w));
    let x = values([case.n, case.c, case.h, case.w], seed, dtype);
    let w = values([case.o, case.c / case.groups, case.k, case.k], seed + 1, dtype);
    let gy = values([case.n, case.o, ho, wo], seed + 3, dtype);
    let opts = case.options();
    let geo = conv_grad::Unfolded::of(
        [case.n, case.c, case.h, case.w],
        [case.o, case.c / case.groups, case.k, case.k],
        &opts,
    )
    .expect("a convolution with output");
    let t = |p: FloatTensor<Flex>| Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(p));
    let ours = conv_grad::unfolded::weight_grad::<Flex>(t(x.clone()), t(gy.clone()), &geo).into_primitive().tensor();
    let theirs = Flex::conv2d_weight_backward(x, w, gy, opts);
    gap(&host::<4>(ours), &host::<4>(theirs))
}

/// The unfolded GEMM on every conv layer of the three AlexNets and the VGGs (it takes the
/// strided ones on CUDA without cuDNN; its arithmetic holds for any stride).
#[test]
fn the_unfolded_gemm_has_the_generic_weight_gradient_on_every_alexnet_and_vgg_layer() {
    for (name, case) in every_layer() {
        for (dtype, bound) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            let g = unfolded_gap(case, dtype, 9);
            assert!(g <= bound, "{name} {dtype:?}: weight {g:e}");
        }
    }
}

/// The unfolded GEMM takes a batch a few images at a time: a chunk boundary inside the batch
/// (AlexNetOwt's conv1 at batch 17 holds 15 images a chunk) changes nothing but rounding.
#[test]
fn the_unfolded_gemm_sums_its_chunks_to_the_generic_gradient() {
    let case = Case { n: 17, c: 3, h: 224, w: 224, o: 8, k: 11, stride: 4, padding: 2, dilation: 1, groups: 1 };
    let geo = conv_grad::Unfolded::of([17, 3, 224, 224], [8, 3, 11, 11], &case.options()).unwrap();
    assert!(geo.images_per_chunk() < 17, "{} images a chunk", geo.images_per_chunk());
    let g = unfolded_gap(case, DType::F64, 3);
    assert!(g <= 1e-12, "weight {g:e}");
}

/// Stride-1 convolutions whose padding stays within the dilated kernel's reach: the cases the
/// weight gradient's layouts take.
fn stride_one_cases() -> impl Strategy<Value = Case> {
    cases()
        .prop_map(|c| Case { stride: 1, padding: c.padding.min(c.dilation * (c.k - 1)), ..c })
        .prop_filter("at least one output position", |c| {
            c.h + 2 * c.padding > c.dilation * (c.k - 1) && c.w + 2 * c.padding > c.dilation * (c.k - 1)
        })
}

fn cases() -> impl Strategy<Value = Case> {
    (
        1usize..=3,
        1usize..=3,
        1usize..=3,
        1usize..=3,
        1usize..=5,
        1usize..=3,
        0usize..=3,
        1usize..=2,
        0usize..=7,
        0usize..=7,
    )
        .prop_map(|(n, groups, cg, og, k, stride, padding, dilation, eh, ew)| {
            let reach = dilation * (k - 1) + 1;
            // The padded input holds at least one window.
            let side = |extra: usize| (reach + extra).saturating_sub(2 * padding).max(1);
            let (h, w) = (side(eh), side(ew));
            Case { n, c: groups * cg, h, w, o: groups * og, k, stride, padding, dilation, groups }
        })
        .prop_filter("at least one output position", |c| {
            c.h + 2 * c.padding > c.dilation * (c.k - 1) && c.w + 2 * c.padding > c.dilation * (c.k - 1)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Any kernel, stride, padding (wider than the kernel's reach included), dilation, groups
    /// and odd sizes: the f64 gradients agree within 1e-12.
    #[test]
    fn any_convolution_has_the_generic_gradients(case in cases(), seed in 0u64..1000) {
        let [w, x, b] = gaps(case, DType::F64, seed);
        prop_assert!(w <= 1e-12 && x <= 1e-12 && b <= 1e-12, "{case:?}: weight {w:e}, input {x:e}, bias {b:e}");
    }

    /// The unfolded GEMM on any convolution (kernel, stride, padding, dilation, groups, odd
    /// sizes): f64 within 1e-12.
    #[test]
    fn any_convolution_has_the_generic_weight_gradient_by_the_unfolded_gemm(case in cases(), seed in 0u64..1000) {
        let g = unfolded_gap(case, DType::F64, seed);
        prop_assert!(g <= 1e-12, "{case:?}: weight {g:e}");
    }

    /// Both layouts of the weight gradient on any stride-1 convolution they take (kernel,
    /// padding up to the kernel's reach, dilation, groups, odd sizes): f64 within 1e-12.
    #[test]
    fn any_stride_one_convolution_has_the_generic_weight_gradient_by_either_layout(case in stride_one_cases(), seed in 0u64..1000) {
        for method in METHODS {
            let g = weight_gap(case, method, DType::F64, seed);
            prop_assert!(g <= 1e-12, "{case:?} {method:?}: weight {g:e}");
        }
    }
}

/// The wrapper takes each gradient from the formulation chosen for its inner backend: on one
/// rank of `Hybrid<Flex>`, autodiff's conv gradients are owt's three, bit for bit.
#[test]
fn the_wrapper_takes_the_gradients_chosen_for_its_inner_backend() {
    use burn::backend::Autodiff;
    use conv_grad::{Choice, Formulation::*};
    use owt_hybrid::{Hybrid, MeshDevice};
    assert_eq!(Choice::for_backend::<Flex>(), Choice { input: Owt, weight: Owt, bias: Owt });
    assert_eq!(Choice::for_backend::<owt_hybrid::Hybrid<Flex>>(), Choice { input: Owt, weight: Owt, bias: Owt });
    assert_eq!(Choice::for_backend::<owt_meta::Meta>(), Choice { input: Backend, weight: Backend, bias: Backend });
    type AH = Autodiff<Hybrid<Flex>>;
    let case = Case { n: 2, c: 4, h: 9, w: 9, o: 6, k: 3, stride: 1, padding: 1, dilation: 1, groups: 2 };
    let data = |t: FloatTensor<Flex>| Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(t)).into_data();
    let (x, w) = (values([2, 4, 9, 9], 1, DType::F32), values([6, 2, 3, 3], 2, DType::F32));
    let b = Tensor::<Flex, 1>::from_data(TensorData::new(vec![0.5f32; 6], [6]), &Default::default());
    let gy = values([2, 6, 9, 9], 3, DType::F32);
    let mesh = MeshDevice::virtual_ranks(Default::default(), 1);
    let hx = Tensor::<AH, 4>::from_data(data(x.clone()), &mesh).require_grad();
    let hw = Tensor::<AH, 4>::from_data(data(w.clone()), &mesh).require_grad();
    let hb = Tensor::<AH, 1>::from_data(b.clone().into_data(), &mesh).require_grad();
    let y = burn::tensor::module::conv2d(hx.clone(), hw.clone(), Some(hb.clone()), case.options());
    let grads = (y * Tensor::<AH, 4>::from_data(data(gy.clone()), &mesh)).sum().backward();
    let got = |t: Tensor<Flex, 4>| t.into_data().to_vec::<f32>().unwrap();
    let (gx, gw) = (hx.grad(&grads).unwrap(), hw.grad(&grads).unwrap());
    let gb = hb.grad(&grads).unwrap();
    let want_x = conv_grad::conv2d_x_backward::<Flex>(x.clone(), w.clone(), gy.clone(), case.options());
    let want_w = conv_grad::conv2d_weight_backward::<Flex>(x, w, gy.clone(), case.options());
    let want_b = conv_grad::conv2d_bias_backward::<Flex>(gy);
    let inner = |t: Tensor<Hybrid<Flex>, 4>| Tensor::<Flex, 4>::from_data(t.into_data(), &Default::default());
    assert_eq!(got(inner(gx)), got(Tensor::from_primitive(TensorPrimitive::Float(want_x))));
    assert_eq!(got(inner(gw)), got(Tensor::from_primitive(TensorPrimitive::Float(want_w))));
    let want_b: Vec<f32> =
        Tensor::<Flex, 1>::from_primitive(TensorPrimitive::Float(want_b)).into_data().to_vec().unwrap();
    assert_eq!(gb.into_data().to_vec::<f32>().unwrap(), want_b);
}

/// Ranks of a Flex mesh run their pieces side by side (owt-hybrid's dispatch): on 4 virtual
/// ranks, a batch-sharded convolution's output, input gradient and weight gradient are, bit for
/// bit, the sums and pieces of each quarter of the batch computed alone on Flex, one after
/// another.
#[test]
fn ranks_running_side_by_side_compute_each_piece_as_alone() {
    use burn::backend::Autodiff;
    use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
    type AH = Autodiff<Hybrid<Flex>>;
    let case = Case { n: 8, c: 4, h: 9, w: 9, o: 6, k: 3, stride: 1, padding: 1, dilation: 1, groups: 2 };
    let data = |t: FloatTensor<Flex>| Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(t));
    let (x, w) = (data(values([8, 4, 9, 9], 21, DType::F32)), data(values([6, 2, 3, 3], 22, DType::F32)));
    let gy = data(values([8, 6, 9, 9], 23, DType::F32));
    let mesh = MeshDevice::virtual_ranks(Default::default(), 4);
    let hx = Tensor::<AH, 4>::from_data(x.clone().into_data(), &mesh).distribute(Placement::Shard(0)).require_grad();
    let hw = Tensor::<AH, 4>::from_data(w.clone().into_data(), &mesh).require_grad();
    let hg = Tensor::<AH, 4>::from_data(gy.clone().into_data(), &mesh).distribute(Placement::Shard(0));
    let y = burn::tensor::module::conv2d(hx.clone(), hw.clone(), None, case.options());
    let grads = (y.clone() * hg).sum().backward();
    let bits =
        |t: Tensor<Flex, 4>| t.into_data().to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let inner = |t: Tensor<Hybrid<Flex>, 4>| Tensor::<Flex, 4>::from_data(t.into_data(), &Default::default());
    let prim = |t: Tensor<Flex, 4>| t.into_primitive().tensor();
    let (mut want_y, mut want_x, mut want_w) = (vec![], vec![], None::<Tensor<Flex, 4>>);
    for r in 0..4 {
        let (xr, gr) = (x.clone().slice([2 * r..2 * r + 2]), gy.clone().slice([2 * r..2 * r + 2]));
        want_y.push(data(Flex::conv2d(prim(xr.clone()), prim(w.clone()), None, case.options())));
        want_x.push(data(conv_grad::conv2d_x_backward::<Flex>(
            prim(xr.clone()),
            prim(w.clone()),
            prim(gr.clone()),
            case.options(),
        )));
        let wr = data(conv_grad::conv2d_weight_backward::<Flex>(prim(xr), prim(w.clone()), prim(gr), case.options()));
        want_w = Some(match want_w {
            None => wr,
            Some(sum) => sum + wr,
        });
    }
    assert_eq!(bits(inner(y.inner())), bits(Tensor::cat(want_y, 0)));
    assert_eq!(bits(inner(hx.grad(&grads).unwrap())), bits(Tensor::cat(want_x, 0)));
    let gw = inner(hw.grad(&grads).unwrap());
    let want_w = want_w.unwrap();
    let gap = (gw - want_w.clone()).abs().max().into_scalar() / want_w.abs().max().into_scalar();
    // The summands are each rank's own; only the order of the all-reduce's additions may differ.
    assert!(gap <= 1e-6, "weight gradient {gap:e}");
}
