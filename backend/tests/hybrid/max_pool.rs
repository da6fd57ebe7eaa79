//! owt's max pooling ([`owt_hybrid::max_pool`]) against Flex's own: the same values, bit for
//! bit (the same comparisons in the same order), on every pooling of the three AlexNets, on
//! random shapes, and with NaN and signed zeros among the inputs.

use burn::backend::Flex;
use burn::tensor::ops::ModuleOps;
use burn::tensor::{DType, Tensor, TensorData, TensorPrimitive};
use owt_hybrid::max_pool;
use proptest::prelude::*;

/// Values in [-1, 1) from a 64-bit LCG seeded by `seed`, a few of them repeated exactly so
/// windows hold ties.
fn values(shape: [usize; 4], seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let n: usize = shape.iter().product();
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            if (state >> 7) % 5 == 0 {
                0.5
            } else {
                v
            }
        })
        .collect()
}

fn tensor(data: Vec<f64>, shape: [usize; 4], dtype: DType) -> Tensor<Flex, 4> {
    Tensor::<Flex, 4>::from_data(TensorData::new(data, shape), (&Default::default(), DType::F64)).cast(dtype)
}

/// Whether owt's pooling of `x` equals Flex's bit for bit (NaN where Flex has NaN).
fn same_as_flex(x: Tensor<Flex, 4>, kernel: [usize; 2], stride: [usize; 2]) -> Result<(), String> {
    let ours = max_pool::max_pool2d(x.clone(), kernel, stride);
    let theirs = Flex::max_pool2d(x.into_primitive().tensor(), kernel, stride, [0, 0], [1, 1], false);
    let theirs = Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(theirs));
    if ours.dims() != theirs.dims() {
        return Err(format!("shape {:?} against {:?}", ours.dims(), theirs.dims()));
    }
    let bits = |t: Tensor<Flex, 4>| -> Vec<u64> {
        t.cast(DType::F64).into_data().to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect()
    };
    let (a, b) = (bits(ours), bits(theirs));
    match a.iter().zip(&b).position(|(x, y)| x != y) {
        None => Ok(()),
        Some(i) => Err(format!("element {i}: {} against {}", f64::from_bits(a[i]), f64::from_bits(b[i]))),
    }
}

#[test]
fn every_alexnet_pooling_is_flexs_bit_for_bit() {
    // (input [n, c, h, w]): 3x3 windows every 2, as in all three nets.
    let poolings = [
        ("small pool1", [2, 32, 28, 28]),
        ("small pool2", [2, 64, 13, 13]),
        ("small pool5", [2, 64, 6, 6]),
        ("owt and 2012 pool1", [2, 64, 55, 55]),
        ("owt and 2012 pool2", [2, 192, 27, 27]),
        ("owt and 2012 pool5", [2, 256, 13, 13]),
    ];
    for (name, shape) in poolings {
        for dtype in [DType::F32, DType::F64] {
            let x = tensor(values(shape, 3), shape, dtype);
            same_as_flex(x, [3, 3], [2, 2]).unwrap_or_else(|e| panic!("{name} {dtype:?}: {e}"));
        }
    }
}

#[test]
fn nan_and_signed_zeros_pool_as_flexs() {
    let shape = [1, 2, 7, 7];
    let mut data = values(shape, 9);
    for (i, v) in [(0, f64::NAN), (3, f64::NAN), (17, -0.0), (18, 0.0), (19, -0.0), (60, f64::NAN), (61, 2.0)] {
        data[i] = v;
    }
    for i in 70..98 {
        data[i] = if i % 2 == 0 { -0.0 } else { 0.0 };
    }
    for dtype in [DType::F32, DType::F64] {
        for (kernel, stride) in [([3, 3], [2, 2]), ([2, 2], [1, 1]), ([3, 2], [1, 2])] {
            same_as_flex(tensor(data.clone(), shape, dtype), kernel, stride)
                .unwrap_or_else(|e| panic!("{dtype:?} kernel {kernel:?} stride {stride:?}: {e}"));
        }
    }
}

/// Inference through the wrapper takes owt's pooling on Flex: one rank of `Hybrid<Flex>`
/// pools as owt's formulation does.
#[test]
fn the_wrapper_pools_by_owts_formulation_on_flex() {
    use owt_hybrid::{Hybrid, MeshDevice};
    assert_eq!(max_pool::formulation_for::<Flex>(), owt_hybrid::conv_grad::Formulation::Owt);
    assert_eq!(
        max_pool::formulation_for::<burn::backend::Autodiff<owt_hybrid::Hybrid<Flex>>>(),
        owt_hybrid::conv_grad::Formulation::Owt
    );
    assert_eq!(max_pool::formulation_for::<owt_meta::Meta>(), owt_hybrid::conv_grad::Formulation::Backend);
    let shape = [2, 3, 9, 9];
    let x = tensor(values(shape, 5), shape, DType::F32);
    let mesh = MeshDevice::virtual_ranks(Default::default(), 1);
    let hx = Tensor::<Hybrid<Flex>, 4>::from_data(x.clone().into_data(), &mesh);
    let pooled = burn::tensor::module::max_pool2d(hx, [3, 3], [2, 2], [0, 0], [1, 1], false);
    let want = max_pool::max_pool2d(x, [3, 3], [2, 2]);
    assert_eq!(pooled.into_data().to_vec::<f32>().unwrap(), want.into_data().to_vec::<f32>().unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Any window, stride and plane size (odd and even rows, windows wider than the stride and
    /// narrower): Flex's values bit for bit.
    #[test]
    fn any_pooling_is_flexs_bit_for_bit(
        n in 1usize..=3, c in 1usize..=3, kh in 1usize..=4, kw in 1usize..=4, sh in 1usize..=3, sw in 1usize..=3,
        eh in 0usize..=9, ew in 0usize..=9, seed in 0u64..1000,
    ) {
        let shape = [n, c, kh + eh, kw + ew];
        let x = tensor(values(shape, seed), shape, DType::F32);
        prop_assert!(max_pool::applies(shape, [kh, kw], [0, 0], [1, 1], false));
        if let Err(e) = same_as_flex(x, [kh, kw], [sh, sw]) {
            prop_assert!(false, "{shape:?} kernel [{kh}, {kw}] stride [{sh}, {sw}]: {e}");
        }
    }
}
