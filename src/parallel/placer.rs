//! Walks a Burn module and redistributes each parameter to the placement a rule gives for its
//! path (`conv1.weight`, `fc6.bias`, ...): how a parallel plan is applied to a model.

use burn::backend::Autodiff;
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::prelude::*;

use owt_hybrid::{Distributed, Hybrid, Placement};

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

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<Autodiff<Hybrid<IB>>, D>>) -> Param<Tensor<Autodiff<Hybrid<IB>>, D>> {
        let (id, tensor, mapper) = param.consume();
        let placement = (self.rule)(&self.path.join("."), &tensor.dims());
        Param::from_mapped_value(id, tensor.distribute(placement), mapper)
    }
}

/// Gives every float parameter of `module` the placement `rule(path, shape)` returns.
pub fn place_parameters<IB: Backend, M: Module<Autodiff<Hybrid<IB>>>>(module: M, mut rule: impl FnMut(&str, &[usize]) -> Placement) -> M {
    let mut placer = Placer { path: Vec::new(), rule: &mut rule };
    module.map(&mut placer)
}

struct Paths {
    path: Vec<String>,
    found: Vec<(String, Vec<usize>)>,
}

impl<B: Backend> ModuleVisitor<B> for Paths {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.found.push((self.path.join("."), param.dims().to_vec()));
    }
}

/// Every float parameter's path and shape, in module order.
pub fn parameter_paths<B: Backend, M: Module<B>>(module: &M) -> Vec<(String, Vec<usize>)> {
    let mut v = Paths { path: Vec::new(), found: Vec::new() };
    module.visit(&mut v);
    v.found
}

struct Values {
    path: Vec<String>,
    found: Vec<(String, Vec<f32>)>,
}

impl<B: Backend> ModuleVisitor<B> for Values {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let values = param.val().into_data().convert::<f32>().to_vec::<f32>().expect("f32 data");
        self.found.push((self.path.join("."), values));
    }
}

/// Every float parameter's path and values (read back whole), in module order.
pub fn parameter_values<B: Backend, M: Module<B>>(module: &M) -> Vec<(String, Vec<f32>)> {
    let mut v = Values { path: Vec::new(), found: Vec::new() };
    module.visit(&mut v);
    v.found
}
