//! A layout of a user's own, written from the four small traits a `StepLayout` is made of:
//! data parallelism by hand on a mesh of two ranks (the batch split by rows as it is fed,
//! every parameter whole where it was made, each gradient summed by `sync_gradients`). Only
//! what differs from one device is written; everything else is the traits' defaults. The
//! step written once against `StepLayout` ends with one device's weights, and the gradient
//! sums move their ring volume.

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::TensorData;
use owt_hybrid::{
    sync_gradients, Distributed, Feed, GradientSync, Hybrid, LedgerSnapshot, MeshDevice, ModulePlacement, NoLabels,
    Placement, SingleDevice, StepLayout, StepMesh, Upload,
};

type H = Autodiff<Hybrid<Flex>>;

/// The batch split by rows over the mesh's ranks, parameters whole on each.
struct RowsSplit {
    mesh: MeshDevice<FlexDevice>,
}

impl Feed<H> for RowsSplit {
    fn device(&self) -> &MeshDevice<FlexDevice> {
        &self.mesh
    }

    fn place_input<const D: usize>(&self, x: Tensor<H, D>) -> Tensor<H, D> {
        x.distribute(Placement::Shard(0))
    }

    fn upload_input<const D: usize>(&self, data: TensorData) -> Tensor<H, D> {
        Tensor::upload(data, Placement::Shard(0), &self.mesh, None)
    }
}

/// Parameters stay where the model was made: whole on every rank.
impl ModulePlacement<H> for RowsSplit {}

impl GradientSync<H> for RowsSplit {
    type Labels = NoLabels;

    fn labels(&self) -> NoLabels {
        NoLabels
    }

    fn sync<M: AutodiffModule<H>>(&self, module: &M, grads: GradientsParams) -> GradientsParams {
        sync_gradients(module, grads, &self.mesh)
    }
}

impl StepMesh for RowsSplit {
    fn ranks(&self) -> usize {
        self.mesh.size()
    }

    fn describe(&self) -> String {
        format!("rows split over {} ranks", self.mesh.size())
    }

    fn traffic(&self) -> Option<LedgerSnapshot> {
        Some(self.mesh.ledger_snapshot())
    }

    fn reset_traffic(&self) {
        self.mesh.reset_ledger()
    }
}

/// Two SGD steps of a linear layer on a squared loss, written once for any layout.
fn steps<B: AutodiffBackend, L: StepLayout<B>>(layout: &L) -> Vec<f32> {
    let init = burn::nn::Initializer::Constant { value: 0.1 };
    let mut model: Linear<B> = LinearConfig::new(8, 4).with_initializer(init).init(layout.device());
    model = layout.place_module(model).unwrap();
    let mut optim = SgdConfig::new().init::<B, Linear<B>>();
    for step in 0..2 {
        let values: Vec<f32> = (0..16 * 8).map(|i| ((i * 7 + step * 3) % 11) as f32 / 11.0 - 0.5).collect();
        let x = layout.upload_input::<2>(TensorData::new(values, [16, 8]));
        let grads = layout.gradients(&model, model.forward(x).powf_scalar(2.0).mean());
        let grads = layout.sync(&model, grads);
        model = optim.step(0.1, model, grads);
    }
    model.valid().weight.val().into_data().to_vec::<f32>().unwrap()
}

#[test]
fn a_layout_written_from_the_small_traits_trains_as_one_device() {
    let one = steps(&SingleDevice::<Autodiff<Flex>>::new(Default::default()));
    let layout = RowsSplit { mesh: MeshDevice::virtual_ranks(FlexDevice, 2) };
    let two = steps(&layout);
    assert!(one.iter().zip(&two).all(|(a, b)| (a - b).abs() <= 1e-6), "{one:?} vs {two:?}");
    assert_ne!(one, vec![0.1; 32], "the steps moved the weights");
    // Each step's weight gradient (8 x 4 f32) summed on a ring of 2: 2 (K - 1) x 128 bytes.
    let ledger = layout.traffic().unwrap();
    assert_eq!(ledger.by_phase("weight:sync").bytes, 2 * 2 * 128);
    assert_eq!(ledger.total_fallbacks(), 0);
    assert_eq!(layout.describe(), "rows split over 2 ranks");
}
