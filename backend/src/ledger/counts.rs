//! The communication ledger: every byte that crosses ranks, by collective and by phase.

use std::collections::BTreeMap;

use super::keys::{CollectiveKey, Phase};

/// Bytes and messages of one kind of transfer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Traffic {
    /// Bytes received by ranks from other ranks.
    pub bytes: u64,
    /// Point-to-point messages (one per source, destination and transfer).
    pub messages: u64,
    /// Of `bytes`, those that crossed from one process to another (a mesh spanning
    /// processes; zero inside one). A process records what its own ranks sent, so the
    /// ledgers of all the processes of a mesh sum to the ledger of the same mesh in one.
    pub cross_process_bytes: u64,
    /// Of `messages`, those that crossed processes.
    pub cross_process_messages: u64,
}

impl Traffic {
    /// `bytes` in `messages`, none of them across processes.
    pub fn within(bytes: u64, messages: u64) -> Traffic {
        Traffic { bytes, messages, ..Traffic::default() }
    }

    /// Counts one piece of `bytes` landing on another rank (`across` processes or not): one
    /// message. Every collective's traffic, along any mesh dimension, is made of these.
    pub(crate) fn count(&mut self, bytes: u64, across: bool) {
        self.bytes += bytes;
        self.messages += 1;
        if across {
            self.cross_process_bytes += bytes;
            self.cross_process_messages += 1;
        }
    }
}

impl std::ops::AddAssign for Traffic {
    fn add_assign(&mut self, other: Traffic) {
        self.bytes += other.bytes;
        self.messages += other.messages;
        self.cross_process_bytes += other.cross_process_bytes;
        self.cross_process_messages += other.cross_process_messages;
    }
}

/// What moved between ranks since the last reset: traffic per (phase, collective), the ops
/// that had no placement rule and ran gathered (fallbacks), by op name, and the empty pieces
/// that reached a rank (empty work: some inner backends, CubeCL CUDA among them, fail on a
/// kernel launched over zero elements).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerSnapshot {
    /// Traffic keyed by (phase, collective), in the order of their text.
    pub traffic: BTreeMap<(Phase, CollectiveKey), Traffic>,
    /// Fallback count by op name.
    pub fallbacks: BTreeMap<String, u64>,
    /// Tensors holding a zero-element piece on some rank, by what they were (kind, placement,
    /// global shape). Every inner op run on such a piece would be empty work; `Hybrid`'s rules
    /// never make one from non-empty inputs, so anything here is a bug or an empty user tensor.
    pub empty_ops: BTreeMap<String, u64>,
    /// The phases in the order they first moved something: how a step's communication
    /// interleaves with its passes (a layer's sync right after its backward, when the sync
    /// overlaps the pass).
    pub phase_order: Vec<Phase>,
}

impl LedgerSnapshot {
    /// Total over all phases and collectives.
    pub fn total(&self) -> Traffic {
        let mut t = Traffic::default();
        for v in self.traffic.values() {
            t += *v;
        }
        t
    }

    /// Total of one collective over all phases, the collective named as reports write it
    /// (`all_gather`, `all_reduce[node]`).
    pub fn by_collective(&self, collective: &str) -> Traffic {
        self.sum_where(|(_, c)| c == collective)
    }

    /// Total of one phase over all collectives, the phase named as reports write it
    /// (`fc6:forward`, a label of the caller's own, or [`crate::UNLABELLED`]).
    pub fn by_phase(&self, phase: &str) -> Traffic {
        self.sum_where(|(p, _)| p == phase)
    }

    /// The traffic of one (phase, collective) entry, named as reports write them (nothing
    /// where none moved).
    pub fn entry(&self, phase: &str, collective: &str) -> Traffic {
        self.sum_where(|(p, c)| p == phase && c == collective)
    }

    /// Total of the entries whose key `keep` accepts.
    pub fn sum_where(&self, keep: impl Fn(&(Phase, CollectiveKey)) -> bool) -> Traffic {
        let mut t = Traffic::default();
        for (k, v) in &self.traffic {
            if keep(k) {
                t += *v;
            }
        }
        t
    }

    /// The entries with their keys as reports write them: (phase, collective) text.
    pub fn as_text(&self) -> BTreeMap<(String, String), Traffic> {
        self.traffic.iter().map(|((p, c), t)| ((p.to_string(), c.to_string()), *t)).collect()
    }

    /// Number of fallbacks of all ops.
    pub fn total_fallbacks(&self) -> u64 {
        self.fallbacks.values().sum()
    }

    /// Number of empty-work attempts of all kinds.
    pub fn total_empty_ops(&self) -> u64 {
        self.empty_ops.values().sum()
    }

    /// Adds `other`'s entries to this one's (the processes of one mesh: see
    /// [`crate::MeshDevice::job_ledger_snapshot`]).
    pub fn add(&mut self, other: &LedgerSnapshot) {
        for (k, t) in &other.traffic {
            *self.traffic.entry(k.clone()).or_default() += *t;
        }
        for (k, n) in &other.fallbacks {
            *self.fallbacks.entry(k.clone()).or_default() += n;
        }
        for (k, n) in &other.empty_ops {
            *self.empty_ops.entry(k.clone()).or_default() += n;
        }
        for p in &other.phase_order {
            if !self.phase_order.contains(p) {
                self.phase_order.push(p.clone());
            }
        }
    }

    /// The snapshot as bytes, for sending it to another process.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let traffic: Vec<(&(Phase, CollectiveKey), &Traffic)> = self.traffic.iter().collect();
        serde_json::to_vec(&(traffic, &self.fallbacks, &self.empty_ops, &self.phase_order))
            .expect("a ledger serialises")
    }

    /// A snapshot sent by [`LedgerSnapshot::to_bytes`].
    pub(crate) fn from_bytes(bytes: &[u8]) -> LedgerSnapshot {
        type Wire = (Vec<((Phase, CollectiveKey), Traffic)>, BTreeMap<String, u64>, BTreeMap<String, u64>, Vec<Phase>);
        let (traffic, fallbacks, empty_ops, phase_order): Wire =
            serde_json::from_slice(bytes).expect("Hybrid: another process sent a ledger that does not parse");
        LedgerSnapshot { traffic: traffic.into_iter().collect(), fallbacks, empty_ops, phase_order }
    }
}

/// The mutable ledger a mesh owns.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    snapshot: LedgerSnapshot,
    phases: Vec<Phase>,
    base: Option<Phase>,
}

impl Ledger {
    pub(crate) fn record(&mut self, collective: CollectiveKey, traffic: Traffic) {
        if traffic == Traffic::default() {
            return;
        }
        let phase = self.current_phase().cloned().unwrap_or_else(Phase::unlabelled);
        if !self.snapshot.phase_order.contains(&phase) {
            self.snapshot.phase_order.push(phase.clone());
        }
        *self.snapshot.traffic.entry((phase, collective)).or_default() += traffic;
    }

    pub(crate) fn fallback(&mut self, op: &str) {
        *self.snapshot.fallbacks.entry(op.to_string()).or_default() += 1;
    }

    pub(crate) fn empty(&mut self, what: &str) {
        *self.snapshot.empty_ops.entry(what.to_string()).or_default() += 1;
    }

    pub(crate) fn snapshot(&self) -> LedgerSnapshot {
        self.snapshot.clone()
    }

    pub(crate) fn reset(&mut self) {
        self.snapshot = LedgerSnapshot::default();
    }

    pub(crate) fn push_phase(&mut self, phase: Phase) {
        self.phases.push(phase);
    }

    pub(crate) fn pop_phase(&mut self) {
        self.phases.pop();
    }

    pub(crate) fn set_base_phase(&mut self, phase: Option<Phase>) {
        self.base = phase;
    }

    pub(crate) fn current_phase(&self) -> Option<&Phase> {
        self.phases.last().or(self.base.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::keys::CollectiveKey;

    fn key(phase: &str, collective: &str) -> (Phase, CollectiveKey) {
        (Phase::parse(phase), CollectiveKey::parse(collective).unwrap())
    }

    /// Three entries of distinct sizes, one of them partly across processes.
    fn snapshot() -> LedgerSnapshot {
        let mut across = Traffic::within(1000, 3);
        across.count(24, true);
        let mut s = LedgerSnapshot::default();
        s.traffic.insert(key("fc6:forward", "all_gather"), Traffic::within(100, 2));
        s.traffic.insert(key("fc6:sync", "all_reduce"), across);
        s.traffic.insert(key("conv1:sync", "all_reduce"), Traffic::within(10_000, 5));
        s.fallbacks.insert("float_sort".into(), 3);
        s.empty_ops.insert("float Shard(0) [1]".into(), 5);
        s.phase_order = vec![Phase::parse("fc6:forward"), Phase::parse("fc6:sync")];
        s
    }

    #[test]
    fn traffic_within_a_process_crosses_none() {
        let t = Traffic::within(100, 2);
        assert_eq!((t.bytes, t.messages, t.cross_process_bytes, t.cross_process_messages), (100, 2, 0, 0));
        let mut t = t;
        t.count(24, true);
        t.count(8, false);
        assert_eq!((t.bytes, t.messages, t.cross_process_bytes, t.cross_process_messages), (132, 4, 24, 1));
    }

    #[test]
    fn a_snapshot_sums_its_entries_by_entry_phase_collective_and_all() {
        let s = snapshot();
        assert_eq!(s.entry("fc6:forward", "all_gather"), Traffic::within(100, 2));
        assert_eq!(s.entry("fc6:forward", "all_reduce"), Traffic::default(), "nothing moved there");
        let sync = s.entry("fc6:sync", "all_reduce");
        assert_eq!(
            (sync.bytes, sync.messages, sync.cross_process_bytes, sync.cross_process_messages),
            (1024, 4, 24, 1)
        );
        assert_eq!(s.by_phase("fc6:sync"), sync);
        assert_eq!(s.by_collective("all_reduce").bytes, 11_024);
        assert_eq!(s.by_collective("all_reduce").messages, 9);
        let total = s.total();
        assert_eq!(
            (total.bytes, total.messages, total.cross_process_bytes, total.cross_process_messages),
            (11_124, 11, 24, 1)
        );
        let text = s.as_text();
        assert_eq!(text.len(), 3);
        assert_eq!(text[&("fc6:forward".to_string(), "all_gather".to_string())], Traffic::within(100, 2));
        assert_eq!(text[&("conv1:sync".to_string(), "all_reduce".to_string())], Traffic::within(10_000, 5));
        let mut twice = s.clone();
        twice.add(&s);
        assert_eq!(twice.total().bytes, 2 * total.bytes);
        assert_eq!(twice.total().cross_process_messages, 2);
        assert_eq!(twice.entry("conv1:sync", "all_reduce"), Traffic::within(20_000, 10));
        assert_eq!((twice.total_fallbacks(), twice.total_empty_ops()), (6, 10));
        assert_eq!(twice.phase_order, s.phase_order, "a phase is listed once");
        let mut other = LedgerSnapshot::default();
        other.phase_order = vec![Phase::parse("conv1:sync"), Phase::parse("fc6:sync")];
        twice.add(&other);
        let order: Vec<String> = twice.phase_order.iter().map(|p| p.to_string()).collect();
        assert_eq!(order, ["fc6:forward", "fc6:sync", "conv1:sync"], "new phases after, in their order");
    }

    #[test]
    fn a_ledger_records_under_the_current_phase_and_counts_fallbacks_and_empty_pieces() {
        let mut l = Ledger::default();
        let gather = || CollectiveKey::parse("all_gather").unwrap();
        l.record(gather(), Traffic::default());
        assert_eq!(l.snapshot(), LedgerSnapshot::default(), "nothing moved: no entry, no phase");
        l.record(gather(), Traffic::within(8, 1));
        l.set_base_phase(Some(Phase::parse("fc7:backward")));
        l.record(gather(), Traffic::within(16, 2));
        l.push_phase(Phase::parse("fc6:sync"));
        l.record(gather(), Traffic::within(32, 4));
        l.record(gather(), Traffic::within(32, 4));
        l.pop_phase();
        l.record(gather(), Traffic::within(64, 8));
        l.fallback("float_sort");
        l.fallback("float_sort");
        l.empty("float Shard(0) [1]");
        let s = l.snapshot();
        assert_eq!(s.entry(crate::UNLABELLED, "all_gather"), Traffic::within(8, 1));
        assert_eq!(s.entry("fc7:backward", "all_gather"), Traffic::within(80, 10));
        assert_eq!(s.entry("fc6:sync", "all_gather"), Traffic::within(64, 8));
        let order: Vec<String> = s.phase_order.iter().map(|p| p.to_string()).collect();
        assert_eq!(order, [crate::UNLABELLED, "fc7:backward", "fc6:sync"]);
        assert_eq!((s.fallbacks["float_sort"], s.empty_ops["float Shard(0) [1]"]), (2, 1));
        assert_eq!(LedgerSnapshot::from_bytes(&s.to_bytes()), s, "what another process receives");
        l.reset();
        assert_eq!(l.snapshot(), LedgerSnapshot::default());
    }
}
