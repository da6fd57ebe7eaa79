//! The processes a mesh spans, and the one all-to-all of bytes that crosses them.
//!
//! The shape is JAX's across hosts: every process runs the same program and drives only its
//! own ranks (its local devices); a mesh of K = P x L ranks spans P processes of L ranks each,
//! rank r living on process r / L. Collectives (`collectives.rs`) combine the local pieces
//! themselves and hand everything bound for another process to [`ProcessGroup::all_to_all`],
//! which every process calls in the same order (the program is the same everywhere).
//!
//! Engines, never a home-made network layer: [`Solo`] is one process (today's path, nothing
//! crosses), [`ThreadedGroup`] stands P processes up as threads of one process (tests, and
//! trying a multi-process layout without a launcher), and `MpiGroup` (cargo feature `mpi`)
//! crosses real processes through MPI.

mod group;
mod launch;
#[cfg(feature = "mpi")]
mod mpi;
mod threaded;

#[cfg(feature = "mpi")]
pub use self::mpi::MpiGroup;
pub(crate) use group::{collective_failed, summed_over};
pub use group::{CollectiveFailed, GroupError, ProcessGroup, Solo};
pub use launch::Launch;
pub use threaded::ThreadedGroup;
