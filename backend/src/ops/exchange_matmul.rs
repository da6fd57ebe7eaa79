//! The activity exchange of "one weird trick" (Krizhevsky 2014, section 4): how a matmul whose
//! left operand is sharded over the batch meets a weight split by output columns. Each rank
//! needs every rank's rows against its own columns; the scheme
//! ([`Exchange`](crate::spec::scheme::Exchange), in `scheme.rs`) says how they travel.
//!
//! The same exchange serves a matmul whose left operand is split on the contraction dimension
//! (fc7's input, split by the columns fc6 produced): each round's pieces contribute a summand
//! instead of a block of rows. Either way the exchanged operand is kept whole with the tensor
//! (`DTensor::kept`), so the weight gradient `x^T @ dy` of the same layer moves nothing.

use std::ops::Range;

use burn::tensor::backend::Backend;
use burn::tensor::{Shape, TensorMetadata};

use crate::comm::collectives::{self, Outgoing};
use crate::ledger::Traffic;
use crate::spec::placement::{shard_ranges, Placement};
use crate::spec::scheme::Exchange;
use crate::tensor::dtensor::{slices_along, DTensor};
use crate::tensor::kind::ShardKind;

fn rows<B: Backend, K: ShardKind<B>>(p: K::Prim, dim: usize, range: Range<usize>) -> K::Prim {
    let shape = p.shape();
    if range.start == 0 && range.end == shape[dim] {
        return p;
    }
    K::slice(p, &slices_along(&shape, dim, range))
}

/// `lhs @ rhs` (the inner matmul `matmul`) for `lhs` sharded on `dim` (the row dimension: the
/// forward activities; or the contraction dimension: the weight gradient) and `rhs` sharded
/// on its last dimension, with `lhs`'s rows exchanged by `scheme`. The result is sharded on
/// its last dimension.
pub(crate) fn exchange_matmul<B: Backend, K: ShardKind<B>>(
    lhs: DTensor<B, K>,
    rhs: DTensor<B, K>,
    dim: usize,
    scheme: Exchange,
    mut matmul: impl FnMut(K::Prim, K::Prim) -> K::Prim,
) -> DTensor<B, K> {
    let n = lhs.shape.num_dims();
    let (row, inner) = (n - 2, n - 1);
    debug_assert!(dim == row || dim == inner, "exchange on dim {dim} of a rank-{n} matmul");
    debug_assert_eq!(lhs.placement, Placement::Shard(dim));
    debug_assert_eq!(rhs.placement, Placement::Shard(n - 1));
    let k = lhs.ranks();
    let ranges = shard_ranges(lhs.shape[dim], k);
    let offsets: Vec<usize> = ranges.iter().map(|r| r.start).collect();
    let local_rows: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
    let rounds = scheme.rounds(&local_rows);
    let local = lhs.mesh.local_ranks();
    let mut traffic = Traffic::default();
    // Pieces cross in the mesh's wire precision (a rank's own too) and are widened on arrival.
    let (home, wire) = (lhs.dtype, lhs.mesh.wire().on_wire(lhs.dtype));
    // Every local rank's copy of one round's pieces, in the round's order.
    let mut fetch = |round: &[(usize, Range<usize>)]| -> Vec<Vec<K::Prim>> {
        let mut sends = Vec::new();
        for (key, (src, range)) in round.iter().enumerate() {
            if local.contains(src) {
                let piece = rows::<B, K>(lhs.shards[*src - local.start].clone(), dim, range.clone());
                let piece = K::cast(piece, wire);
                sends.extend((0..k).map(|dst| Outgoing { key, src: *src, dst, piece: piece.clone() }));
            }
        }
        collectives::route::<B, K>(&lhs.mesh, sends, &mut traffic)
            .into_iter()
            .map(|got| got.into_iter().map(|(_, p)| K::cast(p, home)).collect())
            .collect()
    };
    // Output pieces per local rank: (global start of the rows, rows) for the forward;
    // summands for the weight gradient.
    let mut blocks: Vec<Vec<(usize, K::Prim)>> = vec![Vec::new(); local.len()];
    let mut sums: Vec<Option<K::Prim>> = vec![None; local.len()];
    // Every local rank's received pieces, (global start, piece), kept whole with `lhs`.
    let mut received: Vec<Vec<(usize, K::Prim)>> = vec![Vec::new(); local.len()];
    let mut next = rounds.first().map(|round| fetch(round));
    for (i, round) in rounds.iter().enumerate() {
        let current = next.take().expect("fetched");
        // Issue the next round's transfers before this round's compute.
        next = rounds.get(i + 1).map(|round| fetch(round));
        for (at_rank, pieces) in current.into_iter().enumerate() {
            for ((src, range), piece) in round.iter().zip(&pieces) {
                received[at_rank].push((offsets[*src] + range.start, piece.clone()));
            }
            let own = rhs.shards[at_rank].clone();
            if dim == row {
                let out = matmul(K::cat(pieces, row), own);
                let mut at = 0;
                for (src, range) in round {
                    let len = range.len();
                    blocks[at_rank].push((offsets[*src] + range.start, rows::<B, K>(out.clone(), row, at..at + len)));
                    at += len;
                }
            } else {
                // The weight gradient: the matching rows of `rhs` (its row dimension is the
                // contraction), one summand per round.
                let rhs_rows: Vec<K::Prim> = round
                    .iter()
                    .map(|(src, range)| {
                        let start = offsets[*src] + range.start;
                        rows::<B, K>(own.clone(), row, start..start + range.len())
                    })
                    .collect();
                let out = matmul(K::cat(pieces, inner), K::cat(rhs_rows, row));
                sums[at_rank] = Some(match sums[at_rank].take() {
                    Some(acc) => K::add(acc, out),
                    None => out,
                });
            }
        }
    }
    lhs.mesh.record(scheme.collective(), traffic);
    // The exchanged activities stay with `lhs`, so the weight gradient reuses them.
    lhs.keep_whole(
        received
            .into_iter()
            .map(|mut pieces| {
                pieces.sort_by_key(|(start, _)| *start);
                K::cat(pieces.into_iter().map(|(_, p)| p).collect(), dim)
            })
            .collect(),
    );
    let mut shape: Shape = lhs.shape.clone();
    shape[n - 1] = rhs.shape[n - 1];
    if dim == inner {
        shape[row] = lhs.shape[row];
    }
    let shards: Vec<K::Prim> = if dim == row {
        blocks
            .into_iter()
            .map(|mut b| {
                b.sort_by_key(|(start, _)| *start);
                K::cat(b.into_iter().map(|(_, p)| p).collect(), row)
            })
            .collect()
    } else {
        sums.into_iter().map(|s| s.expect("a batch with at least one row")).collect()
    };
    let dtype = shards[0].dtype();
    DTensor::from_parts(lhs.mesh.clone(), shape, dtype, Placement::Shard(n - 1), shards)
}
