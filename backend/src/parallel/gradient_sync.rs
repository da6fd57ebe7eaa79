//! The gradient sync: every parameter's gradient brought to the parameter's placement along
//! every mesh dimension (a pending sum over the ranks or the nodes all-reduced: the
//! data-parallel sync falls out of the placements), parameter by parameter before the
//! optimizer runs, each labelled `layer:sync` by the module that holds it.

use burn::backend::Autodiff;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;

use crate::api::distributed::Distributed;
use crate::backend::Hybrid;
use crate::ledger::{Phase, Stage};
use crate::mesh::MeshDevice;
use crate::parallel::layer_labels::layer_of;

type AH<IB> = Autodiff<Hybrid<IB>>;

/// What [`map_gradients`] makes of one parameter's gradient.
pub(crate) trait GradientMap<IB: Backend> {
    /// `param`'s gradient `grad`, transformed.
    fn map<const D: usize>(
        &mut self,
        param: &Param<Tensor<AH<IB>, D>>,
        grad: Tensor<Hybrid<IB>, D>,
    ) -> Tensor<Hybrid<IB>, D>;
}

/// Walks a module's parameters with their paths, replacing each one's gradient by `map`'s.
struct GradientMapper<'a, IB: Backend, F> {
    path: Vec<String>,
    grads: &'a mut GradientsParams,
    mesh: &'a MeshDevice<IB::Device>,
    map: F,
}

impl<IB: Backend, F: GradientMap<IB>> ModuleVisitor<AH<IB>> for GradientMapper<'_, IB, F> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AH<IB>, D>>) {
        let Some(grad) = self.grads.remove::<Hybrid<IB>, D>(param.id) else { return };
        let path = self.path.join(".");
        self.mesh.set_phase(Some(Phase::of(layer_of(&path), Stage::Sync)));
        let grad = self.map.map(param, grad);
        self.grads.register::<Hybrid<IB>, D>(param.id, grad);
    }
}

/// Replaces every gradient of `module`'s parameters in `grads` by `map`'s, in module order,
/// each labelled `layer:sync` on `mesh` by the module that holds the parameter
/// ([`layer_of`]); the phase is cleared after. What every gradient sync is made of.
pub(crate) fn map_gradients<IB: Backend, M: Module<AH<IB>>>(
    module: &M,
    grads: &mut GradientsParams,
    mesh: &MeshDevice<IB::Device>,
    map: impl GradientMap<IB>,
) {
    module.visit(&mut GradientMapper { path: Vec::new(), grads, mesh, map });
    mesh.set_phase(None);
}

/// Each gradient brought to its parameter's placement along every mesh dimension (inside
/// each node first, then over the nodes).
struct ToParamPlacement;

impl<IB: Backend> GradientMap<IB> for ToParamPlacement {
    fn map<const D: usize>(
        &mut self,
        param: &Param<Tensor<AH<IB>, D>>,
        grad: Tensor<Hybrid<IB>, D>,
    ) -> Tensor<Hybrid<IB>, D> {
        grad.distribute_all(&param.val().placements())
    }
}

/// Brings every gradient to its parameter's placement (a Partial gradient of a replicated
/// parameter is all-reduced: the data-parallel gradient sync), labelled `layer:sync` by the
/// module that holds the parameter ([`layer_of`]), so the optimizer step that follows moves
/// nothing.
/// Without it an optimizer still computes the same update (the placement rules resolve the
/// pending sums where the update needs them), with its traffic labelled by the optimizer's ops.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::nn::LinearConfig;
/// use burn::optim::GradientsParams;
/// use burn::prelude::*;
/// use owt_hybrid::{sync_gradients, Distributed, Hybrid, MeshDevice, Placement};
///
/// type B = Autodiff<Hybrid<Flex>>;
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let layer = LinearConfig::new(4, 2).init::<B>(&mesh); // replicated: data parallel
/// let x = Tensor::<B, 2>::ones([6, 4], &mesh).distribute(Placement::Shard(0));
/// let grads = GradientsParams::from_grads(layer.forward(x).sum().backward(), &layer);
/// mesh.reset_ledger();
/// let grads = sync_gradients(&layer, grads, &mesh);
/// let weight = grads.get::<Hybrid<Flex>, 2>(layer.weight.id).unwrap();
/// assert_eq!(weight.placement(), Placement::Replicate);
/// // The weight's pending sum all-reduced on a ring, 2 (K - 1) x its 4 x 2 x 4 bytes; the bias
/// // gradient (a sum of the whole output gradient) is whole already.
/// let ledger = mesh.ledger_snapshot();
/// assert_eq!(ledger.by_phase("weight:sync").bytes, 2 * (2 - 1) * 8 * 4);
/// assert_eq!(ledger.by_phase("bias:sync").bytes, 0);
/// ```
pub fn sync_gradients<IB: Backend, M: Module<AH<IB>>>(
    module: &M,
    grads: GradientsParams,
    mesh: &MeshDevice<IB::Device>,
) -> GradientsParams {
    let mut grads = grads;
    map_gradients(module, &mut grads, mesh, ToParamPlacement);
    grads
}
