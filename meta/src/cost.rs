//! The cost log's record type ([`OpCost`]) and the counting conventions every op follows.
//!
//! Conventions (one place, so a cost model built on the log knows what it sums):
//! - `bytes_read`: the element count of every tensor input, whole, times its dtype's size
//!   (an op that reads only part of an input, such as `gather`, is still charged the whole
//!   input: the log does not guess access patterns). `bytes_written`: the output's elements
//!   times its dtype's size.
//! - `flops`: elementwise ops (arithmetic, comparisons, casts, masks, transcendentals, each
//!   counted 1) = output elements; reductions (sums, means, extrema, arg-extrema, cumulative
//!   ops, `any`/`all`) = input elements; sorts = input elements × ⌈log2 of the sorted length⌉;
//!   matmul = 2·batch·m·n·k; convolutions = 2·N·Cout·out-spatial·(Cin/groups)·kernel volume
//!   (transposed: the same product from the input side, 2·N·Cin·in-spatial·(Cout/groups)·
//!   kernel volume; both backward passes cost the forward's flops); pooling = output elements ×
//!   kernel volume; scatter-adds = the added value's elements.
//! - Shape-only ops (reshape, permute, swap_dims, expand, slice, unfold, to_device, detach)
//!   log 0 flops and 0 bytes: on a real backend they are views or get fused into their
//!   consumer. Pure data movement (cat, flip, slice_assign, gather, select, repeat) logs 0
//!   flops and its bytes. Creation ops (zeros, ones, full, random, from_data, arange) log the
//!   bytes they write; `empty` writes nothing; `*_into_data` reads its input.

use burn::tensor::{DType, Shape};

/// One op run on a [`crate::MetaDevice`]: what it would cost on a real device. A cost model
/// turns these into time; the Meta backend only counts (see the module doc for the rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpCost {
    /// The Burn backend op, e.g. `"float_matmul"` or `"conv2d"`.
    pub op: &'static str,
    /// The device's label when the op ran ([`crate::MetaDevice::set_label`]), e.g. a layer name.
    pub label: Option<String>,
    /// Floating-point (or integer) operations, by the conventions of this module.
    pub flops: u64,
    /// Bytes of the inputs the op reads.
    pub bytes_read: u64,
    /// Bytes of the output the op writes.
    pub bytes_written: u64,
}

/// Totals over a cost log, so callers need not sum [`OpCost`] fields by hand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CostTotals {
    /// Number of ops logged.
    pub ops: u64,
    /// Sum of [`OpCost::flops`].
    pub flops: u64,
    /// Sum of [`OpCost::bytes_read`].
    pub bytes_read: u64,
    /// Sum of [`OpCost::bytes_written`].
    pub bytes_written: u64,
}

impl CostTotals {
    /// Totals of `costs`.
    pub fn of<'a>(costs: impl IntoIterator<Item = &'a OpCost>) -> Self {
        let mut t = Self::default();
        for c in costs {
            t.ops += 1;
            t.flops += c.flops;
            t.bytes_read += c.bytes_read;
            t.bytes_written += c.bytes_written;
        }
        t
    }

    /// Bytes moved both ways (read + written).
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }
}

/// Bytes of `elements` values of `dtype` (sub-byte quantized types count 0).
pub(crate) fn bytes_of(elements: usize, dtype: DType) -> u64 {
    elements as u64 * dtype.size() as u64
}

/// ⌈log2 n⌉ (0 for n ≤ 1): the depth factor of a comparison sort.
pub(crate) fn ceil_log2(n: usize) -> u64 {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as u64
    }
}

/// 2·N·Cout·out-spatial·(Cin/groups)·kernel volume: the multiply-adds of a convolution of
/// input `x` `[N, Cin, ..]` with a weight of shape `weight` `[Cout, Cin/groups, k..]` giving an
/// output of shape `out` `[N, Cout, ..]`.
/// `weight[1]` already is Cin/groups.
pub(crate) fn conv_flops(weight: &Shape, out: &Shape) -> u64 {
    let n = out[0] as u64;
    let cout = out[1] as u64;
    let out_spatial: u64 = out[2..].iter().map(|&d| d as u64).product();
    let cin_per_group = weight[1] as u64;
    let kernel: u64 = weight[2..].iter().map(|&d| d as u64).product();
    2 * n * cout * out_spatial * cin_per_group * kernel
}

/// 2·N·Cin·in-spatial·(Cout/groups)·kernel volume: the multiply-adds of a transposed
/// convolution of an input of shape `x` `[N, Cin, ..]` with a weight of shape `weight`
/// `[Cin, Cout/groups, k..]`.
pub(crate) fn conv_transpose_flops(x: &Shape, weight: &Shape) -> u64 {
    let n = x[0] as u64;
    let cin = x[1] as u64;
    let in_spatial: u64 = x[2..].iter().map(|&d| d as u64).product();
    let cout_per_group = weight[1] as u64;
    let kernel: u64 = weight[2..].iter().map(|&d| d as u64).product();
    2 * n * cin * in_spatial * cout_per_group * kernel
}
