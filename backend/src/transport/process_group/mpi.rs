//! Processes started by `mpirun` or `srun --mpi=pmix`, joined through MPI (the `mpi` crate on
//! the system's Open MPI). The pieces cross host-staged: one all-to-all of the buffer sizes,
//! then one variable all-to-all of the bytes, per collective.
//!
//! The crate's communicators are neither `Send` nor `Sync`, and MPI's default threading level
//! wants every call from the thread that initialised it: one thread of the group's own owns
//! MPI from `MPI_Init` to `MPI_Finalize`, and every exchange is a request to it. A request
//! not answered within the group's limit fails with [`GroupError::TimedOut`] (a peer that
//! hangs); a peer that dies makes `mpirun` end the job, naming the rank it lost.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use mpi::datatype::{Partition, PartitionMut};
use mpi::traits::*;

use super::group::{GroupError, ProcessGroup};

type Reply = Sender<Result<Vec<Vec<u8>>, GroupError>>;

enum Request {
    Exchange(Vec<Vec<u8>>, Reply),
    /// A barrier, then `MPI_Finalize`, then the thread ends.
    Finish(Sender<()>),
}

/// The processes of this MPI job (`MPI_COMM_WORLD`), in MPI's rank order.
pub struct MpiGroup {
    rank: usize,
    size: usize,
    host: String,
    timeout: Duration,
    requests: Mutex<Option<Sender<Request>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    sent: std::sync::atomic::AtomicU64,
}

impl MpiGroup {
    /// Joins the job's processes (MPI_Init, on the group's own thread). `timeout` bounds every
    /// exchange. Fails when MPI cannot start (not launched by an MPI launcher is fine: then
    /// this process is a job of one) or was started already in this process.
    pub fn join(timeout: Duration) -> Result<MpiGroup, GroupError> {
        let (started_tx, started_rx) = mpsc::channel::<Result<(usize, usize, String), GroupError>>();
        let (requests_tx, requests_rx) = mpsc::channel::<Request>();
        let worker = std::thread::Builder::new()
            .name("owt-mpi".into())
            .spawn(move || serve(started_tx, requests_rx))
            .map_err(|e| GroupError::Transport(format!("cannot start the MPI thread: {e}")))?;
        let (rank, size, host) = started_rx
            .recv()
            .map_err(|_| GroupError::Transport("the MPI thread ended while starting MPI".into()))??;
        Ok(MpiGroup {
            rank,
            size,
            host,
            timeout,
            requests: Mutex::new(Some(requests_tx)),
            worker: Mutex::new(Some(worker)),
            sent: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Bytes this process has handed MPI for other processes so far (the pieces with their
    /// headers, against which the ledger's cross-process bytes count the pieces alone).
    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits for every process (a barrier), then ends MPI (`MPI_Finalize`). Later exchanges
    /// fail. Called once at the end of a job; dropping the group does it too.
    pub fn finish(&self) {
        let sender = self.requests.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(sender) = sender {
            let (done_tx, done_rx) = mpsc::channel();
            if sender.send(Request::Finish(done_tx)).is_ok() {
                let _ = done_rx.recv_timeout(self.timeout);
            }
        }
        if let Some(worker) = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = worker.join();
        }
    }
}

impl Drop for MpiGroup {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The MPI thread: starts MPI, answers requests in order, finalises.
fn serve(started: Sender<Result<(usize, usize, String), GroupError>>, requests: Receiver<Request>) {
    let Some(universe) = mpi::initialize() else {
        let _ = started.send(Err(GroupError::Transport("MPI was initialised already in this process".into())));
        return;
    };
    let world = universe.world();
    let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
    let _ = started.send(Ok((world.rank() as usize, world.size() as usize, host)));
    while let Ok(request) = requests.recv() {
        match request {
            Request::Exchange(outgoing, reply) => {
                let _ = reply.send(all_to_all(&world, outgoing));
            }
            Request::Finish(done) => {
                world.barrier();
                drop(universe);
                let _ = done.send(());
                return;
            }
        }
    }
    // Every sender gone without a Finish: end MPI all the same (dropping the universe).
}

fn count(n: usize) -> Result<mpi::Count, GroupError> {
    mpi::Count::try_from(n)
        .map_err(|_| GroupError::Transport(format!("a buffer of {n} bytes is over MPI's 2 GiB count")))
}

fn displacements(counts: &[mpi::Count]) -> Vec<mpi::Count> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let here = *at;
            *at += c;
            Some(here)
        })
        .collect()
}

/// One variable all-to-all: sizes first, then bytes.
fn all_to_all(world: &mpi::topology::SimpleCommunicator, outgoing: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, GroupError> {
    let p = world.size() as usize;
    if outgoing.len() != p {
        return Err(GroupError::Transport(format!("{} buffers for {p} processes", outgoing.len())));
    }
    let send_counts: Vec<mpi::Count> = outgoing.iter().map(|b| count(b.len())).collect::<Result<_, _>>()?;
    let mut recv_counts = vec![0 as mpi::Count; p];
    world.all_to_all_into(&send_counts[..], &mut recv_counts[..]);
    // One byte past the counted ones in each buffer, never sent: an empty Vec's address is
    // 0x1, which is Open MPI's MPI_IN_PLACE (an all-to-all with nothing to send fails then).
    let mut send: Vec<u8> = outgoing.concat();
    count(send.len())?;
    send.push(0);
    let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
    count(total)?;
    let mut recv = vec![0u8; total + 1];
    {
        let (send_at, recv_at) = (displacements(&send_counts), displacements(&recv_counts));
        let s = Partition::new(&send[..], &send_counts[..], &send_at[..]);
        let mut r = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_at[..]);
        world.all_to_all_varcount_into(&s, &mut r);
    }
    let mut incoming = Vec::with_capacity(p);
    let mut at = 0;
    for &c in &recv_counts {
        incoming.push(recv[at..at + c as usize].to_vec());
        at += c as usize;
    }
    Ok(incoming)
}

impl ProcessGroup for MpiGroup {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_to_all(&self, outgoing: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, GroupError> {
        let (reply_tx, reply_rx) = mpsc::channel();
        let to_others: usize = outgoing.iter().enumerate().filter(|(p, _)| *p != self.rank).map(|(_, b)| b.len()).sum();
        self.sent.fetch_add(to_others as u64, std::sync::atomic::Ordering::Relaxed);
        {
            let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
            let sender = requests.as_ref().ok_or_else(|| GroupError::Transport("MPI has been finished".into()))?;
            sender
                .send(Request::Exchange(outgoing, reply_tx))
                .map_err(|_| GroupError::Transport("the MPI thread is gone".into()))?;
        }
        match reply_rx.recv_timeout(self.timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(GroupError::TimedOut { waited: self.timeout }),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(GroupError::Transport("the MPI thread is gone".into())),
        }
    }

    fn describe(&self) -> String {
        format!("MPI process {} of {} on {}", self.rank, self.size, self.host)
    }
}
