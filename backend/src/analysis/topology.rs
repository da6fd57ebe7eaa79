//! The links between ranks as a tree of shared uplinks, and what one collective costs on it.
//!
//! Ranks sit in order on the machine: rank r on GPU r, a node's GPUs consecutive. Every rank
//! has its own link (the profile's `link_gbps`, the tier of span 1); above it, each
//! [`Uplink`] of span `s` joins every block of `s` consecutive ranks to the rest (a PCIe
//! switch shared by a pair of GPUs, a socket's host-staged path, a node's network card). A
//! transfer between two ranks crosses the uplinks of every block that holds one of them but
//! not the other, and transfers that cross the same uplink in the same direction at once share
//! its bandwidth: that is the contention a flat "one link per rank" model misses, and the
//! reason the 2014 paper's 8-GPU speedup is 6.25x rather than 7.9x.
//!
//! A collective is priced round by round: in each round every group of the collective (one
//! group on a 1-D mesh; the rows or the columns of a 2-D mesh, all at once) sends the
//! pattern's messages of one piece, and the round lasts as long as its busiest uplink needs to
//! carry what crosses it in one direction. The pattern comes from the ledger's collective name:
//! all-gather and reduce-scatter send every member's piece to every other member; broadcast
//! sends the root's piece to every other member, the root moving on each round (scheme b's
//! rounds); all-reduce runs as a ring (NCCL's order; the ledger records the ring's volume on
//! every path), and a point-to-point send as one message per member, ring-like.

use std::collections::BTreeMap;

use crate::ledger::{Collective, CollectiveKey};

/// A shared link above the ranks' own: the uplink of every block of `span` consecutive ranks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Uplink {
    /// What it is, for reports (`PCIe switch upstream`, `InfiniBand`).
    pub name: String,
    /// Ranks in each block behind one such uplink (at least 2).
    pub span: usize,
    /// Bandwidth each way of one uplink, GB/s, shared by everything crossing it at once.
    pub gbps: f64,
    /// Latency of a message that crosses it, microseconds (the largest latency on a
    /// message's path is the message's).
    pub latency_us: f64,
}

/// How a collective's messages go between the members of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Every member's piece to every other member (all-gather, reduce-scatter and the direct
    /// exchanges of schemes a and c).
    AllToAll,
    /// One member's piece to every other one, the root changing from round to round
    /// (broadcast: scheme b).
    OneToAll,
    /// Each member to the next one (a ring all-reduce, point-to-point sends).
    Ring,
}

impl Pattern {
    /// The pattern a collective moves its pieces in, along any mesh dimension.
    pub fn of(collective: Collective) -> Pattern {
        match collective {
            Collective::Broadcast => Pattern::OneToAll,
            Collective::AllReduce | Collective::Send => Pattern::Ring,
            Collective::AllGather | Collective::ReduceScatter => Pattern::AllToAll,
        }
    }

    /// Messages in one round over `groups` at once: every member's to every other, the
    /// root's to every other, or one per member of a ring.
    pub fn round_messages(self, groups: &[Vec<usize>]) -> f64 {
        let per_group = |n: usize| match self {
            Pattern::AllToAll => n * n.saturating_sub(1),
            Pattern::OneToAll => n.saturating_sub(1),
            Pattern::Ring if n > 1 => n,
            Pattern::Ring => 0,
        };
        groups.iter().map(|g| per_group(g.len())).sum::<usize>() as f64
    }

    /// Messages the busiest member sends in one round of a group of `n`.
    fn busiest_sends(self, n: usize) -> usize {
        match self {
            Pattern::AllToAll | Pattern::OneToAll => n.saturating_sub(1),
            Pattern::Ring => usize::from(n > 1),
        }
    }
}

/// The groups a ledger entry's collective ran over on a mesh of `shape` = [nodes, local ranks]
/// (a 1-D mesh of K is [1, K]), rank `node * local + l`: a collective over the outer dimension
/// (`all_reduce[node]`) ran over each column (the ranks with the same local index, one per
/// node), any other within each node.
pub fn groups_of(collective: &CollectiveKey, shape: [usize; 2]) -> Vec<Vec<usize>> {
    let [nodes, local] = shape;
    if collective.over.is_some() {
        (0..local).map(|l| (0..nodes).map(|n| n * local + l).collect()).collect()
    } else {
        (0..nodes).map(|n| (n * local..(n + 1) * local).collect()).collect()
    }
}

/// One round of `pattern` over `groups` at once, seen from blocks of `span` consecutive ranks:
/// (pieces crossing the busiest block's uplink in its busier direction, messages in the round).
/// For broadcast, the busiest block's count averaged over the rounds' roots.
pub fn round_crossings(pattern: Pattern, groups: &[Vec<usize>], span: usize) -> (f64, f64) {
    let span = span.max(1);
    let block = |r: usize| r / span;
    let count_in = |g: &[usize]| {
        let mut c: BTreeMap<usize, usize> = BTreeMap::new();
        for &r in g {
            *c.entry(block(r)).or_default() += 1;
        }
        c
    };
    let busiest = |flows: &BTreeMap<usize, (usize, usize)>| flows.values().map(|&(o, i)| o.max(i)).max().unwrap_or(0);
    let crossing = match pattern {
        Pattern::AllToAll => {
            let mut flows: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
            for g in groups {
                let n = g.len();
                for (b, m) in count_in(g) {
                    let f = flows.entry(b).or_default();
                    f.0 += m * (n - m);
                    f.1 += m * (n - m);
                }
            }
            busiest(&flows) as f64
        }
        Pattern::OneToAll => {
            let rounds = groups.iter().map(Vec::len).max().unwrap_or(0);
            let counts: Vec<BTreeMap<usize, usize>> = groups.iter().map(|g| count_in(g)).collect();
            let mut total = 0usize;
            for j in 0..rounds {
                let mut flows: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
                for (g, c) in groups.iter().zip(&counts) {
                    let Some(&root) = g.get(j) else { continue };
                    let rb = block(root);
                    for (&b, &m) in c {
                        let f = flows.entry(b).or_default();
                        if b == rb {
                            f.0 += g.len() - m;
                        } else {
                            f.1 += m;
                        }
                    }
                }
                total += busiest(&flows);
            }
            if rounds == 0 {
                0.0
            } else {
                total as f64 / rounds as f64
            }
        }
        Pattern::Ring => {
            let mut flows: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
            for g in groups {
                let n = g.len();
                if n < 2 {
                    continue;
                }
                let mut ring = g.clone();
                ring.sort_unstable();
                for (i, &a) in ring.iter().enumerate() {
                    let b = ring[(i + 1) % n];
                    if block(a) != block(b) {
                        flows.entry(block(a)).or_default().0 += 1;
                        flows.entry(block(b)).or_default().1 += 1;
                    }
                }
            }
            busiest(&flows) as f64
        }
    };
    (crossing, pattern.round_messages(groups))
}

/// Seconds for `bytes` in `messages` of `pattern` over `groups`, on ranks whose own links run
/// at `link_gbps` with `latency_us` and above them `uplinks`: per uplink (the ranks' own
/// links first), the bytes crossing its busiest instance over its bandwidth; the slowest sets
/// the pace. Each round adds the busiest member's messages times the largest latency on the
/// way.
pub fn collective_seconds(
    pattern: Pattern,
    groups: &[Vec<usize>],
    bytes: u64,
    messages: u64,
    link_gbps: f64,
    latency_us: f64,
    uplinks: &[Uplink],
) -> f64 {
    if bytes == 0 && messages == 0 {
        return 0.0;
    }
    let per_round = pattern.round_messages(groups);
    if per_round == 0.0 {
        return 0.0;
    }
    let own = (1usize, link_gbps, latency_us);
    let tiers = std::iter::once(own).chain(uplinks.iter().map(|u| (u.span, u.gbps, u.latency_us)));
    let (mut transfer, mut latency) = (0.0f64, 0.0f64);
    for (span, gbps, lat) in tiers {
        let (crossing, _) = round_crossings(pattern, groups, span);
        if crossing > 0.0 {
            transfer = transfer.max(bytes as f64 * crossing / per_round / (gbps * 1e9));
            latency = latency.max(lat);
        }
    }
    let rounds = messages as f64 / per_round;
    let busiest = groups.iter().map(|g| pattern.busiest_sends(g.len())).max().unwrap_or(0) as f64;
    transfer + rounds * busiest * latency * 1e-6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(k: usize) -> Vec<Vec<usize>> {
        groups_of(&Collective::AllGather.into(), [1, k])
    }

    #[test]
    fn crossings_count_the_transfers_that_share_an_uplink() {
        // 8 ranks, pairs behind switches: an all-to-all sends s (K - s) pieces out of a block of s.
        for (span, want) in [(1, 7.0), (2, 12.0), (4, 16.0), (8, 0.0)] {
            assert_eq!(round_crossings(Pattern::AllToAll, &whole(8), span).0, want, "span {span}");
        }
        // A broadcast: the root's block sends K - s pieces.
        for (span, want) in [(1, 7.0), (2, 6.0), (4, 4.0)] {
            assert_eq!(round_crossings(Pattern::OneToAll, &whole(8), span).0, want, "span {span}");
        }
        // A ring in rank order crosses every block boundary once each way.
        for span in [1, 2, 4] {
            assert_eq!(round_crossings(Pattern::Ring, &whole(8), span), (1.0, 8.0), "span {span}");
        }
        // The columns of a (2, 4) mesh: 4 rings of 2 nodes at once all leave through each
        // node's uplink (span 4), one each way per column; inside a node, one per GPU link.
        let columns = groups_of(&Collective::AllReduce.over("node"), [2, 4]);
        assert_eq!(columns, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(round_crossings(Pattern::Ring, &columns, 4), (4.0, 8.0));
        assert_eq!(round_crossings(Pattern::Ring, &columns, 1), (1.0, 8.0));
        // The rows stay inside their nodes: nothing crosses a node's uplink.
        assert_eq!(round_crossings(Pattern::AllToAll, &groups_of(&Collective::AllGather.into(), [2, 4]), 4).0, 0.0);
    }

    #[test]
    fn a_flat_machine_prices_bytes_over_every_rank_link_at_once() {
        // One tier: an all-to-all of B bytes on K ranks lands B / K on each rank's link, plus
        // (K - 1) messages' latency per round, as the flat model always did.
        let (k, bytes) = (4usize, 4_000_000_000u64);
        let messages = (k * (k - 1)) as u64;
        let t = collective_seconds(Pattern::AllToAll, &whole(k), bytes, messages, 1.0, 10.0, &[]);
        assert!((t - (1.0 + 3.0 * 10e-6)).abs() < 1e-12, "{t}");
        // A broadcast has no multicast: the root's link carries all K - 1 pieces.
        let t = collective_seconds(Pattern::OneToAll, &whole(k), 3_000_000_000, 3, 1.0, 0.0, &[]);
        assert!((t - 3.0).abs() < 1e-12, "{t}");
        // Behind a shared uplink of half the speed for each pair, the pairs' 4 crossing pieces
        // (of 1/12 of the bytes each) take 4/12 x 4 GB at 0.5 GB/s.
        let up = Uplink { name: "switch".into(), span: 2, gbps: 0.5, latency_us: 20.0 };
        let t = collective_seconds(Pattern::AllToAll, &whole(k), bytes, messages, 1.0, 10.0, &[up]);
        let want = 4.0 / 12.0 * 4.0 / 0.5 + 3.0 * 20e-6;
        assert!((t - want).abs() < 1e-12, "{t} vs {want}");
        // Nothing moved costs nothing; one rank alone moves nothing.
        assert_eq!(collective_seconds(Pattern::Ring, &whole(1), 0, 0, 1.0, 1.0, &[]), 0.0);
    }

    #[test]
    fn patterns_follow_the_ledger_names() {
        assert_eq!(Pattern::of(Collective::Broadcast), Pattern::OneToAll);
        assert_eq!(Pattern::of(Collective::AllReduce), Pattern::Ring);
        assert_eq!(Pattern::of(Collective::Send), Pattern::Ring);
        assert_eq!(Pattern::of(Collective::ReduceScatter), Pattern::AllToAll);
        assert_eq!(Pattern::of(Collective::AllGather), Pattern::AllToAll);
    }
}
