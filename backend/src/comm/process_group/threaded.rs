//! P processes stood up as P threads of one process (tests, and trying a multi-process layout
//! without a launcher).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{GroupError, ProcessGroup};

/// The mailbox the threads of a [`ThreadedGroup`] share.
struct Mailbox {
    /// `mail[src][dst]`: what process src sent process dst in the current round.
    mail: Vec<Vec<Option<Vec<u8>>>>,
    /// Processes that reached the barrier of the current generation.
    arrived: usize,
    /// Barrier generations passed (two per exchange: delivered, then read).
    generation: u64,
    /// A process whose thread ended by a panic: the others stop waiting for it.
    lost: Option<usize>,
}

struct Shared {
    size: usize,
    state: Mutex<Mailbox>,
    changed: Condvar,
    timeout: Duration,
}

/// P processes stood up as P threads of this process, exchanging through shared memory: the
/// same collectives, the same pieces on each "process", the same ledger entries as real
/// processes, with no launcher. A thread that panics leaves the group, and every other
/// thread's next exchange fails naming it instead of waiting forever.
pub struct ThreadedGroup {
    rank: usize,
    shared: Arc<Shared>,
}

impl ThreadedGroup {
    /// The handles of a group of `size` processes, one per thread to run them on (handle p
    /// is process p). Exchanges fail after `timeout` without an answer.
    pub fn new(size: usize, timeout: Duration) -> Vec<ThreadedGroup> {
        assert!(size >= 1, "a process group needs at least one process, got 0");
        let shared = Arc::new(Shared {
            size,
            state: Mutex::new(Mailbox { mail: vec![vec![None; size]; size], arrived: 0, generation: 0, lost: None }),
            changed: Condvar::new(),
            timeout,
        });
        (0..size).map(|rank| ThreadedGroup { rank, shared: shared.clone() }).collect()
    }

    /// Runs `body(group)` on `size` threads, one per process, and returns their results in
    /// process order (the first panic of any of them is raised again here, after all ended).
    pub fn run<T: Send>(size: usize, body: impl Fn(ThreadedGroup) -> T + Sync) -> Vec<T> {
        let groups = Self::new(size, Duration::from_secs(600));
        std::thread::scope(|scope| {
            let handles: Vec<_> = groups.into_iter().map(|g| scope.spawn(|| body(g))).collect();
            let results: Vec<std::thread::Result<T>> = handles.into_iter().map(|h| h.join()).collect();
            results.into_iter().map(|r| r.unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        })
    }

    fn lock(&self) -> MutexGuard<'_, Mailbox> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until every process has arrived at this generation's barrier.
    fn barrier<'a>(&self, mut state: MutexGuard<'a, Mailbox>) -> Result<MutexGuard<'a, Mailbox>, GroupError> {
        let generation = state.generation;
        state.arrived += 1;
        if state.arrived == self.shared.size {
            state.arrived = 0;
            state.generation += 1;
            self.shared.changed.notify_all();
            return Ok(state);
        }
        let start = Instant::now();
        while state.generation == generation {
            if let Some(process) = state.lost {
                return Err(GroupError::Lost { process });
            }
            let waited = start.elapsed();
            if waited >= self.shared.timeout {
                return Err(GroupError::TimedOut { waited });
            }
            let (next, _) = self
                .shared
                .changed
                .wait_timeout(state, self.shared.timeout - waited)
                .unwrap_or_else(|e| e.into_inner());
            state = next;
        }
        Ok(state)
    }
}

impl ProcessGroup for ThreadedGroup {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn exchange(&self, outgoing: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, GroupError> {
        let p = self.shared.size;
        assert_eq!(outgoing.len(), p, "exchange: {} buffers for a group of {p} processes", outgoing.len());
        let mut state = self.lock();
        if let Some(process) = state.lost {
            return Err(GroupError::Lost { process });
        }
        for (dst, buffer) in outgoing.into_iter().enumerate() {
            state.mail[self.rank][dst] = Some(buffer);
        }
        let mut state = self.barrier(state)?;
        let incoming = (0..p).map(|src| state.mail[src][self.rank].take().unwrap_or_default()).collect();
        // Nobody writes the next round before everyone has read this one.
        drop(self.barrier(state)?);
        Ok(incoming)
    }

    fn describe(&self) -> String {
        format!("threaded process {} of {}", self.rank, self.shared.size)
    }
}

impl Drop for ThreadedGroup {
    /// A thread unwinding from a panic leaves the group: the others fail instead of waiting.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = self.lock();
            state.lost.get_or_insert(self.rank);
            self.shared.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process_group::GroupError;

    #[test]
    fn every_process_receives_what_each_sent_it() {
        let got = ThreadedGroup::run(3, |g| {
            let me = g.rank();
            let mut rounds = Vec::new();
            for round in 0..4u8 {
                let out = (0..3).map(|dst| vec![me as u8, dst as u8, round]).collect();
                rounds.push(g.exchange(out).unwrap());
            }
            rounds
        });
        for (me, rounds) in got.iter().enumerate() {
            for (round, incoming) in rounds.iter().enumerate() {
                let want: Vec<Vec<u8>> = (0..3).map(|src| vec![src as u8, me as u8, round as u8]).collect();
                assert_eq!(incoming, &want, "process {me}, round {round}");
            }
        }
    }

    #[test]
    fn a_process_that_panics_is_named_by_the_others_instead_of_a_hang() {
        let groups = ThreadedGroup::new(2, Duration::from_secs(60));
        let outcome = std::thread::scope(|scope| {
            let mut it = groups.into_iter();
            let (a, b) = (it.next().unwrap(), it.next().unwrap());
            let failing = scope.spawn(move || {
                let _b = b;
                panic!("process 1 fails");
            });
            let outcome = scope.spawn(move || a.exchange(vec![vec![1], vec![2]])).join().unwrap();
            assert!(failing.join().is_err(), "process 1 panicked");
            outcome
        });
        assert_eq!(outcome, Err(GroupError::Lost { process: 1 }));
    }

    #[test]
    fn a_silent_peer_times_out() {
        let mut groups = ThreadedGroup::new(2, Duration::from_millis(50));
        let _silent = groups.pop();
        let a = groups.pop().unwrap();
        match a.exchange(vec![vec![], vec![]]) {
            Err(GroupError::TimedOut { waited }) => assert!(waited >= Duration::from_millis(50)),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }
}
