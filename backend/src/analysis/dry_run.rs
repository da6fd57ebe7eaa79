//! Dry runs: a training step on a mesh of shape-only devices ([`owt_meta::Meta`]: tensors with
//! a shape and a dtype but no data, like PyTorch's meta device). The step is the very code a
//! real run executes, over `Autodiff<Hybrid<Meta>>`, so what it reports is the ledger of that
//! code, not a hand-kept model of it: the communication of any module under any plan and
//! scheme, and each rank's ops (FLOPs and bytes) for the cost model, in milliseconds even for
//! a full-size network on 8 ranks.
//!
//! ```
//! use burn::backend::Autodiff;
//! use burn::prelude::*;
//! use owt_hybrid::{Distributed, DryRun, Hybrid, Placement};
//!
//! type H = Autodiff<Hybrid<owt_meta::Meta>>;
//! let dry = DryRun::new(4);
//! let w = Tensor::<H, 2>::zeros([512, 256], dry.mesh()).distribute(Placement::Shard(1)).require_grad();
//! for _ in 0..2 {
//!     dry.begin_step();
//!     let x = Tensor::<H, 2>::zeros([64, 512], dry.mesh()).distribute(Placement::Shard(0));
//!     let _grads = x.matmul(w.clone()).sum().backward();
//! }
//! let report = dry.report();
//! // Scheme a: the batch shards gathered, 3 x 64/4 x 512 x 4 bytes landing on each of 4 ranks.
//! assert_eq!(report.ledger.by_collective("all_gather").bytes, 4 * 3 * 16 * 512 * 4);
//! ```

use std::time::{Duration, Instant};

use owt_meta::{MetaDevice, OpCost};
use serde::Serialize;

use crate::analysis::cost_model::{predict, DeviceProfile, LayerOrder, StepPrediction};
use crate::ledger::{LedgerSnapshot, UNLABELLED};
use crate::mesh::MeshDevice;
use crate::transport::Transport;

/// One entry of a step's communication: what one collective moves in one phase of one layer
/// (all of the layer's tensors together).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerTraffic {
    /// Layer, as the step labelled it (`conv1`, `fc6`, `loss`, ...).
    pub layer: String,
    /// `forward`, `backward` or `sync`.
    pub phase: String,
    /// Collective as the ledger names it.
    pub collective: String,
    /// Bytes received by ranks from other ranks.
    pub bytes: u64,
    /// Messages (pieces sent from one rank to another).
    pub messages: u64,
    /// Of `bytes`, those between ranks of different processes (with a process layout: see
    /// [`DryRun::previewing_processes`]; 0 otherwise).
    pub cross_process_bytes: u64,
}

/// The communication of one training step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommPlan {
    /// Sum of every entry's bytes.
    pub total_bytes: u64,
    /// Sum of every entry's messages.
    pub total_messages: u64,
    /// Sum of every entry's bytes across processes.
    pub total_cross_process_bytes: u64,
    /// Entries in the step's layer order ([`LayerOrder`]), phases forward, backward, sync.
    pub layers: Vec<LayerTraffic>,
}

impl CommPlan {
    /// The ledger's entries (phases labelled `layer:phase`) in `order`.
    pub fn from_ledger(ledger: &LedgerSnapshot, order: &LayerOrder) -> Self {
        let mut layers: Vec<LayerTraffic> = ledger
            .traffic
            .iter()
            .filter(|(_, t)| t.bytes > 0 || t.messages > 0)
            .map(|((phase, collective), t)| LayerTraffic {
                layer: phase.layer.clone(),
                phase: phase.stage.map_or(UNLABELLED, |s| s.name()).to_string(),
                collective: collective.to_string(),
                bytes: t.bytes,
                messages: t.messages,
                cross_process_bytes: t.cross_process_bytes,
            })
            .collect();
        layers.sort_by(|a, b| {
            (order.rank(&a.layer, &a.phase), &a.collective).cmp(&(order.rank(&b.layer, &b.phase), &b.collective))
        });
        let total = ledger.total();
        CommPlan {
            total_bytes: total.bytes,
            total_messages: total.messages,
            total_cross_process_bytes: total.cross_process_bytes,
            layers,
        }
    }

    /// Bytes and messages of one (layer, phase, collective), 0 if absent.
    pub fn get(&self, layer: &str, phase: &str, collective: &str) -> (u64, u64) {
        self.layers
            .iter()
            .filter(|t| t.layer == layer && t.phase == phase && t.collective == collective)
            .fold((0, 0), |(b, m), t| (b + t.bytes, m + t.messages))
    }
}

/// The outcome of a dry run: the communication of the last step and what it took to find out.
#[derive(Debug, Clone)]
pub struct DryRunReport {
    /// Bytes and messages per layer, phase and collective.
    pub comm: CommPlan,
    /// The ledger as recorded (fallbacks and empty pieces included).
    pub ledger: LedgerSnapshot,
    /// Each rank's ops in the step (FLOPs and bytes, labelled `layer:phase` like the ledger),
    /// for the cost model.
    pub costs: Vec<Vec<OpCost>>,
    /// The step's layers in the order its ops ran.
    pub order: LayerOrder,
    /// Wall time of the dry run, from [`DryRun::new`] to [`DryRun::report`].
    pub elapsed: Duration,
}

impl DryRunReport {
    /// The step's time on `profile` (see [`crate::analysis::cost_model`]).
    pub fn predict(&self, profile: &DeviceProfile) -> StepPrediction {
        predict(&self.costs, &self.ledger, profile)
    }

    /// The step's time on `profile` for a report of a 2-D mesh of `shape` = [nodes, local
    /// ranks] (`costs` one node's ranks, the ledger the whole mesh's; see
    /// [`crate::analysis::cost_model::predict_on_mesh`]).
    pub fn predict_on_mesh(&self, profile: &DeviceProfile, shape: [usize; 2]) -> StepPrediction {
        crate::analysis::cost_model::predict_on_mesh(&self.costs, &self.ledger, profile, shape)
    }
}

/// A mesh of `ranks` shape-only devices on which a caller runs training steps; every op is
/// labelled with the ledger's phase of the moment, so compute and traffic share labels.
/// Run a step or two (the second shows that nothing accumulates across steps), each after
/// [`DryRun::begin_step`], then read the [`DryRun::report`].
pub struct DryRun {
    mesh: MeshDevice<MetaDevice>,
    devices: Vec<MetaDevice>,
    start: Instant,
}

impl DryRun {
    /// A mesh of `ranks` (at least 1) fresh Meta devices, moving pieces device to device (as
    /// CUDA GPUs do; the bytes are the same either way).
    pub fn new(ranks: usize) -> Self {
        Self::previewing_processes(ranks, ranks.max(1))
    }

    /// [`DryRun::new`] whose ledger counts the bytes that would cross processes in a job of
    /// processes holding `ranks_per_process` consecutive ranks each
    /// ([`MeshDevice::previewing_processes`]). Panics on a count that does not divide `ranks`.
    pub fn previewing_processes(ranks: usize, ranks_per_process: usize) -> Self {
        let start = Instant::now();
        let devices: Vec<MetaDevice> = (0..ranks.max(1)).map(|_| MetaDevice::new()).collect();
        let mesh = MeshDevice::previewing_processes(devices.clone(), Transport::DeviceToDevice, ranks_per_process);
        for d in &devices {
            let mesh = mesh.clone();
            d.set_label_source(move || mesh.current_phase().map(|p| p.to_string()));
        }
        Self { mesh, devices, start }
    }

    /// The mesh to build the model and the batches on (the device of `Hybrid<Meta>`).
    pub fn mesh(&self) -> &MeshDevice<MetaDevice> {
        &self.mesh
    }

    /// Labels every rank's ops with the phase of `mesh` instead: a mesh over these devices
    /// that a step runs on in place of [`DryRun::mesh`] (a node's ranks with the node
    /// dimension around them, [`crate::GridMesh::mesh`]), whose ledger the caller reads.
    pub fn label_by(&self, mesh: &MeshDevice<MetaDevice>) {
        for d in &self.devices {
            let mesh = mesh.clone();
            d.set_label_source(move || mesh.current_phase().map(|p| p.to_string()));
        }
    }

    /// Forgets what earlier steps moved and ran: the report covers the steps from here on.
    pub fn begin_step(&self) {
        self.mesh.reset_ledger();
        self.devices.iter().for_each(MetaDevice::reset_costs);
    }

    /// The ledger and every rank's ops since the last [`DryRun::begin_step`].
    pub fn report(&self) -> DryRunReport {
        let ledger = self.mesh.ledger_snapshot();
        let costs: Vec<Vec<OpCost>> = self.devices.iter().map(MetaDevice::costs).collect();
        let order = LayerOrder::of(&costs);
        let comm = CommPlan::from_ledger(&ledger, &order);
        DryRunReport { comm, ledger, costs, order, elapsed: self.start.elapsed() }
    }
}

impl Drop for DryRun {
    /// The devices' label sources hold the mesh, which holds the devices: break the cycle so
    /// both are freed.
    fn drop(&mut self) {
        self.devices.iter().for_each(MetaDevice::clear_label_source);
    }
}
