//! Counter-based dropout as one kernel: the mask drawn and applied in one pass over the
//! activities, where a tensor-op formulation of the same generator takes some thirty launches
//! (integer hashing does not fuse in Burn 0.21). The mask is a pure function of (key words, row,
//! column), so the backward pass draws it again from the same numbers instead of storing it,
//! and a piece of a tensor on a mesh draws its part from its own offsets, equal for any rank
//! count.
//!
//! The generator is the one `owt_models::CounterDropout` defines with tensor ops (and tests
//! against this one bit for bit): Wellons' `lowbias32` of the global row xor the first key
//! word, xor the global column, hashed; xor the second word, hashed; the top 24 bits compared
//! with a threshold. Backends without the kernel (Flex) keep that formulation.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorPrimitive};

#[cfg(feature = "cubecl")]
mod cube;
#[cfg(feature = "fusion")]
mod fusion;

/// Which elements of a `[rows, columns]` tensor a counter-based dropout keeps and what the kept
/// ones are multiplied by: element (r, c) is the one at global row `first_row + r` and global
/// column `first_col + c`, kept when [`CounterMask::keeps`] says so (the kernels wrap global indices
/// at 32 bits, as the generic formulation does; callers keep them below).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterMask {
    /// The two key words of the layer's mask at this step.
    pub words: [u32; 2],
    /// The global row of the tensor's first row.
    pub first_row: u32,
    /// The global column of the tensor's first column.
    pub first_col: u32,
    /// An element is kept when the top 24 bits of its hash are below this.
    pub keep_below: u32,
    /// What a kept element is multiplied by (`1 / (1 - p)`), in the tensor's own precision
    /// as a scalar multiplication would round it.
    pub scale: f64,
}

impl CounterMask {
    /// Whether element (`r`, `c`) of the tensor is kept: the one at global row
    /// `first_row + r`, column `first_col + c` (the host reference of the kernels).
    pub fn keeps(&self, r: u32, c: u32) -> bool {
        let (row, col) = (self.first_row.wrapping_add(r), self.first_col.wrapping_add(c));
        let h = lowbias32(lowbias32(lowbias32(row ^ self.words[0]) ^ col) ^ self.words[1]);
        (h >> 8) < self.keep_below
    }

    /// The same mask for a piece that starts `rows` rows and `cols` columns further in.
    pub fn offset(self, rows: usize, cols: usize) -> Self {
        let at = |first: u32, by: usize| first.checked_add(u32::try_from(by).ok()?);
        Self {
            first_row: at(self.first_row, rows).expect("dropout rows past 32 bits"),
            first_col: at(self.first_col, cols).expect("dropout columns past 32 bits"),
            ..self
        }
    }
}

/// Wellons' `lowbias32` integer hash.
pub fn lowbias32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// Whether `x` is a 2-D float tensor: what a backend's kernel takes (its
/// `counter_dropout_takes`, where nothing else counts).
#[cfg(any(feature = "cubecl", feature = "fusion"))]
pub(crate) fn is_2d_float<T: burn::tensor::TensorMetadata>(x: &T) -> bool {
    x.shape().num_dims() == 2 && x.dtype().is_float()
}

/// A backend that applies a [`CounterMask`] in one kernel: CubeCL's (wgpu, CUDA), Burn's
/// fusing backend over it, `Hybrid` over either (each rank its piece), and `Autodiff` over any
/// of them (whose backward pass applies the same mask to the gradient).
pub trait CounterDropoutBackend: Backend {
    /// Whether [`CounterDropoutBackend::counter_dropout`] takes `x` (a 2-D float tensor whose
    /// layout the backend can offset; a pending sum on a mesh cannot be masked piecewise).
    fn counter_dropout_takes(x: &FloatTensor<Self>) -> bool;

    /// `x` with the dropped elements zero and the kept ones multiplied by the mask's scale.
    fn counter_dropout(x: FloatTensor<Self>, mask: CounterMask) -> FloatTensor<Self>;
}

/// `x` (`[rows, columns]`) with `mask` applied by `B`'s kernel, or `x` back where `B` does not
/// take it (the caller then uses its own formulation).
pub fn counter_dropout<B: CounterDropoutBackend>(
    x: Tensor<B, 2>,
    mask: CounterMask,
) -> Result<Tensor<B, 2>, Tensor<B, 2>> {
    let primitive = x.into_primitive().tensor();
    if !B::counter_dropout_takes(&primitive) {
        return Err(Tensor::from_primitive(TensorPrimitive::Float(primitive)));
    }
    Ok(Tensor::from_primitive(TensorPrimitive::Float(B::counter_dropout(primitive, mask))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_mask_is_the_same_mask_further_in() {
        let m = CounterMask { words: [3, 9], first_row: 5, first_col: 0, keep_below: 1 << 23, scale: 2.0 };
        let o = m.offset(4, 7);
        for (r, c) in [(0, 0), (3, 11), (10, 2)] {
            assert_eq!(o.keeps(r, c), m.keeps(r + 4, c + 7));
        }
        let kept = (0..64).flat_map(|r| (0..64).map(move |c| (r, c))).filter(|&(r, c)| m.keeps(r, c)).count();
        assert!((1800..2300).contains(&kept), "half of 4096 kept, got {kept}");
    }

    #[test]
    #[should_panic(expected = "past 32 bits")]
    fn an_offset_past_32_bits_is_refused() {
        let m = CounterMask { words: [0, 0], first_row: u32::MAX, first_col: 0, keep_below: 0, scale: 1.0 };
        let _ = m.offset(1, 0);
    }
}
