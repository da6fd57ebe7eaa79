//! Where a mesh's ranks are: this process's inner devices, their place among the K ranks, the
//! processes the mesh spans, and how the ledger groups ranks into processes. Fixed when the
//! mesh is made.

use std::ops::Range;
use std::sync::Arc;

use crate::transport::process_group::ProcessGroup;

/// The ranks of a mesh as this process sees them.
pub(super) struct Ranks<D> {
    /// This process's ranks' devices, in rank order (all of them in a one-process mesh).
    pub(super) devices: Vec<D>,
    /// The global rank of `devices[0]`.
    pub(super) first: usize,
    /// Ranks in the whole mesh, over every process (K).
    pub(super) size: usize,
    /// The processes the mesh spans (`Solo` for one).
    pub(super) group: Arc<dyn ProcessGroup>,
    /// Consecutive ranks per process as the ledger counts them: this process's rank count, or
    /// on a one-process mesh made to preview a job of several processes, the previewed count.
    pub(super) per_process: usize,
}

impl<D> Ranks<D> {
    /// The global ranks this process holds.
    pub(super) fn local(&self) -> Range<usize> {
        self.first..self.first + self.devices.len()
    }

    /// The process that holds (or, previewed, would hold) global rank `rank`.
    pub(super) fn process_of(&self, rank: usize) -> usize {
        rank / self.per_process
    }

    /// The inner device of global rank `rank`, if it is one of this process's.
    pub(super) fn device(&self, rank: usize) -> Option<&D> {
        rank.checked_sub(self.first).and_then(|i| self.devices.get(i))
    }
}
