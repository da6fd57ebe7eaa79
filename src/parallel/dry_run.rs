//! `owt plan`'s dry run: one real training step of a layout on a mesh of shape-only devices
//! ([`owt_meta::Meta`]: tensors with a shape and a dtype but no data), so the communication it
//! reports is the ledger of the very code a real run executes (`train_step` through
//! `Autodiff<Hybrid<Meta>>`), not a hand-kept model of it. Every plan, user plans included,
//! every scheme, head and FC update schedule is answered the same way, in milliseconds even
//! for AlexNet at 224 pixels on 8 ranks with a batch of 1024.

use std::time::{Duration, Instant};

use burn::backend::Autodiff;
use burn::prelude::*;
use serde::Serialize;

use owt_hybrid::{Exchange, Hybrid, LedgerSnapshot, MeshDevice, Transport};
use owt_meta::{Meta, MetaDevice, OpCost};
use owt_models::{AlexNet, Architecture, DropoutKey, Head, ModelKind, ModelSpec};

use crate::error::OwtError;
use crate::parallel::cost_model::{predict, DeviceProfile, StepPrediction};
use crate::parallel::phases::label_order;
use crate::parallel::plan::Plan;
use crate::train::{sgd, train_step, FcUpdate, Layout, MeshLayout, TrainConfig};

/// One entry of the plan: what one collective moves in one phase of one layer (all of the
/// layer's tensors together).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerTraffic {
    /// Layer (`conv1`..`conv5`, `fc6`..`fc8`, `loss`).
    pub layer: String,
    /// `forward`, `backward` or `sync`.
    pub phase: String,
    /// Collective as the ledger names it.
    pub collective: String,
    /// Bytes received by ranks from other ranks.
    pub bytes: u64,
    /// Messages (pieces sent from one rank to another).
    pub messages: u64,
}

/// The communication of one training step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommPlan {
    /// Sum of every entry's bytes.
    pub total_bytes: u64,
    /// Sum of every entry's messages.
    pub total_messages: u64,
    /// Entries in layer order (forward order of the network, then the loss).
    pub layers: Vec<LayerTraffic>,
}

impl CommPlan {
    /// Bytes and messages of one (layer, phase, collective), 0 if absent.
    pub fn get(&self, layer: &str, phase: &str, collective: &str) -> (u64, u64) {
        self.layers
            .iter()
            .filter(|t| t.layer == layer && t.phase == phase && t.collective == collective)
            .fold((0, 0), |(b, m), t| (b + t.bytes, m + t.messages))
    }
}

/// What the dry run asks about: a model, a plan on `ranks` ranks, a global batch and how the
/// step runs.
#[derive(Debug, Clone)]
pub struct DryRun<'a> {
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

/// The outcome of a dry run: the communication of one step and what it took to find out.
#[derive(Debug, Clone)]
pub struct DryRunReport {
    /// Bytes and messages per layer, phase and collective.
    pub comm: CommPlan,
    /// The ledger as recorded (fallbacks and empty pieces included).
    pub ledger: LedgerSnapshot,
    /// Each rank's ops in the measured step (FLOPs and bytes, labelled `layer:phase` like the
    /// ledger), for the cost model.
    pub costs: Vec<Vec<OpCost>>,
    /// Wall time of the dry run (model set-up and both steps).
    pub elapsed: Duration,
}

impl DryRunReport {
    /// The step's time on `profile` (see [`crate::parallel::cost_model`]).
    pub fn predict(&self, profile: &DeviceProfile) -> StepPrediction {
        predict(&self.costs, &self.ledger, profile)
    }
}

type H = Autodiff<Hybrid<Meta>>;

impl DryRun<'_> {
    /// Runs two training steps on shape-only ranks and reports the second's ledger (the
    /// second shows that nothing accumulates across steps, as a real run's steady state).
    pub fn run(&self) -> Result<DryRunReport, OwtError> {
        let start = Instant::now();
        let (arch, batch) = (self.arch, self.batch);
        if batch == 0 {
            return Err(OwtError::input("the batch must be at least 1, got 0"));
        }
        let devices: Vec<MetaDevice> = (0..self.ranks.max(1)).map(|_| MetaDevice::new()).collect();
        let mesh = MeshDevice::with_transport(devices.clone(), Transport::DeviceToDevice);
        // Compute is labelled with the phase the ledger labels traffic with.
        for d in &devices {
            let mesh = mesh.clone();
            d.set_label_source(move || mesh.current_phase());
        }
        let layout = MeshLayout::<Meta>::new(mesh, self.plan.clone(), self.scheme);
        layout.check(arch, batch)?;
        let device = layout.device().clone();
        let model: AlexNet<H> = arch.try_init(&device).map_err(|e| OwtError::input(e.0))?;
        let mut model = layout.place_model(model)?;
        let config = TrainConfig {
            batch,
            ..TrainConfig::new(ModelSpec::new(ModelKind::AlexNetSmall), crate::data::DatasetKind::Synthetic)
        };
        let mut optim = sgd::<H>(&config);
        let [c, h, w] = arch.input;
        let mut ledger = None;
        for step in 0..2 {
            let x = Tensor::<H, 4>::zeros([batch, c, h, w], &device);
            let y = Tensor::<H, 1, Int>::zeros([batch], &device);
            let (x, y) = layout.place_batch(x, y);
            layout.reset_traffic();
            devices.iter().for_each(MetaDevice::reset_costs);
            model =
                train_step(&layout, model, &mut optim, 0.01, self.head, self.fc_update, DropoutKey::new(0, step), x, y)
                    .0;
            ledger = layout.traffic();
        }
        let ledger = ledger.expect("a mesh layout keeps a ledger");
        let comm = CommPlan::from_ledger(&ledger);
        let costs = devices.iter().map(MetaDevice::costs).collect();
        Ok(DryRunReport { comm, ledger, costs, elapsed: start.elapsed() })
    }
}

impl CommPlan {
    /// The ledger's entries (phases labelled `layer:phase`) in the network's layer order
    /// (conv1..conv5, fc6..fc8, then the loss); phases forward, backward, sync.
    pub fn from_ledger(ledger: &LedgerSnapshot) -> Self {
        let mut layers: Vec<LayerTraffic> = ledger
            .traffic
            .iter()
            .filter(|(_, t)| t.bytes > 0 || t.messages > 0)
            .map(|((label, collective), t)| {
                let (layer, phase) = label.split_once(':').unwrap_or((label.as_str(), "-"));
                LayerTraffic {
                    layer: layer.to_string(),
                    phase: phase.to_string(),
                    collective: collective.clone(),
                    bytes: t.bytes,
                    messages: t.messages,
                }
            })
            .collect();
        layers.sort_by(|a, b| {
            (label_order(&a.layer, &a.phase), &a.collective).cmp(&(label_order(&b.layer, &b.phase), &b.collective))
        });
        let total = ledger.total();
        CommPlan { total_bytes: total.bytes, total_messages: total.messages, layers }
    }
}
