//! `owt plan`'s dry run: one real AlexNet training step (`train_step`, through
//! `Autodiff<Hybrid<Meta>>`) on a mesh of shape-only devices ([`owt_hybrid::DryRun`]), so the
//! communication it reports is the ledger of the very code a real run executes. Every plan,
//! user plans included, every scheme, head and FC update schedule is answered the same way, in
//! milliseconds even for AlexNet at 224 pixels on 8 ranks with a batch of 1024.

use burn::backend::Autodiff;
use burn::prelude::*;

use owt_hybrid::prelude::*;
use owt_hybrid::{
    CommPlan, DryRun, DryRunReport, Exchange, GridPlacement, GridPlan, Hybrid, MeshLayout, Placement, Plan, StepLayout,
    WirePrecision,
};
use owt_meta::Meta;
use owt_models::{AlexNet, Architecture, DropoutKey, Head, ModelKind, ModelSpec};

use crate::error::OwtError;
use crate::parallel::check_run;
use crate::parallel::grid_run::run_threads;
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
    /// The precision float pieces cross ranks in (bf16 and f16 halve the bytes).
    pub wire: WirePrecision,
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
        let layout = MeshLayout::<Meta>::new(dry.mesh().clone(), self.plan.clone(), self.scheme).with_wire(self.wire);
        let model = layout.place_module(self.arch.try_init(layout.device()).map_err(|e| OwtError::input(e.0))?)?;
        self.two_steps(&layout, model, &dry);
        Ok(dry.report())
    }

    /// Two training steps of the model on `layout` with the whole batch, each after
    /// [`DryRun::begin_step`] and the layout's own record cleared, so the report reads the
    /// second (which shows that nothing accumulates across steps, as a real run's steady
    /// state).
    fn two_steps<L: StepLayout<H>>(&self, layout: &L, mut model: AlexNet<H>, dry: &DryRun) {
        let config = TrainConfig {
            batch: self.batch,
            ..TrainConfig::new(ModelSpec::new(ModelKind::AlexNetSmall), crate::data::DatasetKind::Synthetic)
        };
        let mut optim = sgd::<H>(&config);
        let device = layout.device().clone();
        let [c, h, w] = self.arch.input;
        for step in 0..2 {
            let x = layout.place_input(Tensor::<H, 4>::zeros([self.batch, c, h, w], &device));
            let y = layout.place_labels(Tensor::<H, 1, Int>::zeros([self.batch], &device));
            dry.begin_step();
            layout.reset_traffic();
            let key = DropoutKey::new(0, step);
            model = train_step(layout, model, &mut optim, 0.01, self.head, self.fc_update, key, x, y).0;
        }
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
    /// which `self.plan` is not consulted for): the real 2-D step ([`owt_hybrid::GridLayout`]) on N nodes
    /// of L shape-only ranks each, the nodes threads of this process, so every entry is what
    /// the layout's own collectives record (the sums, gathers and reduce-scatters over the
    /// nodes with their layouts inside each node), never a model of them. The report is the
    /// whole mesh's ledger (every node's entries summed) with node 0's ops (every node runs
    /// the same step on an equal share); with it, every parameter's placement per dimension.
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
        if self.batch == 0 {
            return Err(OwtError::input("the batch must be at least 1, got 0"));
        }
        // What the layout and `owt train` refuse, refused before any node is made: what each
        // node stores, the sizes of a node's step, the plan inside a node on its share.
        let stored = grid.check_outer(&self.arch.parameters()?, nodes).map_err(|e| OwtError::input(e.0))?;
        plan.check_params(&stored, local).map_err(|e| OwtError::input(e.0))?;
        let node_batch = if split_batch { self.batch / nodes } else { self.batch };
        crate::train::budget::estimate(self.arch, node_batch, 0)?;
        check_run(&plan, self.arch, local, node_batch)?;
        let dries: Vec<DryRun> = (0..nodes).map(|_| DryRun::new(local)).collect();
        let (report, ledger, placements) = run_threads::<Meta, _>(
            nodes,
            |n| dries[n].mesh().clone(),
            grid,
            self.scheme,
            (self.wire, false),
            |layout| {
                let dry = &dries[layout.grid().node()];
                dry.label_by(layout.grid().mesh());
                let model = self.arch.try_init(layout.device()).map_err(|e| OwtError::input(e.0))?;
                let model = layout.place_module(model)?;
                let placements = layout.placements(&model);
                self.two_steps(layout, model, dry);
                let ledger = layout.grid().ledger_snapshot();
                Ok((dry.report(), ledger, placements))
            },
        )?;
        let comm = CommPlan::from_ledger(&ledger, &report.order);
        Ok((DryRunReport { comm, ledger, ..report }, placements))
    }
}
