//! Two-dimensional meshes with named dimensions: N nodes x L local ranks, as PyTorch's
//! `init_device_mesh((nodes, gpus), ("node", "local"))` or Megatron's data-parallel groups
//! across boxes over tensor-parallel groups inside one.
//!
//! The shape is the way clusters run it: each node is one controller (a process, or a thread
//! standing in for one) holding its L local ranks, and the node dimension is a
//! [`ProcessGroup`] of the N nodes. The mesh's tensors live on [`GridMesh::mesh`] (the node's
//! ranks with the node dimension around them) and carry a placement along each dimension,
//! `[node, local]`: `[Shard(0), Shard(0)]` for the batch, `[Replicate, p]` for a parameter
//! placed `p` by the plan inside each node, `[Partial(sum), p]` for its gradient before the
//! sum over the nodes, `[Shard(d), p]` for a parameter each node stores a slice of
//! (FSDP-style). Every op runs its rule along each dimension, and every collective along the
//! nodes runs over one column of the mesh (the ranks of one local index on every node). What
//! a plan may say along the nodes is [`crate::GridPlan`]'s.
//!
//! A 1-D mesh is a [`MeshDevice`] without outer dimensions, spelled as before.

use std::ops::Range;
use std::sync::Arc;

use burn::tensor::backend::DeviceOps;

use crate::ledger::LedgerSnapshot;
use crate::ledger::{Collective, CollectiveKey};
use crate::mesh::{MeshDevice, OuterDim};
use crate::spec::placement::{shard_ranges, Placement};
use crate::transport::process_group::{ProcessGroup, ThreadedGroup};

/// The default names of a 2-D mesh's dimensions: across nodes, then inside one.
pub const DIM_NAMES: [&str; 2] = ["node", "local"];

/// Why a 2-D mesh cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GridError {
    /// The local mesh itself spans processes; the node dimension is the processes.
    LocalSpansProcesses {
        /// How many processes the local mesh spans.
        processes: usize,
    },
    /// Two dimensions with one name.
    SameNames(String),
    /// The nodes could not compare their meshes.
    Group(String),
    /// Nodes with different numbers of local ranks.
    UnequalNodes {
        /// Local ranks per node, in node order.
        local: Vec<usize>,
    },
}

impl std::fmt::Display for GridError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridError::LocalSpansProcesses { processes } => {
                write!(f, "a 2-D mesh's local dimension lives in one process (its node); this one spans {processes}")
            }
            GridError::Group(e) => write!(f, "the nodes of a 2-D mesh could not agree on its shape: {e}"),
            GridError::SameNames(n) => write!(f, "a mesh's dimensions need two names, got \"{n}\" twice"),
            GridError::UnequalNodes { local } => {
                write!(f, "every node of a 2-D mesh holds the same number of local ranks, got {local:?}")
            }
        }
    }
}

impl std::error::Error for GridError {}

/// A mesh of N x L ranks with named dimensions, seen from one node: its L local ranks (a 1-D
/// mesh) and the group of the N nodes. Global rank of (node n, local l): n x L + l.
#[derive(Clone)]
pub struct GridMesh<D> {
    names: [String; 2],
    nodes: Arc<dyn ProcessGroup>,
    local: MeshDevice<D>,
    /// The local ranks with the node dimension around them: the device of tensors that carry
    /// a placement along both dimensions.
    mesh: MeshDevice<D>,
}

impl<D: DeviceOps> std::fmt::Debug for GridMesh<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GridMesh({}: {}, {}: {}; node {})",
            self.names[0],
            self.nodes.size(),
            self.names[1],
            self.local.size(),
            self.node()
        )
    }
}

impl<D: DeviceOps> GridMesh<D> {
    /// This node's view of a mesh of `nodes.size()` nodes, each holding a mesh like `local`
    /// (inside one process). A collective: every node makes its own, in the same order.
    pub fn new(nodes: Arc<dyn ProcessGroup>, local: MeshDevice<D>) -> Result<Self, GridError> {
        if local.processes() > 1 {
            return Err(GridError::LocalSpansProcesses { processes: local.processes() });
        }
        let counts: Vec<usize> = nodes
            .all_gather((local.size() as u64).to_le_bytes().to_vec())
            .map_err(|e| GridError::Group(e.to_string()))?
            .iter()
            .map(|b| b.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize))
            .collect();
        if counts.iter().any(|&c| c != local.size()) {
            return Err(GridError::UnequalNodes { local: counts });
        }
        let mesh = local.extended(OuterDim::new(DIM_NAMES[0], nodes.clone()));
        Ok(Self { names: DIM_NAMES.map(String::from), nodes, local, mesh })
    }

    /// The same mesh with its dimensions named `outer` (across nodes) and `inner`.
    pub fn with_names(mut self, outer: &str, inner: &str) -> Result<Self, GridError> {
        if outer == inner {
            return Err(GridError::SameNames(outer.to_string()));
        }
        self.names = [outer.to_string(), inner.to_string()];
        self.mesh = self.local.extended(OuterDim::new(outer, self.nodes.clone()));
        Ok(self)
    }

    /// Runs `body` on each of `nodes` nodes of a mesh inside one process, each node a thread
    /// holding its own local mesh (`local(n)`, its L ranks): a 2-D mesh without a launcher.
    /// Results in node order.
    pub fn threaded<T: Send>(
        nodes: usize,
        local: impl Fn(usize) -> MeshDevice<D> + Sync,
        body: impl Fn(GridMesh<D>) -> T + Sync,
    ) -> Vec<T> {
        ThreadedGroup::run(nodes, |group| body(Self::node_of(group, &local)))
    }

    /// [`threaded`](Self::threaded) where a node may end early (its body returns an error,
    /// and it leaves): each node's outcome in node order, the others' being the
    /// [`GroupError`](crate::GroupError) their collectives stopped on
    /// ([`ThreadedGroup::try_run`]).
    pub fn try_threaded<T: Send>(
        nodes: usize,
        local: impl Fn(usize) -> MeshDevice<D> + Sync,
        body: impl Fn(GridMesh<D>) -> T + Sync,
    ) -> Vec<Result<T, crate::GroupError>> {
        ThreadedGroup::try_run(nodes, |group| body(Self::node_of(group, &local)))
    }

    /// Node `group.rank()` of a threaded 2-D mesh, holding `local(n)`.
    fn node_of(group: ThreadedGroup, local: &impl Fn(usize) -> MeshDevice<D>) -> GridMesh<D> {
        let n = group.rank();
        GridMesh::new(Arc::new(group), local(n)).expect("every node holds the same local mesh")
    }

    /// `[N, L]`.
    pub fn shape(&self) -> [usize; 2] {
        [self.nodes.size(), self.local.size()]
    }

    /// All N x L ranks.
    pub fn size(&self) -> usize {
        self.nodes.size() * self.local.size()
    }

    /// The dimensions' names, outer first.
    pub fn names(&self) -> [&str; 2] {
        [&self.names[0], &self.names[1]]
    }

    /// The index of the dimension called `name`.
    pub fn dim(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The size of the dimension called `name`.
    pub fn dim_size(&self, name: &str) -> Option<usize> {
        self.dim(name).map(|d| self.shape()[d])
    }

    /// This node's index along the outer dimension.
    pub fn node(&self) -> usize {
        self.nodes.rank()
    }

    /// The global rank at `[node, local]`.
    pub fn rank_at(&self, coordinates: [usize; 2]) -> usize {
        coordinates[0] * self.local.size() + coordinates[1]
    }

    /// The `[node, local]` coordinates of global rank `rank`.
    pub fn coordinates(&self, rank: usize) -> [usize; 2] {
        [rank / self.local.size(), rank % self.local.size()]
    }

    /// This node's global ranks.
    pub fn node_ranks(&self) -> Range<usize> {
        let l = self.local.size();
        self.node() * l..(self.node() + 1) * l
    }

    /// The sub-mesh along the inner dimension: this node's ranks, a 1-D mesh on which plans run.
    pub fn local(&self) -> &MeshDevice<D> {
        &self.local
    }

    /// The whole mesh as this node holds it: its local ranks with the node dimension around
    /// them, the device of tensors laid out along both dimensions (`[node, local]`: see
    /// [`crate::Distributed::placements`]). Ops on them run each op's rule along each
    /// dimension; their collectives along the nodes are recorded in this mesh's ledger. A
    /// device of its own to Burn: its default dtypes are set as any device's (a
    /// [`crate::GridLayout`] gives it the local ranks' own).
    pub fn mesh(&self) -> &MeshDevice<D> {
        &self.mesh
    }

    /// The sub-mesh along the outer dimension, as the group of nodes (this node's rank l is
    /// with the ranks l of every other node: one column).
    pub fn nodes(&self) -> &Arc<dyn ProcessGroup> {
        &self.nodes
    }

    /// The rows of a batch of `total` this node takes (its block, in node order).
    pub fn node_rows(&self, total: usize) -> Range<usize> {
        shard_ranges(total, self.nodes.size())[self.node()].clone()
    }

    /// What moved between the ranks of the whole mesh since the last reset: every node's
    /// ledger of [`GridMesh::mesh`] summed (a collective over the nodes). Traffic along the
    /// outer dimension is recorded under the collective's name with the dimension's, e.g.
    /// `all_reduce[node]`.
    pub fn ledger_snapshot(&self) -> LedgerSnapshot {
        let mine = self.mesh.job_ledger_snapshot();
        if self.nodes.size() == 1 {
            return mine;
        }
        let every = self
            .nodes
            .all_gather(mine.to_bytes())
            .unwrap_or_else(|e| panic!("Hybrid: {e} ({}, gathering the ledgers of the nodes)", self.nodes.describe()));
        let mut sum = LedgerSnapshot::default();
        for bytes in every {
            sum.add(&LedgerSnapshot::from_bytes(&bytes));
        }
        sum
    }

    /// What a collective along the outer dimension is recorded under (text:
    /// `all_reduce[node]`).
    pub fn outer_collective(&self, collective: Collective) -> CollectiveKey {
        collective.over(&self.names[0])
    }
}

/// The placement of a tensor along each dimension of a 2-D mesh, outer first.
pub type GridPlacement = [Placement; 2];

/// The dim a replicated piece is cut along, locally and for free, before it crosses the nodes
/// sharded along `dim` (a tensor of `dims`, on nodes of `local` ranks), so that it crosses once
/// and not once per local rank: the first other dim with an entry per local rank. None on
/// one local rank, or where no other dim has enough entries (then every local rank sends
/// its whole copy). The summed or gathered pieces are then all-gathered inside the node.
pub fn cut_dim(dims: &[usize], dim: usize, local: usize) -> Option<usize> {
    if local < 2 {
        return None;
    }
    (0..dims.len()).find(|&e| e != dim && dims[e] >= local)
}

/// Whether a pending sum replicated inside each node (placement `placement` there, `rows`
/// long in its first dimension) is summed over the nodes of a mesh of `shape` = [N nodes, L
/// local ranks] by slices: cut locally into one slice per local rank (`Shard(0)`, free),
/// each local rank summing only its slice over the nodes, the slices all-gathered inside the
/// node after, as NCCL's hierarchical all-reduce does. The bytes across nodes are then the
/// tensor's once, not once per local rank. Not where a slice would be empty (fewer rows than
/// local ranks), nor on one node or one local rank.
pub fn sums_by_slices(placement: Placement, rows: usize, shape: [usize; 2]) -> bool {
    let [nodes, local] = shape;
    placement == Placement::Replicate && nodes > 1 && local > 1 && rows >= local
}

/// A placement per dimension as `owt plan` prints it: `[Replicate, Shard(1)]`.
pub fn describe(p: &GridPlacement) -> String {
    format!("[{}, {}]", p[0], p[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::flex::FlexDevice;

    #[test]
    fn ranks_coordinates_and_names_agree() {
        let seen = GridMesh::<FlexDevice>::threaded(
            3,
            |_| MeshDevice::virtual_ranks(FlexDevice, 2),
            |grid| {
                assert_eq!((grid.shape(), grid.size()), ([3, 2], 6));
                for r in 0..6 {
                    assert_eq!(grid.rank_at(grid.coordinates(r)), r);
                }
                let named = grid.clone().with_names("dp", "tp").unwrap();
                assert_eq!((named.dim("tp"), named.dim_size("dp"), named.dim("node")), (Some(1), Some(3), None));
                assert_eq!(grid.clone().with_names("x", "x").unwrap_err(), GridError::SameNames("x".into()));
                (grid.node(), grid.node_ranks(), grid.node_rows(10))
            },
        );
        assert_eq!(seen, vec![(0, 0..2, 0..4), (1, 2..4, 4..7), (2, 4..6, 7..10)]);
    }

    #[test]
    fn nodes_with_different_local_meshes_refuse_naming_the_counts() {
        let outcomes = crate::transport::process_group::ThreadedGroup::run(2, |group| {
            let local = MeshDevice::virtual_ranks(FlexDevice, 1 + group.rank());
            GridMesh::new(Arc::new(group), local).map(|_| ()).unwrap_err()
        });
        assert!(outcomes.iter().all(|e| *e == GridError::UnequalNodes { local: vec![1, 2] }), "{outcomes:?}");
    }
}
