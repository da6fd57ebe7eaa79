//! Weights that hold NaN or infinities: found by path, so whatever loads weights (an import,
//! a checkpoint) can refuse them where they enter instead of training or evaluating on them.

use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;

/// The paths of `module`'s float parameters holding a NaN or an infinity: weights that
/// would make every later loss NaN, refused where they enter (an import, a checkpoint).
pub fn non_finite_parameters<B: Backend, M: Module<B>>(module: &M) -> Vec<String> {
    struct Finder {
        path: Vec<String>,
        found: Vec<String>,
    }
    impl<B: Backend> ModuleVisitor<B> for Finder {
        fn enter_module(&mut self, name: &str, _container_type: &str) {
            self.path.push(name.to_string());
        }
        fn exit_module(&mut self, _name: &str, _container_type: &str) {
            self.path.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if !param.val().into_data().iter::<f64>().all(f64::is_finite) {
                self.found.push(self.path.join("."));
            }
        }
    }
    let mut finder = Finder { path: Vec::new(), found: Vec::new() };
    module.visit(&mut finder);
    finder.found
}
