//! Dropout whose mask is a pure function of (seed, step, layer, global element index): a
//! counter-based generator instead of a stateful one. Any part of a batch can compute its own
//! part of the mask without seeing the rest, so a batch split over devices (rows) or a layer
//! split over devices (columns) draws exactly the mask one device would, and nothing has to be
//! drawn in one place and sent to the others.
//!
//! The generator is integer arithmetic on the backend's tensors: the global row index is
//! hashed with the first key word, mixed with the column index, hashed again with the second
//! key word (Wellons' `lowbias32` each time, on 32-bit values), and the top 24 bits are compared
//! with the keep probability. Its work follows the input's layout: the row and column
//! indices are small whole vectors, widened to the input's shape through a tensor that has
//! the input's own layout, so a backend that splits the input computes only its part.
//!
//! That formulation takes some thirty tensor ops (integer hashing does not fuse in Burn 0.21);
//! a backend with a kernel of its own for the same generator ([`register_dropout_kernel`])
//! draws and applies the mask in one pass, to the same numbers.
//!
//! [`register_dropout_kernel`]: crate::register_dropout_kernel

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use burn::prelude::*;
use burn::tensor::{DType, ElementConversion};

use crate::dropout_kernel::{dropout_kernel, DropoutMask};

/// Which masks a forward pass draws: the run's seed, the training step, and which row of the
/// step's batch the features start at (nonzero when a trainer runs the FC layers on part of a
/// batch, so every image keeps the mask it has in the whole batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DropoutKey {
    /// The seed of the run (or of its epoch).
    pub seed: u64,
    /// The step within the seed's run.
    pub step: u64,
    /// The global index of the first row of the features this pass sees.
    pub first_row: usize,
}

impl DropoutKey {
    /// The key of `step` under `seed`, for a pass over a whole batch.
    pub fn new(seed: u64, step: u64) -> Self {
        Self { seed, step, first_row: 0 }
    }

    /// The same key for features starting at row `first_row` of the batch.
    pub fn from_row(self, first_row: usize) -> Self {
        Self { first_row, ..self }
    }

    /// The two 32-bit words that key `layer`'s mask (splitmix64 over seed, step and layer).
    pub fn words(&self, layer: &str) -> [u32; 2] {
        let layer = layer.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x1000_0000_01b3));
        let mixed = splitmix64(splitmix64(splitmix64(self.seed) ^ self.step) ^ layer);
        [(mixed >> 32) as u32, mixed as u32]
    }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The mask generator on the host, element by element: what [`CounterDropout`] computes on a
/// backend, kept as the reference its tests compare with.
pub fn keeps_element(words: [u32; 2], row: u32, col: u32, prob: f64) -> bool {
    let h = lowbias32(lowbias32(lowbias32(row ^ words[0]) ^ col) ^ words[1]);
    (h >> 8) < keep_threshold(prob)
}

fn lowbias32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// Elements whose 24-bit draw is below this are kept.
fn keep_threshold(prob: f64) -> u32 {
    ((1.0 - prob) * (1u32 << 24) as f64).round() as u32
}

/// Panics unless rows `first..first + rows` and `cols` columns are numbered in 32 bits.
fn check_32_bits(first: usize, rows: usize, cols: usize) {
    let (first, rows, cols) = (first as u64, rows as u64, cols as u64);
    assert!(
        first + rows <= u32::MAX as u64 + 1 && cols <= u32::MAX as u64 + 1,
        "dropout indices past 32 bits: rows {first}..{} x {cols} features",
        first + rows
    );
}

/// The 32-bit pattern `v` as the backend's int element (negative above `i32::MAX`).
fn bits<B: Backend>(v: u32) -> B::IntElem {
    (v as i32).elem()
}

/// `lowbias32` on a tensor of 32-bit integers (shifts made logical by masking, products
/// wrapping: the same bits on every backend whose int tensors are 32-bit).
fn lowbias32_tensor<B: Backend, const D: usize>(x: Tensor<B, D, Int>) -> Tensor<B, D, Int> {
    let shr = |x: Tensor<B, D, Int>, s: u32| {
        x.bitwise_right_shift_scalar(bits::<B>(s)).bitwise_and_scalar(bits::<B>((1u32 << (32 - s)) - 1))
    };
    let x = x.clone().bitwise_xor(shr(x, 16));
    let x = x.mul_scalar(0x7feb_352du32 as i32);
    let x = x.clone().bitwise_xor(shr(x, 15));
    let x = x.mul_scalar(0x846c_a68bu32 as i32);
    x.clone().bitwise_xor(shr(x, 16))
}

/// Numbers a model's ordinary forward passes, so a pass that no caller keyed still draws
/// counter-based masks: pass n under seed s draws the masks of `DropoutKey::new(s, n)`. Clones
/// share one count (the copies an optimizer step or `valid()` makes of a model count on), and
/// the count is not part of a record: a model loaded from a checkpoint starts again at 0
/// unless told where to continue ([`PassCounter::set_next`]).
#[derive(Clone, Debug, Default)]
pub struct PassCounter {
    seed: u64,
    next: Arc<AtomicU64>,
}

impl PassCounter {
    /// A count from 0 under `seed`.
    pub fn new(seed: u64) -> Self {
        Self { seed, next: Arc::default() }
    }

    /// The seed the masks are drawn under.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The number the next pass gets.
    pub fn next(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// Makes `next` the number of the next pass (e.g. the step a resumed run continues at).
    pub fn set_next(&self, next: u64) {
        self.next.store(next, Ordering::Relaxed)
    }

    /// The key of the next pass; the count moves on by one.
    pub fn take_key(&self) -> DropoutKey {
        DropoutKey::new(self.seed, self.next.fetch_add(1, Ordering::Relaxed))
    }
}

/// Dropout with counter-based masks (see the module docs). Like Burn's `Dropout`, it acts only
/// when the backend tracks gradients and scales the kept activities by `1 / (1 - prob)`.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::prelude::*;
/// use owt_models::{CounterDropout, DropoutKey};
///
/// let device = Default::default();
/// let x = Tensor::<Autodiff<Flex>, 2>::ones([8, 16], &device);
/// let dropout = CounterDropout::new(0.5);
/// let key = DropoutKey::new(7, 0); // seed 7, step 0
/// // Rows 4..8 alone, numbered from row 4, draw what they draw in the whole batch: a batch
/// // split over devices draws one device's mask with nothing sent.
/// let whole = dropout.forward(x.clone(), key, "fc6").slice([4..8]).into_data();
/// let part = dropout.forward(x.slice([4..8]), key.from_row(4), "fc6").into_data();
/// assert_eq!(whole, part);
/// ```
/// Every mask is a function of a [`DropoutKey`]: given by the caller, or else the next of
/// the module's own [`PassCounter`], so no mask is ever drawn from a random generator (which on
/// a mesh would be drawn on one rank and broadcast).
#[derive(Module, Clone, Debug)]
pub struct CounterDropout {
    /// Probability of dropping an activity.
    pub prob: f64,
    /// The keys of passes no caller keyed.
    #[module(skip)]
    pub passes: PassCounter,
}

impl CounterDropout {
    /// Dropout with drop probability `prob`, its passes counted from 0 under seed 0.
    pub fn new(prob: f64) -> Self {
        Self { prob, passes: PassCounter::default() }
    }

    /// The same dropout with its passes counted under `seed` (from 0).
    pub fn with_seed(self, seed: u64) -> Self {
        Self { passes: PassCounter::new(seed), ..self }
    }

    /// Whether dropout acts on `x`: only where gradients are tracked, and with a nonzero
    /// probability.
    pub fn acts<B: Backend>(&self, x: &Tensor<B, 2>) -> bool {
        B::ad_enabled(&x.device()) && self.prob != 0.0
    }

    /// `x` (`[rows, features]`) with `layer`'s mask under `key` applied.
    pub fn forward<B: Backend>(&self, x: Tensor<B, 2>, key: DropoutKey, layer: &str) -> Tensor<B, 2> {
        if !self.acts(&x) {
            return x;
        }
        let x = match dropout_kernel::<B>() {
            Some(kernel) => {
                let mask = self.kernel_mask(&x, key, layer);
                match kernel(x, mask) {
                    Ok(dropped) => return dropped,
                    Err(x) => x,
                }
            }
            None => x,
        };
        let keep = self.mask(&x, key, layer);
        x.mask_fill(keep.bool_not(), 0.0).mul_scalar(1.0 / (1.0 - self.prob))
    }

    /// `layer`'s mask under `key` for `x`, as a backend's own kernel takes it
    /// ([`register_dropout_kernel`](crate::register_dropout_kernel)).
    pub fn kernel_mask<B: Backend>(&self, x: &Tensor<B, 2>, key: DropoutKey, layer: &str) -> DropoutMask {
        let [rows, cols] = x.dims();
        check_32_bits(key.first_row, rows, cols);
        DropoutMask {
            words: key.words(layer),
            first_row: key.first_row as u32,
            keep_below: keep_threshold(self.prob),
            scale: 1.0 / (1.0 - self.prob),
        }
    }

    /// Which of `x`'s elements `layer`'s mask under `key` keeps (true: kept), in `x`'s layout.
    /// Rows are numbered from `key.first_row`; indices must fit in 32 bits.
    pub fn mask<B: Backend>(&self, x: &Tensor<B, 2>, key: DropoutKey, layer: &str) -> Tensor<B, 2, Bool> {
        let [rows, cols] = x.dims();
        let device = x.device();
        let [w0, w1] = key.words(layer);
        let first = key.first_row as i64;
        check_32_bits(key.first_row, rows, cols);
        let i32_at = |range: std::ops::Range<i64>| Tensor::<B, 1, Int>::arange(range, (&device, DType::I32));
        // Hash of each global row, [rows, 1], and the column indices, [1, cols]: whole vectors.
        let row_hash =
            lowbias32_tensor(i32_at(first..first + rows as i64).bitwise_xor_scalar(bits::<B>(w0))).unsqueeze_dim(1);
        let col = i32_at(0..cols as i64).unsqueeze_dim(0);
        // Zeros in `x`'s own layout carry the work to wherever `x`'s parts are.
        let zeros = x.clone().int().cast(DType::I32).mul_scalar(0);
        let h = lowbias32_tensor((zeros + row_hash).bitwise_xor(col));
        let h = lowbias32_tensor(h.bitwise_xor_scalar(bits::<B>(w1)));
        h.bitwise_right_shift_scalar(bits::<B>(8))
            .bitwise_and_scalar(bits::<B>(0x00ff_ffff))
            .lower_elem(keep_threshold(self.prob) as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::Distribution;

    type B = Autodiff<Flex>;

    #[test]
    fn the_mask_on_a_backend_is_the_host_reference_bit_for_bit() {
        let device = Default::default();
        let x = Tensor::<B, 2>::ones([37, 53], &device);
        let key = DropoutKey::new(7, 11).from_row(5);
        for prob in [0.5, 0.1, 0.9] {
            let got = CounterDropout::new(prob).mask(&x, key, "fc7").into_data().to_vec::<bool>().unwrap();
            let words = key.words("fc7");
            let want: Vec<bool> =
                (0..37u32).flat_map(|r| (0..53u32).map(move |c| keeps_element(words, r + 5, c, prob))).collect();
            assert_eq!(got, want, "prob {prob}");
            let kept = want.iter().filter(|k| **k).count() as f64 / want.len() as f64;
            assert!((kept - (1.0 - prob)).abs() < 0.05, "prob {prob}: kept {kept}");
        }
    }

    #[test]
    fn masks_differ_by_step_layer_and_seed_and_rows_keep_theirs_in_a_part() {
        let device = Default::default();
        let x = Tensor::<B, 2>::ones([16, 64], &device);
        let d = CounterDropout::new(0.5);
        let bits = |key: DropoutKey, layer: &str, x: &Tensor<B, 2>| {
            d.mask(x, key, layer).into_data().to_vec::<bool>().unwrap()
        };
        let base = bits(DropoutKey::new(1, 2), "fc6", &x);
        for other in [
            bits(DropoutKey::new(1, 3), "fc6", &x),
            bits(DropoutKey::new(2, 2), "fc6", &x),
            bits(DropoutKey::new(1, 2), "fc7", &x),
        ] {
            let same = base.iter().zip(&other).filter(|(a, b)| a == b).count() as f64 / base.len() as f64;
            assert!((0.4..0.6).contains(&same), "masks agree on {same} of elements");
        }
        // Rows 10..16 alone, numbered from 10, draw what they draw in the whole batch.
        let part = x.clone().slice([10..16]);
        assert_eq!(bits(DropoutKey::new(1, 2).from_row(10), "fc6", &part), base[10 * 64..].to_vec());
    }

    #[test]
    fn forward_zeroes_the_dropped_scales_the_kept_and_is_off_without_autodiff() {
        let device = Default::default();
        let x = Tensor::<B, 2>::random([8, 32], Distribution::Uniform(1.0, 2.0), &device);
        let d = CounterDropout::new(0.25);
        let key = DropoutKey::new(3, 4);
        let y = d.forward(x.clone(), key, "fc6").into_data().to_vec::<f32>().unwrap();
        let keep = d.mask(&x, key, "fc6").into_data().to_vec::<bool>().unwrap();
        let xs = x.clone().into_data().to_vec::<f32>().unwrap();
        for ((y, k), x) in y.iter().zip(&keep).zip(&xs) {
            assert_eq!(*y, if *k { x * (1.0 / 0.75f64) as f32 } else { 0.0 });
        }
        let plain = Tensor::<Flex, 2>::from_data(x.clone().into_data(), &device);
        assert_eq!(d.forward(plain.clone(), key, "fc6").into_data(), plain.into_data());
    }
}
