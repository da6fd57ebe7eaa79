//! `owt plan`'s dry run: one real AlexNet training step (`train_step`, through
//! `Autodiff<Hybrid<Meta>>`) on a mesh of shape-only devices ([`owt_hybrid::DryRun`]), so the
//! communication it reports is the ledger of the very code a real run executes. Every plan,
//! user plans included, every scheme, head and FC update schedule is answered the same way, in
//! milliseconds even for AlexNet at 224 pixels on 8 ranks with a batch of 1024.

use burn::backend::Autodiff;
use burn::prelude::*;

use owt_hybrid::grid_shard::cut_dim;
use owt_hybrid::{
    layer_of, parameter_paths, Collective, CommPlan, Distributed, DryRun, DryRunReport, Exchange, GridPlacement,
    GridPlan, Hybrid, MeshLayout, Phase, Placement, Plan, Stage, StepLayout, Traffic,
};
use owt_meta::Meta;
use owt_models::{AlexNet, Architecture, DropoutKey, Head, ModelKind, ModelSpec};

use crate::error::OwtError;
use crate::parallel::check_run;
use crate::train::{sgd, train_step, FcUpdate, TrainConfig};

/// What the dry run asks about: a model, a plan on `ranks` ranks, a global batch and how the
/// step runs.
#[derive(Debug, Clone)]
pub struct PlanDryRun<'a> {
    /// The network.
    pub arch: &'a Architecture,
    /// Where every parameter and the input go.
    pub plan: &'a Plan,
    /// Ranks of the mesh.
    pub ranks: usize,
    /// Global batch (all ranks together).
    pub batch: usize,
    /// Activity exchange scheme.
    pub scheme: Exchange,
    /// Output head.
    pub head: Head,
    /// When FC weights are updated.
    pub fc_update: FcUpdate,
}

type H = Autodiff<Hybrid<Meta>>;

impl PlanDryRun<'_> {
    /// Runs two training steps on shape-only ranks and reports the second's ledger (the
    /// second shows that nothing accumulates across steps, as a real run's steady state).
    pub fn run(&self) -> Result<DryRunReport, OwtError> {
        self.run_on_processes(1)
    }

    /// [`PlanDryRun::run`] for a job of `processes` processes of `ranks / processes` ranks
    /// each: the report's cross-process bytes say which entries would cross between them.
    pub fn run_on_processes(&self, processes: usize) -> Result<DryRunReport, OwtError> {
        let (arch, batch) = (self.arch, self.batch);
        if processes == 0 || self.ranks % processes != 0 {
            return Err(OwtError::input(format!(
                "--processes {processes}: the {} ranks must split evenly over the processes (each holds the same number)",
                self.ranks
            )));
        }
        if batch == 0 {
            return Err(OwtError::input("the batch must be at least 1, got 0"));
        }
        // What `owt train` refuses, refused first and in its words: sizes whose bytes overflow,
        // then plans the ranks and batch cannot run. Only then are the ranks made.
        crate::train::budget::estimate(arch, batch, 0)?;
        check_run(self.plan, arch, self.ranks, batch)?;
        let dry = DryRun::previewing_processes(self.ranks, self.ranks / processes);
        let layout = MeshLayout::<Meta>::new(dry.mesh().clone(), self.plan.clone(), self.scheme);
        let device = layout.device().clone();
        let model: AlexNet<H> = arch.try_init(&device).map_err(|e| OwtError::input(e.0))?;
        let mut model = layout.place_module(model)?;
        let config = TrainConfig {
            batch,
            ..TrainConfig::new(ModelSpec::new(ModelKind::AlexNetSmall), crate::data::DatasetKind::Synthetic)
        };
        let mut optim = sgd::<H>(&config);
        let [c, h, w] = arch.input;
        for step in 0..2 {
            let x = layout.place_input(Tensor::<H, 4>::zeros([batch, c, h, w], &device));
            let y = layout.place_labels(Tensor::<H, 1, Int>::zeros([batch], &device));
            dry.begin_step();
            model =
                train_step(&layout, model, &mut optim, 0.01, self.head, self.fc_update, DropoutKey::new(0, step), x, y)
                    .0;
        }
        Ok(dry.report())
    }
}

impl PlanDryRun<'_> {
    /// The step on a 2-D mesh of `shape` = [N nodes, L local ranks] (`--mesh N,L`) with the
    /// plan inside each node and data parallelism across: [`PlanDryRun::run_on_grid_plan`]
    /// of [`GridPlan::data_parallel_across`].
    pub fn run_on_grid(&self, shape: [usize; 2]) -> Result<(DryRunReport, Vec<(String, GridPlacement)>), OwtError> {
        self.run_on_grid_plan(shape, &GridPlan::data_parallel_across(self.plan))
    }

    /// The step on a 2-D mesh of `shape` under `grid` (its local plan inside each node,
    /// which `self.plan` is not consulted for): a dry run on L ranks of each node's step
    /// (its N-th of the batch, or all of it where the input is `Replicate` along the nodes;
    /// the same on every node, with every parameter whole as a step computes with it), and
    /// across the nodes what a [`owt_hybrid::GridLayout`] moves:
    /// - a parameter `Replicate` along the nodes: its gradient summed on a ring over them
    ///   (2 (N - 1) x each local rank's piece, as `all_reduce[node]` in the layer's sync
    ///   phase; a replicated gradient by slices, then all-gathered in the node:
    ///   [`owt_hybrid::grid::sums_by_slices`]);
    /// - a parameter `Shard(d)` along them: each node's slice all-gathered over the nodes
    ///   for the step ((N - 1) x each local piece, `all_gather[node]`, the layer's forward)
    ///   and the gradient reduce-scattered back (each local piece less its slice,
    ///   `reduce_scatter[node]`, the layer's sync); a slice split inside the node on the very
    ///   dim the nodes split is gathered inside the node first, as the real step does;
    /// - the step's loss and correct count, summed over the nodes.
    ///
    /// With the whole batch on every node nothing is summed over the nodes. The report is
    /// the whole mesh's (every node's entries summed); with it, every parameter's
    /// placement per dimension.
    pub fn run_on_grid_plan(
        &self,
        shape: [usize; 2],
        grid: &GridPlan,
    ) -> Result<(DryRunReport, Vec<(String, GridPlacement)>), OwtError> {
        let [nodes, local] = shape;
        if nodes == 0 || local == 0 {
            return Err(OwtError::input(format!("--mesh {nodes},{local}: both dimensions need at least 1 rank")));
        }
        let plan = grid.local_plan().map_err(|e| OwtError::input(e.0))?;
        let split_batch = grid.input[0] == Placement::Shard(0);
        if split_batch && self.batch % nodes != 0 {
            return Err(OwtError::input(format!(
                "--batch {}: a 2-D mesh's {nodes} nodes each take the same share of the batch, so it must be a multiple of {nodes}",
                self.batch
            )));
        }
        if self.fc_update == FcUpdate::PerChunk {
            return Err(OwtError::input(
                "--fc-update per-chunk runs on one device or a 1-D mesh; a 2-D mesh updates per step",
            ));
        }
        let dry = DryRun::new(local);
        let model: AlexNet<H> = self.arch.try_init(dry.mesh()).map_err(|e| OwtError::input(e.0))?;
        let params = parameter_paths(&model);
        let stored = grid.check_outer(&params, nodes).map_err(|e| OwtError::input(e.0))?;
        plan.check_params(&stored, local).map_err(|e| OwtError::input(e.0))?;
        let node_batch = if split_batch { self.batch / nodes } else { self.batch };
        let node = PlanDryRun { plan: &plan, ranks: local, batch: node_batch, ..self.clone() };
        let mut report = node.run()?;
        let mut ledger = owt_hybrid::LedgerSnapshot::default();
        for _ in 0..nodes {
            ledger.add(&report.ledger);
        }
        let mut placements = Vec::new();
        let across = |bytes: usize, messages: usize| {
            let (bytes, messages) = (bytes as u64, messages as u64);
            Traffic { bytes, messages, cross_process_bytes: bytes, cross_process_messages: messages }
        };
        let ring = |held: usize, size: usize| across(2 * (nodes - 1) * held * size, nodes * local * 2 * (nodes - 1));
        let outer = |c: Collective| c.over(owt_hybrid::grid::DIM_NAMES[0]);
        let (all_reduce, all_gather, reduce_scatter) =
            (outer(Collective::AllReduce), outer(Collective::AllGather), outer(Collective::ReduceScatter));
        for (path, dims) in params {
            let p = plan.placement_of(&path);
            let outer = grid.outer_of(&path);
            placements.push((path.clone(), [outer, p]));
            if nodes == 1 {
                continue;
            }
            let elements: usize = dims.iter().product();
            let forward = Phase::of(layer_of(&path), Stage::Forward);
            let sync = Phase::of(layer_of(&path), Stage::Sync);
            match outer {
                Placement::Shard(d) => {
                    let slices = owt_hybrid::shard_ranges(dims[d], nodes);
                    let per_entry = elements / dims[d].max(1);
                    // Local pieces that cross the nodes as copies of the whole (one per local
                    // rank), or as one copy's pieces: split inside the node on another dim, or
                    // replicated and cut first (then all-gathered inside the node after).
                    let copies = |q: Placement, cut: Option<usize>| match (q, cut) {
                        (Placement::Shard(e), _) if e != d => 1,
                        (Placement::Replicate, Some(_)) => 1,
                        _ => local,
                    };
                    for slice in &slices {
                        let mut slice_dims = dims.clone();
                        slice_dims[d] = slice.len();
                        let slice_elements = slice.len() * per_entry;
                        // The slice gathered over the nodes for the forward pass (a slice split
                        // on dim d inside the node gathered inside it first).
                        let mut q = p;
                        if p == Placement::Shard(d) {
                            ledger.add(&inner_traffic(local, &slice_dims, p, Placement::Replicate, &forward));
                            q = Placement::Replicate;
                        }
                        let cut = (q == Placement::Replicate).then(|| cut_dim(&slice_dims, d, local)).flatten();
                        *ledger.traffic.entry((forward.clone(), all_gather.clone())).or_default() +=
                            across((nodes - 1) * slice_elements * copies(q, cut) * 4, local * (nodes - 1));
                        if let Some(e) = cut {
                            ledger.add(&inner_traffic(
                                local,
                                &dims,
                                Placement::Shard(e),
                                Placement::Replicate,
                                &forward,
                            ));
                        }
                        // The gradient: reduce-scattered over the nodes, or only cut where every
                        // node has the whole batch (a gradient split on dim d inside the node,
                        // or partial, made whole inside it first).
                        let mut q = p;
                        let whole_first =
                            p == Placement::Shard(d) || (split_batch && matches!(p, Placement::Partial(_)));
                        if whole_first {
                            ledger.add(&inner_traffic(local, &dims, p, Placement::Replicate, &sync));
                            q = Placement::Replicate;
                        }
                        if split_batch {
                            let cut = (q == Placement::Replicate).then(|| cut_dim(&dims, d, local)).flatten();
                            let sent = (elements - slice_elements) * copies(q, cut) * 4;
                            *ledger.traffic.entry((sync.clone(), reduce_scatter.clone())).or_default() +=
                                across(sent, local * (nodes - 1));
                            if let Some(e) = cut {
                                let from = Placement::Shard(e);
                                ledger.add(&inner_traffic(local, &slice_dims, from, Placement::Replicate, &sync));
                            }
                        }
                    }
                }
                _ if !split_batch => {}
                _ => {
                    let sliced = owt_hybrid::grid::sums_by_slices(p, dims[0], shape);
                    let held = match p {
                        _ if sliced => elements,
                        Placement::Replicate => elements * local,
                        _ => elements,
                    };
                    *ledger.traffic.entry((sync.clone(), all_reduce.clone())).or_default() += ring(held, 4);
                    if sliced {
                        // The summed slices all-gathered inside every node.
                        let gather = Collective::AllGather.into();
                        let bytes = (nodes * (local - 1) * elements * 4) as u64;
                        let messages = (nodes * local * (local - 1)) as u64;
                        *ledger.traffic.entry((sync, gather)).or_default() += Traffic::within(bytes, messages);
                    }
                }
            }
        }
        if nodes > 1 && split_batch {
            // The step's mean loss and correct count, one value on each local rank.
            let key = (Phase::unlabelled(), all_reduce.clone());
            let mut outcome = ring(local, 4);
            outcome += ring(local, 4);
            *ledger.traffic.entry(key).or_default() += outcome;
        }
        report.comm = CommPlan::from_ledger(&ledger, &report.order);
        report.ledger = ledger;
        Ok((report, placements))
    }
}

/// What moving one node's tensor of `dims` (f32) from `from` to `to` inside its node of
/// `local` ranks records, labelled `label`: the very collectives a real step calls, run on
/// shape-only ranks, once per node.
fn inner_traffic(
    local: usize,
    dims: &[usize],
    from: Placement,
    to: Placement,
    label: &Phase,
) -> owt_hybrid::LedgerSnapshot {
    fn moved<const D: usize>(dry: &DryRun, dims: &[usize], from: Placement, to: Placement, label: &Phase) {
        let mesh = dry.mesh();
        let t = Tensor::<Hybrid<Meta>, D>::zeros(dims.to_vec(), mesh).distribute(from);
        mesh.reset_ledger();
        mesh.set_phase(Some(label.clone()));
        let _ = t.distribute(to);
        mesh.set_phase(None);
    }
    let dry = DryRun::new(local);
    match dims.len() {
        1 => moved::<1>(&dry, dims, from, to, label),
        2 => moved::<2>(&dry, dims, from, to, label),
        3 => moved::<3>(&dry, dims, from, to, label),
        4 => moved::<4>(&dry, dims, from, to, label),
        n => unreachable!("a parameter of {n} dims"),
    }
    dry.mesh().ledger_snapshot()
}
