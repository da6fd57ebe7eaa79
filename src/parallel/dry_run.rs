//! `owt plan`'s dry run: one real AlexNet training step (`train_step`, through
//! `Autodiff<Hybrid<Meta>>`) on a mesh of shape-only devices ([`owt_hybrid::DryRun`]), so the
//! communication it reports is the ledger of the very code a real run executes. Every plan,
//! user plans included, every scheme, head and FC update schedule is answered the same way, in
//! milliseconds even for AlexNet at 224 pixels on 8 ranks with a batch of 1024.

use burn::backend::Autodiff;
use burn::prelude::*;

use owt_hybrid::{DryRun, DryRunReport, Exchange, Hybrid, MeshLayout, Plan, StepLayout};
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
