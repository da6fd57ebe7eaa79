//! Counter-based dropout on `Hybrid`: each rank applies the mask to its own piece, offset by
//! where that piece starts in the whole tensor (a batch shard by its first row, a column shard
//! by its first column), so every rank count draws the one device's mask and nothing moves.

use burn::tensor::TensorMetadata;

use crate::backend::{Hybrid, HybridFloat};
use crate::kernels::counter_dropout::{CounterDropoutBackend, CounterMask};
use crate::spec::placement::{shard_ranges, Placement};

impl<B: CounterDropoutBackend> CounterDropoutBackend for Hybrid<B> {
    /// Pieces of a tensor whole along a mesh's outer dimensions and not a pending sum (a sum's
    /// summands cannot be masked apart; Burn's ops reduce it first).
    fn counter_dropout_takes(x: &HybridFloat<B>) -> bool {
        x.whole_across()
            && x.shape().num_dims() == 2
            && !x.placement().is_partial()
            && x.shards().iter().all(B::counter_dropout_takes)
    }

    fn counter_dropout(x: HybridFloat<B>, mask: CounterMask) -> HybridFloat<B> {
        let (shape, placement, ranks) = (x.shape.clone(), x.placement(), x.ranks());
        let starts = |dim: usize| shard_ranges(shape[dim], ranks);
        let (rows, cols) = (starts(0), starts(1));
        x.map_placed(shape.clone(), placement, |rank, piece| {
            let piece_mask = match placement {
                Placement::Shard(0) => mask.offset(rows[rank].start, 0),
                Placement::Shard(1) => mask.offset(0, cols[rank].start),
                _ => mask,
            };
            B::counter_dropout(piece, piece_mask)
        })
    }
}
