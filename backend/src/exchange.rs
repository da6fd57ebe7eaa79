//! The activity exchange of "one weird trick" (Krizhevsky 2014, section 4): how a matmul whose
//! left operand is sharded over the batch meets a weight split by output columns. Each rank
//! needs every rank's rows against its own columns; the scheme
//! ([`Exchange`](crate::scheme::Exchange), in `scheme.rs`) says how they travel.
//!
//! The same exchange serves a matmul whose left operand is split on the contraction dimension
//! (fc7's input, split by the columns fc6 produced): each round's pieces contribute a summand
//! instead of a block of rows. Either way the exchanged operand is kept whole with the tensor
//! (`DTensor::kept`), so the weight gradient `x^T @ dy` of the same layer moves nothing.

use std::ops::Range;

use burn::tensor::backend::Backend;
use burn::tensor::{Shape, TensorMetadata};

use crate::dtensor::{bytes_of, slices_along, DTensor};
use crate::kind::ShardKind;
use crate::ledger::Traffic;
use crate::placement::{shard_ranges, Placement};
use crate::scheme::Exchange;

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
    let offsets: Vec<usize> = shard_ranges(lhs.shape[dim], k).into_iter().map(|r| r.start).collect();
    let local_rows: Vec<usize> = lhs.shards.iter().map(|s| s.shape()[dim]).collect();
    let rounds = scheme.rounds(&local_rows);
    let mut traffic = Traffic::default();
    // Every rank's copy of one round's pieces, in the round's order.
    let mut fetch = |round: &[(usize, Range<usize>)]| -> Vec<Vec<K::Prim>> {
        (0..k)
            .map(|dst| {
                round
                    .iter()
                    .map(|(src, range)| {
                        let piece = rows::<B, K>(lhs.shards[*src].clone(), dim, range.clone());
                        if *src == dst {
                            return piece;
                        }
                        traffic.bytes += bytes_of(&piece);
                        traffic.messages += 1;
                        K::to_device(piece, lhs.mesh.rank_device(dst), lhs.mesh.transport())
                    })
                    .collect()
            })
            .collect()
    };
    // Output pieces per rank: (global start of the rows, rows) for the forward; summands for
    // the weight gradient.
    let mut blocks: Vec<Vec<(usize, K::Prim)>> = vec![Vec::new(); k];
    let mut sums: Vec<Option<K::Prim>> = vec![None; k];
    // Every rank's received pieces, (global start, piece), kept whole with `lhs` afterwards.
    let mut received: Vec<Vec<(usize, K::Prim)>> = vec![Vec::new(); k];
    let mut next = rounds.first().map(|round| fetch(round));
    for (i, round) in rounds.iter().enumerate() {
        let current = next.take().expect("fetched");
        // Issue the next round's transfers before this round's compute.
        next = rounds.get(i + 1).map(|round| fetch(round));
        for (dst, pieces) in current.into_iter().enumerate() {
            for ((src, range), piece) in round.iter().zip(&pieces) {
                received[dst].push((offsets[*src] + range.start, piece.clone()));
            }
            let local = rhs.shards[dst].clone();
            if dim == row {
                let out = matmul(K::cat(pieces, row), local);
                let mut at = 0;
                for (src, range) in round {
                    let len = range.len();
                    blocks[dst].push((offsets[*src] + range.start, rows::<B, K>(out.clone(), row, at..at + len)));
                    at += len;
                }
            } else {
                // The weight gradient: the matching rows of `rhs` (its row dimension is the
                // contraction), one summand per round.
                let rhs_rows: Vec<K::Prim> = round
                    .iter()
                    .map(|(src, range)| {
                        let start = offsets[*src] + range.start;
                        rows::<B, K>(local.clone(), row, start..start + range.len())
                    })
                    .collect();
                let out = matmul(K::cat(pieces, inner), K::cat(rhs_rows, row));
                sums[dst] = Some(match sums[dst].take() {
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
