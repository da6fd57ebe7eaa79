//! # owt-hybrid
//!
//! `Hybrid<B>`: a Burn backend wrapper whose device is a mesh of K devices and whose tensors
//! carry a placement (Replicate, Shard(dim), Partial). Conv ops on batch-sharded inputs run as
//! data-parallel replicas, matmuls against column-split weights run model-parallel, and every
//! byte that crosses devices goes through one collectives module that accounts for it.
//!
//! This crate is a skeleton until the Hybrid<B> issue lands; see `backend/README.md` and
//! `DESIGN.md` for the design. Placement names are fixed here already so plans can refer to them.

/// Where the pieces of a distributed tensor live across the ranks of a mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Every rank holds the whole tensor.
    Replicate,
    /// Rank r holds the r-th slice along this dimension (uneven splits allowed).
    Shard(usize),
    /// Every rank holds a summand; the value is their sum.
    Partial,
}

/// Sizes of the slices of `len` elements split over `ranks` ranks: the first `len % ranks`
/// ranks get one extra (10 over 4 is 3, 3, 2, 2).
pub fn shard_sizes(len: usize, ranks: usize) -> Vec<usize> {
    assert!(ranks > 0, "a mesh has at least one rank");
    (0..ranks).map(|r| len / ranks + usize::from(r < len % ranks)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uneven_shards_follow_the_design() {
        assert_eq!(shard_sizes(10, 4), vec![3, 3, 2, 2]);
        assert_eq!(shard_sizes(8, 2), vec![4, 4]);
        assert_eq!(shard_sizes(1, 3), vec![1, 0, 0]);
    }
}
