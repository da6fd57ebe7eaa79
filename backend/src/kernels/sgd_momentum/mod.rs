//! SGD with momentum and weight decay over many parameters in a few launches: Burn's optimizer
//! steps each parameter by itself, some seven tensor ops apiece (a launch each on a backend
//! that does not fuse, a fused kernel or two per parameter on one that does); these kernels
//! step a group of parameters in one pass each, as PyTorch's `foreach` and fused optimizers do.
//! The arithmetic is Burn's `Sgd` with dampening 0 and without Nesterov, in its order:
//! `g = p * decay + g`; `v = g + v * momentum` (or `v = g` on a parameter's first step);
//! `p = p - v * lr`.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

#[cfg(feature = "cubecl")]
mod cube;
#[cfg(feature = "fusion")]
mod fusion;

/// The hyper-parameters of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdMomentum {
    /// The learning rate of this step.
    pub lr: f64,
    /// The momentum (Burn's `MomentumConfig::momentum`; dampening 0, no Nesterov).
    pub momentum: f64,
    /// The weight decay penalty (Burn's `WeightDecayConfig::penalty`), if any.
    pub weight_decay: Option<f32>,
}

/// One parameter's step: its value, its gradient, and its velocity (none before its first
/// step, when the velocity becomes the gradient).
#[derive(Debug, Clone)]
pub struct SgdTensors<B: Backend> {
    /// The parameter's value.
    pub param: FloatTensor<B>,
    /// Its gradient.
    pub grad: FloatTensor<B>,
    /// Its velocity, if it has one.
    pub velocity: Option<FloatTensor<B>>,
}

/// A parameter's new value and velocity.
pub type SgdStepped<B> = (FloatTensor<B>, FloatTensor<B>);

/// A backend that steps many parameters together.
pub trait MultiTensorSgdBackend: Backend {
    /// Whether the backend steps these parameters together (each parameter's three tensors of
    /// one shape and float type; on a mesh, laid out alike).
    fn sgd_takes(params: &[SgdTensors<Self>]) -> bool;

    /// Each parameter's new value and velocity, in the order given.
    fn sgd_momentum_step(params: Vec<SgdTensors<Self>>, hyper: SgdMomentum) -> Vec<SgdStepped<Self>>;
}

/// Whether every parameter's gradient and velocity have its shape, and all are of one float
/// type: what a backend's grouped launches take (its `sgd_takes`, where nothing else counts).
#[cfg(any(feature = "cubecl", feature = "fusion"))]
pub(crate) fn alike_and_float<B: Backend>(params: &[SgdTensors<B>]) -> bool {
    use burn::tensor::TensorMetadata;
    let Some(first) = params.first() else { return false };
    let dtype = first.param.dtype();
    dtype.is_float()
        && params.iter().all(|t| {
            let shape = t.param.shape();
            let like = |x: &FloatTensor<B>| x.dtype() == dtype && x.shape() == shape;
            like(&t.param) && like(&t.grad) && t.velocity.as_ref().is_none_or(like)
        })
}

/// Indices of `params` grouped so that each group runs in one launch: parameters with a
/// velocity apart from those without, at most `per_launch` to a group.
#[cfg(any(test, feature = "cubecl"))]
pub(crate) fn launch_groups<T>(params: &[SgdTensors<T>], per_launch: usize) -> Vec<Vec<usize>>
where
    T: Backend,
{
    let per_launch = per_launch.max(1);
    let mut groups = Vec::new();
    for with_velocity in [true, false] {
        let members: Vec<usize> =
            (0..params.len()).filter(|&i| params[i].velocity.is_some() == with_velocity).collect();
        groups.extend(members.chunks(per_launch).map(<[usize]>::to_vec));
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;
    use burn::prelude::*;

    fn entry(velocity: bool) -> SgdTensors<Flex> {
        let t = || Tensor::<Flex, 1>::zeros([2], &Default::default()).into_primitive().tensor();
        SgdTensors { param: t(), grad: t(), velocity: velocity.then(t) }
    }

    #[test]
    fn groups_keep_first_steps_apart_and_cover_every_parameter_once() {
        let params: Vec<_> = [true, false, true, true, false, true, true].into_iter().map(entry).collect();
        let groups = launch_groups(&params, 2);
        assert_eq!(groups, vec![vec![0, 2], vec![3, 5], vec![6], vec![1, 4]]);
        assert_eq!(launch_groups(&params, 0).len(), params.len(), "at least one to a launch");
    }
}
