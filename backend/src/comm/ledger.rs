//! The communication ledger: every byte that crosses ranks, by collective and by phase.

use std::collections::BTreeMap;

/// Bytes and messages of one kind of transfer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

/// The phase recorded when the caller set none.
pub const UNLABELLED: &str = "-";

/// What moved between ranks since the last reset: traffic per (phase, collective), the ops
/// that had no placement rule and ran gathered (fallbacks), by op name, and the empty pieces
/// that reached a rank (empty work: some inner backends, CubeCL CUDA among them, fail on a
/// kernel launched over zero elements).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerSnapshot {
    /// Traffic keyed by (phase, collective name).
    pub traffic: BTreeMap<(String, String), Traffic>,
    /// Fallback count by op name.
    pub fallbacks: BTreeMap<String, u64>,
    /// Tensors holding a zero-element piece on some rank, by what they were (kind, placement,
    /// global shape). Every inner op run on such a piece would be empty work; `Hybrid`'s rules
    /// never make one from non-empty inputs, so anything here is a bug or an empty user tensor.
    pub empty_ops: BTreeMap<String, u64>,
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

    /// Total of one collective over all phases.
    pub fn by_collective(&self, collective: &str) -> Traffic {
        let mut t = Traffic::default();
        for ((_, c), v) in &self.traffic {
            if c == collective {
                t += *v;
            }
        }
        t
    }

    /// Total of one phase over all collectives.
    pub fn by_phase(&self, phase: &str) -> Traffic {
        let mut t = Traffic::default();
        for ((p, _), v) in &self.traffic {
            if p == phase {
                t += *v;
            }
        }
        t
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
    }

    /// The snapshot as bytes, for sending it to another process.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let traffic: Vec<(&(String, String), [u64; 4])> = self
            .traffic
            .iter()
            .map(|(k, t)| (k, [t.bytes, t.messages, t.cross_process_bytes, t.cross_process_messages]))
            .collect();
        serde_json::to_vec(&(traffic, &self.fallbacks, &self.empty_ops)).expect("a ledger serialises")
    }

    /// A snapshot sent by [`LedgerSnapshot::to_bytes`].
    pub(crate) fn from_bytes(bytes: &[u8]) -> LedgerSnapshot {
        type Wire = (Vec<((String, String), [u64; 4])>, BTreeMap<String, u64>, BTreeMap<String, u64>);
        let (traffic, fallbacks, empty_ops): Wire =
            serde_json::from_slice(bytes).expect("Hybrid: another process sent a ledger that does not parse");
        let traffic = traffic
            .into_iter()
            .map(|(k, [b, m, cb, cm])| {
                (k, Traffic { bytes: b, messages: m, cross_process_bytes: cb, cross_process_messages: cm })
            })
            .collect();
        LedgerSnapshot { traffic, fallbacks, empty_ops }
    }
}

/// The mutable ledger a mesh owns.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    snapshot: LedgerSnapshot,
    phases: Vec<String>,
    base: Option<String>,
}

impl Ledger {
    pub(crate) fn record(&mut self, collective: &str, traffic: Traffic) {
        if traffic == Traffic::default() {
            return;
        }
        let phase = self.current_phase().unwrap_or(UNLABELLED).to_string();
        *self.snapshot.traffic.entry((phase, collective.to_string())).or_default() += traffic;
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

    pub(crate) fn push_phase(&mut self, phase: &str) {
        self.phases.push(phase.to_string());
    }

    pub(crate) fn pop_phase(&mut self) {
        self.phases.pop();
    }

    pub(crate) fn set_base_phase(&mut self, phase: Option<&str>) {
        self.base = phase.map(str::to_string);
    }

    pub(crate) fn current_phase(&self) -> Option<&str> {
        self.phases.last().or(self.base.as_ref()).map(String::as_str)
    }
}

/// Collective names as they appear in the ledger.
pub mod names {
    /// [`crate::collectives::all_gather`].
    pub const ALL_GATHER: &str = "all_gather";
    /// [`crate::collectives::reduce_scatter`].
    pub const REDUCE_SCATTER: &str = "reduce_scatter";
    /// [`crate::collectives::all_reduce`].
    pub const ALL_REDUCE: &str = "all_reduce";
    /// [`crate::collectives::broadcast`].
    pub const BROADCAST: &str = "broadcast";
    /// [`crate::collectives::send`].
    pub const SEND: &str = "send";
}
