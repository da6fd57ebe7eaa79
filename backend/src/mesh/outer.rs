//! The dimensions of a mesh outside the one a process holds: along each, the processes that
//! hold the ranks whose other coordinates are this process's (one column of the mesh), and
//! the dimension's name. A mesh of N nodes x L local ranks has one (`node`, over the N
//! nodes' processes); a 1-D mesh has none. Fixed when the mesh is made.

use std::sync::Arc;

use crate::transport::process_group::ProcessGroup;

/// One dimension of a mesh across processes: its name and the processes along it, this one
/// among them at index `group.rank()`.
#[derive(Clone)]
pub struct OuterDim {
    pub(crate) name: String,
    pub(crate) group: Arc<dyn ProcessGroup>,
}

impl OuterDim {
    /// The dimension `name` over the processes of `group` (this process's column).
    pub fn new(name: impl Into<String>, group: Arc<dyn ProcessGroup>) -> Self {
        Self { name: name.into(), group }
    }

    /// Its name (`node`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many indices it has (the processes along it).
    pub fn size(&self) -> usize {
        self.group.size()
    }

    /// This process's index along it.
    pub fn index(&self) -> usize {
        self.group.rank()
    }

    /// The processes along it.
    pub fn group(&self) -> &Arc<dyn ProcessGroup> {
        &self.group
    }
}

impl std::fmt::Debug for OuterDim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} of {}", self.name, self.index(), self.size())
    }
}
