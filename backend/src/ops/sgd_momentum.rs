//! The step on `Hybrid`: each rank steps its pieces of every parameter together (a replicated
//! parameter whole, a column-split one its columns), which is what the per-parameter step does
//! piece by piece; nothing moves.

use crate::backend::Hybrid;
use crate::tensor::dtensor::DTensor;

use crate::kernels::sgd_momentum::{MultiTensorSgdBackend, SgdMomentum, SgdStepped, SgdTensors};

impl<B: MultiTensorSgdBackend> MultiTensorSgdBackend for Hybrid<B> {
    /// Parameters whose three tensors are laid out alike along every mesh dimension and are
    /// not pending sums, and whose pieces each rank's backend steps together.
    fn sgd_takes(params: &[SgdTensors<Self>]) -> bool {
        let alike = |a: &DTensor<B, _>, b: &DTensor<B, _>| a.placements() == b.placements() && a.shape == b.shape;
        let laid_out = params.iter().all(|t| {
            !t.param.placements().iter().any(|p| p.is_partial())
                && alike(&t.param, &t.grad)
                && t.velocity.as_ref().is_none_or(|v| alike(&t.param, v))
        });
        laid_out && !params.is_empty() && (0..params[0].param.shards.len()).all(|i| B::sgd_takes(&pieces(params, i)))
    }

    fn sgd_momentum_step(params: Vec<SgdTensors<Self>>, hyper: SgdMomentum) -> Vec<SgdStepped<Self>> {
        let Some(first) = params.first() else { return Vec::new() };
        let ranks = first.param.shards.len();
        // Per local rank, every parameter's new piece and velocity piece.
        let mut per_rank: Vec<std::vec::IntoIter<SgdStepped<B>>> =
            (0..ranks).map(|i| B::sgd_momentum_step(pieces(&params, i), hyper).into_iter()).collect();
        params
            .into_iter()
            .map(|t| {
                let (values, velocities): (Vec<_>, Vec<_>) =
                    per_rank.iter_mut().map(|r| r.next().expect("a piece per parameter")).unzip();
                let velocity = DTensor { shards: velocities, kept: Default::default(), ..t.param.clone() };
                let value = DTensor { shards: values, kept: Default::default(), ..t.param };
                (value, velocity)
            })
            .collect()
    }
}

/// Local rank `i`'s pieces of every parameter's tensors.
fn pieces<B: MultiTensorSgdBackend>(params: &[SgdTensors<Hybrid<B>>], i: usize) -> Vec<SgdTensors<B>> {
    params
        .iter()
        .map(|t| SgdTensors {
            param: t.param.shards[i].clone(),
            grad: t.grad.shards[i].clone(),
            velocity: t.velocity.as_ref().map(|v| v.shards[i].clone()),
        })
        .collect()
}
