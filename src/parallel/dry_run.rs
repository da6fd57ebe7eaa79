//! `owt plan`'s dry run: one real AlexNet training step (`train_step`, through
//! `Autodiff<Hybrid<Meta>>`) on a mesh of shape-only devices ([`owt_hybrid::DryRun`]), so the
//! communication it reports is the ledger of the very code a real run executes. Every plan,
//! user plans included, every scheme, head and FC update schedule is answered the same way, in
//! milliseconds even for AlexNet at 224 pixels on 8 ranks with a batch of 1024.

use burn::backend::Autodiff;
use burn::prelude::*;

use owt_hybrid::{
    layer_of, parameter_paths, phase_label, CommPlan, DryRun, DryRunReport, Exchange, GridPlacement, Hybrid,
    MeshLayout, Placement, Plan, StepLayout, Traffic, UNLABELLED,
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
        let dry = DryRun::new(self.ranks);
        dry.mesh().set_process_layout(self.ranks / processes);
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
    /// The step on a 2-D mesh of `shape` = [N nodes, L local ranks] (`--mesh N,L`): the plan
    /// inside each node on its N-th of the batch (a dry run on L ranks, the same on every
    /// node), and across the nodes the sums a [`owt_hybrid::GridLayout`] makes: every
    /// parameter's gradient on a ring over the nodes (2 (N - 1) x each local rank's piece, as
    /// `all_reduce[node]` in the layer's sync phase; a replicated gradient by slices, then
    /// all-gathered in the node: [`owt_hybrid::grid::sums_by_slices`]) and the step's loss and
    /// correct count.
    /// The report is the whole mesh's (every node's entries summed); with it, every
    /// parameter's placement per dimension.
    pub fn run_on_grid(&self, shape: [usize; 2]) -> Result<(DryRunReport, Vec<(String, GridPlacement)>), OwtError> {
        let [nodes, local] = shape;
        if nodes == 0 || local == 0 {
            return Err(OwtError::input(format!("--mesh {nodes},{local}: both dimensions need at least 1 rank")));
        }
        if self.batch % nodes != 0 {
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
        let node = PlanDryRun { ranks: local, batch: self.batch / nodes, ..self.clone() };
        let mut report = node.run()?;
        let mut ledger = owt_hybrid::LedgerSnapshot::default();
        for _ in 0..nodes {
            ledger.add(&report.ledger);
        }
        // The parameters as the plan places them on a node's local mesh.
        let dry = DryRun::new(local);
        let model: AlexNet<H> = self.arch.try_init(dry.mesh()).map_err(|e| OwtError::input(e.0))?;
        let mut placements = Vec::new();
        let ring = |held: usize, size: usize| {
            let bytes = (2 * (nodes - 1) * held * size) as u64;
            let messages = (nodes * local * 2 * (nodes - 1)) as u64;
            Traffic { bytes, messages, cross_process_bytes: bytes, cross_process_messages: messages }
        };
        let collective = format!("{}[{}]", owt_hybrid::collectives::names::ALL_REDUCE, owt_hybrid::grid::DIM_NAMES[0]);
        for (path, dims) in parameter_paths(&model) {
            let p = self.plan.placement_of(&path);
            placements.push((path.clone(), owt_hybrid::grid::parameter_placement(p)));
            if nodes > 1 {
                let elements: usize = dims.iter().product();
                let sync = phase_label(layer_of(&path), "sync");
                let sliced = owt_hybrid::grid::sums_by_slices(p, dims[0], shape);
                let held = match p {
                    _ if sliced => elements,
                    Placement::Replicate => elements * local,
                    _ => elements,
                };
                *ledger.traffic.entry((sync.clone(), collective.clone())).or_default() += ring(held, 4);
                if sliced {
                    // The summed slices all-gathered inside every node.
                    let gather = owt_hybrid::collectives::names::ALL_GATHER.to_string();
                    let bytes = (nodes * (local - 1) * elements * 4) as u64;
                    let messages = (nodes * local * (local - 1)) as u64;
                    *ledger.traffic.entry((sync, gather)).or_default() += Traffic::within(bytes, messages);
                }
            }
        }
        if nodes > 1 {
            // The step's mean loss and correct count, one value on each local rank.
            let key = (UNLABELLED.to_string(), collective.clone());
            let mut outcome = ring(local, 4);
            outcome += ring(local, 4);
            *ledger.traffic.entry(key).or_default() += outcome;
        }
        report.comm = CommPlan::from_ledger(&ledger, &report.order);
        report.ledger = ledger;
        Ok((report, placements))
    }
}
