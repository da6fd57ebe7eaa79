//! The exchange schemes of "one weird trick" (Krizhevsky 2014, section 4) as data: which pieces
//! of batch-sharded activities travel in which round. All three schemes move the same bytes
//! and give the same numbers; they differ in message count and in how much compute can hide a
//! transfer. A leaf module (the mesh stores a scheme; the matmul that runs one is in
//! `exchange.rs`), so nothing here reaches back into the backend.

use std::ops::Range;

use crate::ledger::Collective;
use crate::spec::placement::shard_ranges;

/// How batch-sharded activities reach column-split weights (scheme letters as in the paper).
///
/// ```
/// use burn::backend::Flex;
/// use burn::prelude::*;
/// use owt_hybrid::{Distributed, Exchange, Hybrid, MeshDevice, Placement};
///
/// // K rounds of one rank's rows, for the tensors made on this handle of the mesh.
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2).with_exchange(Exchange::from_letter("b").unwrap());
/// let x = Tensor::<Hybrid<Flex>, 2>::ones([4, 3], &mesh).distribute(Placement::Shard(0));
/// let w = Tensor::<Hybrid<Flex>, 2>::ones([3, 2], &mesh).distribute(Placement::Shard(1));
/// let y = x.matmul(w); // the weird trick: every rank's columns over the whole batch
/// assert_eq!(y.placement(), Placement::Shard(1));
/// // Two rounds, each broadcasting one rank's 2 rows of 3 floats to the other rank.
/// assert_eq!(mesh.ledger_snapshot().by_collective("broadcast").bytes, 2 * (2 * 3 * 4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum Exchange {
    /// (a) One all-gather of every rank's activities, then one matmul over the whole batch.
    #[default]
    AllGather,
    /// (b) K rounds; in round r rank r's activities are broadcast and every rank multiplies
    /// them by its columns. The next round's broadcast is issued before this round's matmul,
    /// so on backends that queue work (CUDA, wgpu) the transfer overlaps the compute.
    Broadcast,
    /// (c) K rounds; in round j every rank sends the j-th 1/K slice of its activities to all,
    /// then as in (b). Smaller messages, more of them, the same overlap.
    Slices,
}

impl Exchange {
    /// The paper's letter: `a`, `b` or `c`.
    pub fn letter(self) -> char {
        match self {
            Exchange::AllGather => 'a',
            Exchange::Broadcast => 'b',
            Exchange::Slices => 'c',
        }
    }

    /// The scheme for a letter `a`, `b` or `c`.
    pub fn from_letter(letter: &str) -> Option<Exchange> {
        match letter {
            "a" => Some(Exchange::AllGather),
            "b" => Some(Exchange::Broadcast),
            "c" => Some(Exchange::Slices),
            _ => None,
        }
    }

    /// The collective its transfers are recorded under.
    pub fn collective(self) -> Collective {
        match self {
            Exchange::AllGather | Exchange::Slices => Collective::AllGather,
            Exchange::Broadcast => Collective::Broadcast,
        }
    }

    /// The rounds of this scheme for shards of `local_rows` rows on each rank: per round, the
    /// (source rank, row range within that rank's shard) pieces sent to every rank. Empty
    /// pieces are left out; a round with none is dropped.
    pub fn rounds(self, local_rows: &[usize]) -> Vec<Vec<(usize, Range<usize>)>> {
        let k = local_rows.len();
        let rounds: Vec<Vec<(usize, Range<usize>)>> = match self {
            Exchange::AllGather => vec![(0..k).map(|r| (r, 0..local_rows[r])).collect()],
            Exchange::Broadcast => (0..k).map(|r| vec![(r, 0..local_rows[r])]).collect(),
            Exchange::Slices => {
                let slices: Vec<Vec<Range<usize>>> = local_rows.iter().map(|&n| shard_ranges(n, k)).collect();
                (0..k).map(|j| (0..k).map(|r| (r, slices[r][j].clone())).collect()).collect()
            }
        };
        rounds
            .into_iter()
            .map(|round| round.into_iter().filter(|(_, range)| !range.is_empty()).collect::<Vec<_>>())
            .filter(|round| !round.is_empty())
            .collect()
    }
}
