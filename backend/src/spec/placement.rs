//! Placements: how a tensor's values are laid out over the ranks of a mesh.

use std::ops::Range;

use burn::tensor::Shape;

/// How the summands of a [`Placement::Partial`] tensor combine into its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Elementwise sum (logical or for bool): weight gradients of batch shards, per-rank
    /// pieces of a sum over a sharded dimension.
    Sum,
    /// Elementwise maximum: per-rank maxima over a sharded dimension (log_softmax of
    /// class-split logits).
    Max,
}

/// Where the pieces of a distributed tensor live across the ranks of a mesh.
///
/// ```
/// use owt_hybrid::{shard_sizes, Placement};
///
/// // 10 rows over 4 ranks: the first ranks take one more.
/// assert_eq!(shard_sizes(10, 4), vec![3, 3, 2, 2]);
/// let wire: Placement = serde_json::from_str(r#"{"Shard": 1}"#).unwrap();
/// assert_eq!(wire, Placement::Shard(1));
/// ```
///
/// Serialised as `"Replicate"`, `{"Shard": d}`, `"Partial"` (a pending sum, the only partial
/// a plan can ask for) and `"PartialMax"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "WirePlacement", from = "WirePlacement")]
pub enum Placement {
    /// Every rank holds the whole tensor (conv weights under the weird trick).
    Replicate,
    /// Rank r holds the r-th slice along this dimension; uneven splits allowed (batch shards:
    /// dim 0; FC weight columns: dim 1 of a Burn `Linear` weight stored `[d_in, d_out]`).
    Shard(usize),
    /// Every rank holds a piece of the same shape; the value is their reduction by the
    /// [`ReduceOp`] (a weight gradient computed from batch shards is a pending sum), resolved
    /// by an all-reduce or a reduce-scatter when a consumer needs it.
    Partial(ReduceOp),
}

/// How placements are written in plans and configs (keeps `"Partial"` meaning a sum).
#[derive(serde::Serialize, serde::Deserialize)]
enum WirePlacement {
    Replicate,
    Shard(usize),
    Partial,
    PartialMax,
}

impl From<Placement> for WirePlacement {
    fn from(p: Placement) -> Self {
        match p {
            Placement::Replicate => WirePlacement::Replicate,
            Placement::Shard(d) => WirePlacement::Shard(d),
            Placement::Partial(ReduceOp::Sum) => WirePlacement::Partial,
            Placement::Partial(ReduceOp::Max) => WirePlacement::PartialMax,
        }
    }
}

impl From<WirePlacement> for Placement {
    fn from(p: WirePlacement) -> Self {
        match p {
            WirePlacement::Replicate => Placement::Replicate,
            WirePlacement::Shard(d) => Placement::Shard(d),
            WirePlacement::Partial => Placement::PARTIAL_SUM,
            WirePlacement::PartialMax => Placement::Partial(ReduceOp::Max),
        }
    }
}

impl Placement {
    /// A pending sum: the partial placement of gradients and of sums over a sharded dimension.
    pub const PARTIAL_SUM: Placement = Placement::Partial(ReduceOp::Sum);

    /// Whether this is a pending reduction of any kind.
    pub fn is_partial(self) -> bool {
        matches!(self, Placement::Partial(_))
    }

    /// The sharded dimension, if any.
    pub fn shard_dim(self) -> Option<usize> {
        match self {
            Placement::Shard(d) => Some(d),
            _ => None,
        }
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Replicate => write!(f, "Replicate"),
            Placement::Shard(d) => write!(f, "Shard({d})"),
            Placement::Partial(ReduceOp::Sum) => write!(f, "Partial"),
            Placement::Partial(ReduceOp::Max) => write!(f, "Partial(max)"),
        }
    }
}

/// Whether a dimension of `len` entries can be split over `ranks` ranks: only when every rank
/// gets at least one entry. A shorter dimension (a batch remainder smaller than the mesh, a
/// scalar) stays whole (`Replicate`), so no rank ever holds an empty piece and no inner kernel
/// is launched over zero elements.
pub fn can_shard(len: usize, ranks: usize) -> bool {
    len >= ranks
}

/// Sizes of the slices of `len` elements split over `ranks` ranks: the first `len % ranks`
/// ranks get one extra (10 over 4 is 3, 3, 2, 2).
pub fn shard_sizes(len: usize, ranks: usize) -> Vec<usize> {
    assert!(ranks > 0, "a mesh has at least one rank");
    (0..ranks).map(|r| len / ranks + usize::from(r < len % ranks)).collect()
}

/// Index ranges of the slices of [`shard_sizes`], in rank order.
pub fn shard_ranges(len: usize, ranks: usize) -> Vec<Range<usize>> {
    let mut start = 0;
    shard_sizes(len, ranks)
        .into_iter()
        .map(|size| {
            let range = start..start + size;
            start += size;
            range
        })
        .collect()
}

/// The local shape rank `rank` of `ranks` holds of a tensor of `shape` in `placement`.
pub(crate) fn local_shape(shape: &Shape, placement: Placement, ranks: usize, rank: usize) -> Shape {
    let mut s = shape.clone();
    if let Placement::Shard(d) = placement {
        s[d] = shard_sizes(shape[d], ranks)[rank];
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uneven_shards_follow_the_design() {
        assert_eq!(shard_sizes(10, 4), vec![3, 3, 2, 2]);
        assert_eq!(shard_sizes(8, 2), vec![4, 4]);
        assert_eq!(shard_sizes(1, 3), vec![1, 0, 0]);
        assert_eq!(shard_ranges(10, 4), vec![0..3, 3..6, 6..8, 8..10]);
    }

    #[test]
    fn partial_sums_keep_their_name_in_plans() {
        let written = serde_json::to_string(&[Placement::PARTIAL_SUM, Placement::Shard(1), Placement::Replicate]);
        assert_eq!(written.unwrap(), r#"["Partial",{"Shard":1},"Replicate"]"#);
        let max = Placement::Partial(ReduceOp::Max);
        let back: Placement = serde_json::from_str(&serde_json::to_string(&max).unwrap()).unwrap();
        assert_eq!(back, max);
        let read: Placement = serde_json::from_str("\"Partial\"").unwrap();
        assert_eq!(read, Placement::PARTIAL_SUM);
    }
}
