//! Where a training run's tensors live: on one device ([`SingleDevice`]), or on a mesh of ranks
//! under a parallel plan ([`MeshLayout`], over `Autodiff<Hybrid<IB>>`). The training step is
//! written once against this trait, so single-device and parallel training share every line
//! that decides the numbers.

use burn::backend::Autodiff;
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use burn::tensor::DType;
use owt_hybrid::{Exchange, Hybrid, LedgerSnapshot, MeshDevice, Placement, Upload};
use owt_models::{AlexNet, Architecture, DropoutKey, KeyedDropout};

use crate::data::Batch;
use crate::error::OwtError;
use crate::parallel::{sync_gradients, LayerPhases, Plan};
use crate::train::input::{bytes_on_device, normalise_on_device};
use crate::train::trainer::batch_tensors;

/// How a run places its model and batches and turns a loss into gradients.
pub trait Layout<B: AutodiffBackend> {
    /// The device tensors are created on (a mesh for [`MeshLayout`]).
    fn device(&self) -> &B::Device;

    /// Ranks the batch is split over (1 on a single device): the chunk count of the
    /// per-chunk FC update.
    fn ranks(&self) -> usize;

    /// One line saying where the run executes.
    fn describe(&self) -> String;

    /// Checks that a run of `arch` with global batch `batch` can use this layout (the model's
    /// own parameters are checked when it is placed).
    fn check(&self, arch: &Architecture, batch: usize) -> Result<(), OwtError>;

    /// The model with its parameters where the layout wants them, or why they cannot go there.
    fn place_model(&self, model: AlexNet<B>) -> Result<AlexNet<B>, OwtError>;

    /// A batch laid out as the layout's input.
    fn place_batch(&self, images: Tensor<B, 4>, labels: Tensor<B, 1, Int>) -> (Tensor<B, 4>, Tensor<B, 1, Int>);

    /// A host batch on the device, laid out as the layout's input: on a mesh each rank
    /// receives only its own piece; pixels go as bytes where the backend has them and are
    /// normalised on the device.
    fn upload_batch(&self, batch: &Batch) -> (Tensor<B, 4>, Tensor<B, 1, Int>);

    /// [`Layout::upload_batch`] for evaluation (no autodiff).
    fn upload_eval(&self, batch: &Batch) -> (Tensor<B::InnerBackend, 4>, Tensor<B::InnerBackend, 1, Int>);

    /// The conv trunk's features (labelled per layer on a mesh). Starts a new step's labels.
    fn features(&self, model: &AlexNet<B>, images: Tensor<B, 4>) -> Tensor<B, 2>;

    /// Logits from features through fc6..fc8, ready for the loss (labelled per layer), with
    /// the dropout masks `key` names.
    fn classifier(&self, model: &AlexNet<B>, features: Tensor<B, 2>, key: DropoutKey) -> Tensor<B, 2>;

    /// The backward pass from `loss` (labelled per layer on a mesh).
    fn backward(&self, loss: Tensor<B, 1>) -> B::Gradients;

    /// The gradients of `model`'s parameters, each brought to its parameter's placement (the
    /// gradient sync, labelled per layer on a mesh), ready for the optimizer.
    fn sync(&self, model: &AlexNet<B>, grads: B::Gradients) -> GradientsParams;

    /// What moved between ranks since the last reset (`None` on a single device).
    fn traffic(&self) -> Option<LedgerSnapshot>;

    /// Clears the traffic record.
    fn reset_traffic(&self);
}

/// Everything on one device of an autodiff backend.
#[derive(Debug, Clone)]
pub struct SingleDevice<B: AutodiffBackend> {
    device: B::Device,
}

impl<B: AutodiffBackend> SingleDevice<B> {
    /// The layout on `device`.
    pub fn new(device: B::Device) -> Self {
        Self { device }
    }
}

impl<B: AutodiffBackend> Layout<B> for SingleDevice<B> {
    fn device(&self) -> &B::Device {
        &self.device
    }

    fn ranks(&self) -> usize {
        1
    }

    fn describe(&self) -> String {
        format!("one device ({:?})", self.device)
    }

    fn check(&self, _arch: &Architecture, _batch: usize) -> Result<(), OwtError> {
        Ok(())
    }

    fn place_model(&self, model: AlexNet<B>) -> Result<AlexNet<B>, OwtError> {
        Ok(model)
    }

    fn place_batch(&self, images: Tensor<B, 4>, labels: Tensor<B, 1, Int>) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
        (images, labels)
    }

    fn upload_batch(&self, batch: &Batch) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
        batch_tensors::<B>(batch, &self.device)
    }

    fn upload_eval(&self, batch: &Batch) -> (Tensor<B::InnerBackend, 4>, Tensor<B::InnerBackend, 1, Int>) {
        batch_tensors::<B::InnerBackend>(batch, &self.device)
    }

    fn features(&self, model: &AlexNet<B>, images: Tensor<B, 4>) -> Tensor<B, 2> {
        model.forward_features(images)
    }

    fn classifier(&self, model: &AlexNet<B>, features: Tensor<B, 2>, key: DropoutKey) -> Tensor<B, 2> {
        model.forward_classifier_hooked(features, &mut KeyedDropout(key))
    }

    fn backward(&self, loss: Tensor<B, 1>) -> B::Gradients {
        loss.backward()
    }

    fn sync(&self, model: &AlexNet<B>, grads: B::Gradients) -> GradientsParams {
        GradientsParams::from_grads(grads, model)
    }

    fn traffic(&self) -> Option<LedgerSnapshot> {
        None
    }

    fn reset_traffic(&self) {}
}

/// A mesh of ranks of inner backend `IB`, a plan and an exchange scheme.
pub struct MeshLayout<IB: Backend> {
    mesh: MeshDevice<IB::Device>,
    plan: Plan,
}

impl<IB: Backend> MeshLayout<IB> {
    /// The layout of `plan` on `mesh`, exchanging activities by `scheme`.
    pub fn new(mesh: MeshDevice<IB::Device>, plan: Plan, scheme: Exchange) -> Self {
        mesh.set_exchange(scheme);
        Self { mesh, plan }
    }

    /// The mesh.
    pub fn mesh(&self) -> &MeshDevice<IB::Device> {
        &self.mesh
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}

type AH<IB> = Autodiff<Hybrid<IB>>;

/// A host batch on a mesh as `placement`, each rank uploading only its piece (bytes
/// normalised on the device where the inner backend has byte tensors).
fn upload_placed<B, IB>(
    batch: &Batch,
    placement: Placement,
    mesh: &MeshDevice<IB::Device>,
) -> (Tensor<B, 4>, Tensor<B, 1, Int>)
where
    B: Backend<Device = MeshDevice<IB::Device>>,
    IB: Backend,
    Tensor<B, 4>: Upload<IB::Device>,
    Tensor<B, 4, Int>: Upload<IB::Device>,
    Tensor<B, 1, Int>: Upload<IB::Device>,
{
    let images = if bytes_on_device::<B>(mesh) {
        normalise_on_device(Tensor::<B, 4, Int>::upload(batch.pixel_data(), placement, mesh, Some(DType::U8)))
    } else {
        Tensor::<B, 4>::upload(batch.normalised_data(), placement, mesh, None)
    };
    (images, Tensor::<B, 1, Int>::upload(batch.label_data(), placement, mesh, None))
}

impl<IB: Backend> Layout<AH<IB>> for MeshLayout<IB> {
    fn device(&self) -> &MeshDevice<IB::Device> {
        &self.mesh
    }

    fn ranks(&self) -> usize {
        self.mesh.size()
    }

    fn describe(&self) -> String {
        format!("{} ranks, plan {}, scheme {}", self.mesh.size(), self.plan.name, self.mesh.exchange().letter())
    }

    fn check(&self, arch: &Architecture, batch: usize) -> Result<(), OwtError> {
        self.plan.check_run(arch, self.mesh.size(), batch)
    }

    fn place_model(&self, model: AlexNet<AH<IB>>) -> Result<AlexNet<AH<IB>>, OwtError> {
        self.plan.try_apply(model, self.mesh.size())
    }

    fn place_batch(
        &self,
        images: Tensor<AH<IB>, 4>,
        labels: Tensor<AH<IB>, 1, Int>,
    ) -> (Tensor<AH<IB>, 4>, Tensor<AH<IB>, 1, Int>) {
        self.plan.place_batch(images, labels)
    }

    fn upload_batch(&self, batch: &Batch) -> (Tensor<AH<IB>, 4>, Tensor<AH<IB>, 1, Int>) {
        upload_placed::<AH<IB>, IB>(batch, self.plan.input, &self.mesh)
    }

    fn upload_eval(&self, batch: &Batch) -> (Tensor<Hybrid<IB>, 4>, Tensor<Hybrid<IB>, 1, Int>) {
        upload_placed::<Hybrid<IB>, IB>(batch, self.plan.input, &self.mesh)
    }

    fn features(&self, model: &AlexNet<AH<IB>>, images: Tensor<AH<IB>, 4>) -> Tensor<AH<IB>, 2> {
        let mut phases = LayerPhases::new(&self.mesh);
        let features = model.forward_features_hooked(images, &mut phases);
        phases.close(features)
    }

    fn classifier(&self, model: &AlexNet<AH<IB>>, features: Tensor<AH<IB>, 2>, key: DropoutKey) -> Tensor<AH<IB>, 2> {
        let mut phases = LayerPhases::new(&self.mesh).with_dropout(key);
        let logits = model.forward_classifier_hooked(features, &mut phases);
        phases.enter_loss(logits)
    }

    fn backward(&self, loss: Tensor<AH<IB>, 1>) -> <AH<IB> as AutodiffBackend>::Gradients {
        self.mesh.set_phase(Some(&crate::parallel::phases::phase_label("loss", "backward")));
        loss.backward()
    }

    fn sync(&self, model: &AlexNet<AH<IB>>, grads: <AH<IB> as AutodiffBackend>::Gradients) -> GradientsParams {
        sync_gradients(model, GradientsParams::from_grads(grads, model), &self.mesh)
    }

    fn traffic(&self) -> Option<LedgerSnapshot> {
        Some(self.mesh.ledger_snapshot())
    }

    fn reset_traffic(&self) {
        self.mesh.reset_ledger()
    }
}
