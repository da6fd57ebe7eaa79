//! Running a job on a 2-D mesh (`--mesh N,L`): where its nodes live (threads of this process,
//! or one process each under mpirun) and the [`GridLayout`] each node trains on.

use std::sync::Arc;

use burn::prelude::*;
use owt_hybrid::{Exchange, GridLayout, GridMesh, GridPlan, MeshDevice, ProcessGroup};

use crate::error::OwtError;
use crate::processes::Processes;
use crate::train::FcUpdate;

/// A node's error, carried out of its thread by unwinding.
struct NodeFailed(OwtError);

/// While held, the panics of nodes that stop because another node left (a group's
/// [`owt_hybrid::GroupError::Lost`]) are not printed: the node that left says why. Every other
/// panic goes to the hook there was before.
struct QuietLostNodes {
    previous: std::sync::Arc<Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>>,
}

impl QuietLostNodes {
    fn install() -> Self {
        let previous = std::sync::Arc::new(std::panic::take_hook());
        let chained = previous.clone();
        std::panic::set_hook(Box::new(move |info| {
            if !crate::panics::payload_text(info.payload()).contains(LOST) {
                chained(info)
            }
        }));
        Self { previous }
    }
}

impl Drop for QuietLostNodes {
    fn drop(&mut self) {
        let previous = self.previous.clone();
        std::panic::set_hook(Box::new(move |info| previous(info)));
    }
}

/// What a collective's panic says when a member of its group is gone.
const LOST: &str = "of the mesh is gone";

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

    /// Runs `body` on each node this process holds, on a [`GridLayout`] of the 2-D `plan` and
    /// `scheme`, and returns node 0's result here (this process's node across processes); a
    /// node's error is returned if any node fails.
    pub fn run<IB: Backend, T: Send>(
        &self,
        mesh: MeshDevice<IB::Device>,
        plan: &GridPlan,
        scheme: Exchange,
        body: impl Fn(&GridLayout<IB>) -> Result<T, OwtError> + Sync,
    ) -> Result<T, OwtError> {
        match self {
            GridNodes::Threads(n) => {
                let locals = mesh.split(*n);
                // A node that fails leaves the group as a panicking thread would (its handle
                // is dropped while unwinding), so the others stop at their next exchange
                // instead of waiting for it; its error is what the job reports, and theirs
                // (that it is gone) are not printed.
                let _quiet = QuietLostNodes::install();
                let outcomes = GridMesh::threaded(
                    *n,
                    |i| locals[i].clone(),
                    |grid| {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            let layout = match GridLayout::with_plan(grid, plan, scheme) {
                                Ok(layout) => layout,
                                Err(e) => std::panic::resume_unwind(Box::new(NodeFailed(OwtError::input(e.0)))),
                            };
                            match body(&layout) {
                                Ok(t) => t,
                                Err(e) => std::panic::resume_unwind(Box::new(NodeFailed(e))),
                            }
                        }))
                    },
                );
                let mut lost = None;
                let mut results = Vec::new();
                for outcome in outcomes {
                    match outcome {
                        Ok(t) => results.push(t),
                        Err(payload) => match payload.downcast::<NodeFailed>() {
                            Ok(failed) => return Err(failed.0),
                            Err(other) => lost = lost.or(Some(other)),
                        },
                    }
                }
                if let Some(payload) = lost {
                    std::panic::resume_unwind(payload);
                }
                results.into_iter().next().ok_or_else(|| OwtError::input("--mesh: no nodes ran"))
            }
            GridNodes::Processes(group) => {
                let grid = GridMesh::new(group.clone(), mesh).map_err(|e| OwtError::input(e.to_string()))?;
                body(&GridLayout::with_plan(grid, plan, scheme).map_err(|e| OwtError::input(e.0))?)
            }
        }
    }
}
