//! A Burn module's parameters by their dotted paths (`conv1.weight`, `fc6.bias`, ...): each
//! redistributed to the placement a rule gives for its path (how a parallel plan is applied to
//! a model), and their shapes, values or gradients listed path by path (what plans are checked
//! against and what tests compare).

use burn::backend::Autodiff;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use crate::api::distributed::Distributed;
use crate::backend::Hybrid;
use crate::spec::placement::Placement;

struct Placer<'a> {
    path: Vec<String>,
    rule: &'a mut dyn FnMut(&str, &[usize]) -> Placement,
}

impl<IB: Backend> ModuleMapper<Autodiff<Hybrid<IB>>> for Placer<'_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(
        &mut self,
        param: Param<Tensor<Autodiff<Hybrid<IB>>, D>>,
    ) -> Param<Tensor<Autodiff<Hybrid<IB>>, D>> {
        let (id, tensor, mapper) = param.consume();
        let placement = (self.rule)(&self.path.join("."), &tensor.dims());
        Param::from_mapped_value(id, tensor.distribute(placement), mapper)
    }
}

/// Gives every float parameter of `module` the placement `rule(path, shape)` returns.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::nn::LinearConfig;
/// use owt_hybrid::{parameter_paths, place_parameters, Distributed, Hybrid, MeshDevice, Placement};
///
/// type B = Autodiff<Hybrid<Flex>>;
/// let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
/// let layer = LinearConfig::new(8, 6).init::<B>(&mesh);
/// assert_eq!(parameter_paths(&layer), vec![("weight".to_string(), vec![8, 6]), ("bias".to_string(), vec![6])]);
/// let layer = place_parameters(layer, |path, _shape| match path {
///     "weight" => Placement::Shard(1),
///     _ => Placement::Shard(0),
/// });
/// assert_eq!(layer.weight.val().local_shapes(), vec![vec![8, 3], vec![8, 3]]);
/// ```
pub fn place_parameters<IB: Backend, M: Module<Autodiff<Hybrid<IB>>>>(
    module: M,
    mut rule: impl FnMut(&str, &[usize]) -> Placement,
) -> M {
    let mut placer = Placer { path: Vec::new(), rule: &mut rule };
    module.map(&mut placer)
}

/// Visits every float parameter with its dotted path.
struct Walker<F> {
    path: Vec<String>,
    visit: F,
}

impl<B: Backend, F: FnMut(String, &dyn ParamView)> ModuleVisitor<B> for Walker<F> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        (self.visit)(self.path.join("."), &ParamOf(param));
    }
}

/// What a walker callback may ask of a parameter of any rank.
trait ParamView {
    fn dims(&self) -> Vec<usize>;
    fn values(&self) -> Vec<f64>;
}

struct ParamOf<'a, B: Backend, const D: usize>(&'a Param<Tensor<B, D>>);

impl<B: Backend, const D: usize> ParamView for ParamOf<'_, B, D> {
    fn dims(&self) -> Vec<usize> {
        self.0.dims().to_vec()
    }

    fn values(&self) -> Vec<f64> {
        self.0.val().into_data().convert::<f64>().to_vec::<f64>().expect("f64 data")
    }
}

fn walk<B: Backend, M: Module<B>, T>(module: &M, mut f: impl FnMut(&dyn ParamView) -> T) -> Vec<(String, T)> {
    let mut found = Vec::new();
    let mut walker = Walker { path: Vec::new(), visit: |path: String, p: &dyn ParamView| found.push((path, f(p))) };
    module.visit(&mut walker);
    found
}

/// Every float parameter's path and shape, in module order.
pub fn parameter_paths<B: Backend, M: Module<B>>(module: &M) -> Vec<(String, Vec<usize>)> {
    walk(module, |p| p.dims())
}

/// Every float parameter's path and values (read back whole, widened to f64 so f64 runs are
/// compared at their own precision), in module order.
pub fn parameter_values<B: Backend, M: Module<B>>(module: &M) -> Vec<(String, Vec<f64>)> {
    walk(module, |p| p.values())
}

/// Visits every float parameter's gradient in a [`GradientsParams`], with its dotted path.
struct GradientWalker<'a, F> {
    path: Vec<String>,
    grads: &'a GradientsParams,
    visit: F,
}

impl<B: AutodiffBackend, F: FnMut(String, Option<Vec<f64>>)> ModuleVisitor<B> for GradientWalker<'_, F> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let grad = self
            .grads
            .get::<B::InnerBackend, D>(param.id)
            .map(|g| g.into_data().convert::<f64>().to_vec::<f64>().expect("f64 data"));
        (self.visit)(self.path.join("."), grad);
    }
}

/// Every float parameter's path and gradient in `grads` (read back whole as f64; `None` where
/// the parameter has none), in module order: what tests compare tensor by tensor.
pub fn gradient_values<B: AutodiffBackend, M: Module<B>>(
    module: &M,
    grads: &GradientsParams,
) -> Vec<(String, Option<Vec<f64>>)> {
    let mut found = Vec::new();
    let mut walker =
        GradientWalker { path: Vec::new(), grads, visit: |path: String, g: Option<Vec<f64>>| found.push((path, g)) };
    module.visit(&mut walker);
    found
}
