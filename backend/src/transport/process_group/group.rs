//! A group of processes (the trait every engine implements), how a collective fails across
//! them ([`GroupError`]), and the group of one process ([`Solo`]).

use std::time::Duration;

/// A group of processes that run the same program, each driving its own ranks of a mesh.
pub trait ProcessGroup: Send + Sync + 'static {
    /// This process's index in the group, 0..size.
    fn rank(&self) -> usize;

    /// The number of processes.
    fn size(&self) -> usize;

    /// Every process sends `outgoing[p]` to process p and receives what every process sent it
    /// (`incoming[p]` from process p; its own entry is its own `outgoing` entry, untouched).
    /// A collective: every process calls it, in the same order, with one buffer per process.
    /// A lost peer ends the call with an error naming it (never a hang).
    fn all_to_all(&self, outgoing: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, GroupError>;

    /// What the group is, for messages (`"MPI, process 1 of 4"`).
    fn describe(&self) -> String {
        format!("process {} of {}", self.rank(), self.size())
    }

    /// Process `root`'s `bytes` on every process (`bytes` is `Some` on `root` only): how a
    /// communicator's unique id (NCCL's) reaches the processes that join it. A collective.
    fn broadcast(&self, root: usize, bytes: Option<Vec<u8>>) -> Result<Vec<u8>, GroupError> {
        assert_eq!(bytes.is_some(), self.rank() == root, "broadcast: the bytes are given on process {root} only");
        let outgoing = match bytes {
            Some(b) => vec![b; self.size()],
            None => vec![Vec::new(); self.size()],
        };
        Ok(self.all_to_all(outgoing)?.swap_remove(root))
    }

    /// Every process's `mine`, on every process, in process order. A collective.
    fn all_gather(&self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>, GroupError> {
        self.all_to_all(vec![mine; self.size()])
    }
}

/// Why an exchange across processes failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupError {
    /// A process left the group (it ended or failed) while others still exchanged with it.
    Lost {
        /// The process that is gone.
        process: usize,
    },
    /// No answer from the other processes within the group's limit.
    TimedOut {
        /// How long this process waited.
        waited: Duration,
    },
    /// The transport below failed.
    Transport(String),
}

impl std::fmt::Display for GroupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupError::Lost { process } => write!(f, "process {process} of the mesh is gone"),
            GroupError::TimedOut { waited } => {
                write!(f, "no answer from the other processes of the mesh in {:.0} s", waited.as_secs_f64())
            }
            GroupError::Transport(e) => write!(f, "the exchange between processes failed: {e}"),
        }
    }
}

impl std::error::Error for GroupError {}

/// What a collective inside a tensor op unwinds with when its exchange fails (a Burn op
/// cannot return an error). A process that stopped because another left
/// ([`GroupError::Lost`]) unwinds without the panic hook, so nothing is printed for it: the one
/// that left says why; [`ThreadedGroup::try_run`](crate::ThreadedGroup::try_run) hands it back
/// as the error. Every other failure is an ordinary panic with the error's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveFailed(pub GroupError);

/// Stops the collective described by `what` on the group error `e`, as [`CollectiveFailed`]
/// says.
pub(crate) fn collective_failed(e: GroupError, what: &str) -> ! {
    match e {
        GroupError::Lost { .. } => std::panic::resume_unwind(Box::new(CollectiveFailed(e))),
        e => panic!("Hybrid: {e} ({what})"),
    }
}

/// The sum over `group`'s processes of each one's `n` (an exchange of one number each):
/// the length of a dimension split over the processes, from each one's share. Shape
/// bookkeeping, not tensor traffic: no ledger counts it. `what` names the collective if the
/// exchange fails.
pub(crate) fn summed_over(group: &dyn ProcessGroup, n: usize, what: &str) -> usize {
    let incoming = group.all_gather((n as u64).to_le_bytes().to_vec()).unwrap_or_else(|e| collective_failed(e, what));
    incoming.iter().map(|b| u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as usize).sum()
}

/// One process: nothing ever crosses (every mesh made without a group is on it).
#[derive(Debug, Clone, Copy, Default)]
pub struct Solo;

impl ProcessGroup for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_to_all(&self, outgoing: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, GroupError> {
        Ok(outgoing)
    }
    fn describe(&self) -> String {
        "one process".to_string()
    }
}
