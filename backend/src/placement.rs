//! Placements: how a tensor's values are laid out over the ranks of a mesh.

use std::ops::Range;

/// Where the pieces of a distributed tensor live across the ranks of a mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Placement {
    /// Every rank holds the whole tensor (conv weights under the weird trick).
    Replicate,
    /// Rank r holds the r-th slice along this dimension; uneven splits allowed (batch shards:
    /// dim 0; FC weight columns: dim 1 of a Burn `Linear` weight stored `[d_in, d_out]`).
    Shard(usize),
    /// Every rank holds a summand of the same shape; the value is their sum (a weight gradient
    /// computed from batch shards), resolved by an all-reduce when a consumer needs it.
    Partial,
}

impl Placement {
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
            Placement::Partial => write!(f, "Partial"),
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
}
