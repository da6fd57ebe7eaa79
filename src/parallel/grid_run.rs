//! Running a job on a 2-D mesh (`--mesh N,L`): where its nodes live (threads of this process,
//! or one process each under mpirun) and the [`GridLayout`] each node trains on.

use std::sync::Arc;

use burn::prelude::*;
use owt_hybrid::{Exchange, GridLayout, GridMesh, GridPlan, MeshDevice, ProcessGroup, WirePrecision};

use crate::error::OwtError;
use crate::runtime::processes::Processes;
use crate::train::FcUpdate;

/// Where the N nodes of a 2-D mesh run.
#[derive(Clone)]
pub enum GridNodes {
    /// All of them in this process, one thread each: the mesh this process holds is cut
    /// into N local meshes of consecutive ranks.
    Threads(usize),
    /// One per process of the job (`mpirun -np N`): this process's mesh is its node's, and
    /// the job's process group joins the nodes.
    Processes(Arc<dyn ProcessGroup>),
}

impl std::fmt::Debug for GridNodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridNodes::Threads(n) => write!(f, "Threads({n})"),
            GridNodes::Processes(g) => write!(f, "Processes({})", g.describe()),
        }
    }
}

impl GridNodes {
    /// The nodes of a mesh of `shape` = [N, L] in a job of `processes`: threads in one
    /// process, one node per process when there are N. Refused, in one line: any other
    /// process count, a dimension of 0, and per-chunk FC updates (a 2-D mesh updates per
    /// step).
    pub fn of(shape: [usize; 2], processes: &Processes, fc_update: FcUpdate) -> Result<Self, OwtError> {
        let [n, l] = shape;
        if n == 0 || l == 0 {
            return Err(OwtError::input(format!("--mesh {n},{l}: both dimensions need at least 1 rank")));
        }
        if fc_update == FcUpdate::PerChunk {
            return Err(OwtError::input(
                "--fc-update per-chunk runs on one device or a 1-D mesh; a 2-D mesh updates per step",
            ));
        }
        match processes.count() {
            1 => Ok(GridNodes::Threads(n)),
            p if p == n => Ok(GridNodes::Processes(processes.group())),
            p => Err(OwtError::input(format!(
                "--mesh {n},{l} over {p} processes: run it in one process, or in {n} (one node each, mpirun -np {n})"
            ))),
        }
    }

    /// Ranks this process holds: all N x L in one process, L per process otherwise.
    pub fn ranks_here(&self, shape: [usize; 2]) -> usize {
        match self {
            GridNodes::Threads(_) => shape[0] * shape[1],
            GridNodes::Processes(_) => shape[1],
        }
    }

    /// Runs `body` on each node this process holds, on a [`GridLayout`] of the 2-D `plan`,
    /// `scheme`, `wire` and sync overlap, and returns node 0's result here (this process's node across processes); a
    /// node's error is returned if any node fails.
    pub fn run<IB: Backend, T: Send>(
        &self,
        mesh: MeshDevice<IB::Device>,
        plan: &GridPlan,
        scheme: Exchange,
        (wire, overlap): (WirePrecision, bool),
        body: impl Fn(&GridLayout<IB>) -> Result<T, OwtError> + Sync,
    ) -> Result<T, OwtError> {
        match self {
            GridNodes::Threads(n) => {
                let locals = mesh.split(*n);
                run_threads(*n, |i| locals[i].clone(), plan, scheme, (wire, overlap), body)
            }
            GridNodes::Processes(group) => {
                let grid = GridMesh::new(group.clone(), mesh).map_err(|e| OwtError::input(e.to_string()))?;
                body(&grid_layout(grid, plan, scheme, (wire, overlap))?)
            }
        }
    }
}

/// Runs `body` on `nodes` nodes of a 2-D mesh in this process, one thread each holding its
/// local mesh `local(n)`, on a [`GridLayout`] of `plan`, `scheme`, `wire` and sync overlap, and returns node 0's
/// result; a node's error is returned if any node fails.
pub fn run_threads<IB: Backend, T: Send>(
    nodes: usize,
    local: impl Fn(usize) -> MeshDevice<IB::Device> + Sync,
    plan: &GridPlan,
    scheme: Exchange,
    (wire, overlap): (WirePrecision, bool),
    body: impl Fn(&GridLayout<IB>) -> Result<T, OwtError> + Sync,
) -> Result<T, OwtError> {
    // A node that fails returns its error and leaves the group (its handle is dropped), so
    // the others stop at their next exchange instead of waiting for it; its error is what
    // the job reports, theirs (that it is gone) are not.
    let outcomes =
        GridMesh::try_threaded(nodes, local, |grid| body(&grid_layout(grid, plan, scheme, (wire, overlap))?));
    let mut stopped = None;
    let mut results = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(Ok(t)) => results.push(t),
            Ok(Err(e)) => return Err(e),
            Err(lost) => stopped = stopped.or(Some(lost)),
        }
    }
    if let Some(lost) = stopped {
        return Err(OwtError::backend(format!("--mesh: a node stopped: {lost}")));
    }
    results.into_iter().next().ok_or_else(|| OwtError::input("--mesh: no nodes ran"))
}

/// The layout of `plan` on `grid`, exchanging by `scheme`, sending in `wire`, its gradient sums
/// overlapped with the backward pass when `overlap` says so.
fn grid_layout<IB: Backend>(
    grid: GridMesh<IB::Device>,
    plan: &GridPlan,
    scheme: Exchange,
    (wire, overlap): (WirePrecision, bool),
) -> Result<GridLayout<IB>, OwtError> {
    let layout = GridLayout::with_plan(grid, plan, scheme).map_err(|e| OwtError::input(e.0))?.with_wire(wire);
    Ok(if overlap { layout.with_overlapped_sync() } else { layout })
}
