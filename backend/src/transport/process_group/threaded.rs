//! P processes stood up as P threads of one process (tests, and trying a multi-process layout
//! without a launcher).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::group::{CollectiveFailed, GroupError, ProcessGroup};

/// The mailbox the threads of a [`ThreadedGroup`] share.
struct Mailbox {
    /// `mail[src][dst]`: what process src sent process dst in the current round.
    mail: Vec<Vec<Option<Vec<u8>>>>,
    /// Processes that reached the barrier of the current generation.
    arrived: usize,
    /// Barrier generations passed (two per exchange: delivered, then read).
    generation: u64,
    /// The first process whose handle was dropped (its thread ended, by returning or by
    /// unwinding): the others stop waiting for it.
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
/// processes, with no launcher. A thread that ends (returning an error, or panicking) leaves
/// the group, and every other thread's next exchange fails naming it instead of waiting
/// forever.
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

    /// Runs `body(group)` on `size` threads, one per process, and returns each one's outcome
    /// in process order, once all have ended: its result, or the [`GroupError`] a collective
    /// of its stopped on ([`CollectiveFailed`]) because another process left first. So a
    /// process whose body returns an error (and leaves) stops the others, and the caller sees
    /// that error among the results rather than a panic. Any other panic is raised again here.
    pub fn try_run<T: Send>(size: usize, body: impl Fn(ThreadedGroup) -> T + Sync) -> Vec<Result<T, GroupError>> {
        let groups = Self::new(size, Duration::from_secs(600));
        let ended: Vec<std::thread::Result<T>> = std::thread::scope(|scope| {
            let handles: Vec<_> = groups.into_iter().map(|g| scope.spawn(|| body(g))).collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut outcomes = Vec::with_capacity(size);
        let mut panicked = None;
        for end in ended {
            match end {
                Ok(t) => outcomes.push(Ok(t)),
                Err(payload) => match payload.downcast::<CollectiveFailed>() {
                    Ok(failed) => outcomes.push(Err(failed.0)),
                    Err(other) => {
                        panicked.get_or_insert(other);
                    }
                },
            }
        }
        if let Some(payload) = panicked {
            std::panic::resume_unwind(payload);
        }
        outcomes
    }

    /// [`try_run`](Self::try_run) where every process is expected to finish: their results
    /// in process order. A process that stopped because another left panics here, naming it.
    pub fn run<T: Send>(size: usize, body: impl Fn(ThreadedGroup) -> T + Sync) -> Vec<T> {
        Self::try_run(size, body)
            .into_iter()
            .enumerate()
            .map(|(p, r)| r.unwrap_or_else(|e| panic!("threaded process {p} of {size} stopped: {e}")))
            .collect()
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

    fn all_to_all(&self, outgoing: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, GroupError> {
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
    /// A process whose handle goes (its thread returned, or unwound from a panic) leaves the
    /// group: the others' next exchange fails instead of waiting for it. An exchange that
    /// every process completed is not affected: its barriers passed before anyone left.
    fn drop(&mut self) {
        let mut state = self.lock();
        state.lost.get_or_insert(self.rank);
        self.shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::process_group::group::Solo;

    #[test]
    fn every_process_receives_what_each_sent_it() {
        let got = ThreadedGroup::run(3, |g| {
            let me = g.rank();
            let mut rounds = Vec::new();
            for round in 0..4u8 {
                let out = (0..3).map(|dst| vec![me as u8, dst as u8, round]).collect();
                rounds.push(g.all_to_all(out).unwrap());
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
            let outcome = scope.spawn(move || a.all_to_all(vec![vec![1], vec![2]])).join().unwrap();
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
        match a.all_to_all(vec![vec![], vec![]]) {
            Err(GroupError::TimedOut { waited }) => assert!(waited >= Duration::from_millis(50)),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    #[test]
    fn broadcast_hands_every_process_the_roots_bytes() {
        for root in 0..3 {
            let got = ThreadedGroup::run(3, |g| {
                let mine = (g.rank() == root).then(|| vec![root as u8 + 7; 128]);
                g.broadcast(root, mine).unwrap()
            });
            assert_eq!(got, vec![vec![root as u8 + 7; 128]; 3], "root {root}");
        }
        assert_eq!(Solo.broadcast(0, Some(vec![1, 2])).unwrap(), vec![1, 2]);
    }

    #[test]
    fn all_gather_lists_every_process_in_order() {
        let got = ThreadedGroup::run(4, |g| g.all_gather(vec![g.rank() as u8; g.rank() + 1]).unwrap());
        let expected: Vec<Vec<u8>> = (0..4u8).map(|p| vec![p; p as usize + 1]).collect();
        assert!(got.iter().all(|g| g == &expected), "{got:?}");
    }
}
