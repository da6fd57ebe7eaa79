//! Batch normalisation (Ioffe and Szegedy 2015) as the VGG-BN networks use it after every
//! convolution, with PyTorch's arithmetic: a training pass normalises by the batch's mean and
//! biased variance over images and positions, and moves the running mean and the running
//! (unbiased) variance by `momentum`; an evaluation pass normalises by the running ones.
//!
//! Burn's [`BatchNorm`] module holds the parameters and the state (its names, `gamma`, `beta`,
//! `running_mean`, `running_var`, are what records and the torchvision adapters know); the
//! pass is written here because Burn's keeps the biased variance as the running one (so
//! imported torchvision statistics would drift from PyTorch's under fine-tuning) and reaches
//! its statistics through a transpose and reshape of the whole batch. Here they are means
//! over the batch, height and width dimensions of the maps as they are.

use burn::prelude::*;

pub use burn::nn::BatchNorm;

/// `bn` applied to `x` `[batch, channels, height, width]`: the training pass where the
/// backend records gradients (as Burn's own `BatchNorm::forward`), the evaluation pass
/// elsewhere.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::nn::BatchNormConfig;
/// use burn::prelude::*;
///
/// type B = Autodiff<Flex>;
/// let device = Default::default();
/// let bn = BatchNormConfig::new(1).init::<B>(&device);
/// let x = Tensor::<B, 4>::from_floats([[[[1.0, 3.0]]], [[[5.0, 7.0]]]], &device);
/// let y = owt_models::batch_norm(&bn, x);
/// // mean 4, biased variance 5: (1 - 4) / sqrt(5 + 1e-5)
/// assert!((y.into_data().to_vec::<f32>().unwrap()[0] + 3.0 / 5f32.sqrt()).abs() < 1e-5);
/// // running variance: 0.9 + 0.1 * 20/3 (unbiased, as PyTorch keeps it)
/// let var = bn.running_var.value_sync().into_data().to_vec::<f32>().unwrap()[0];
/// assert!((var - (0.9 + 0.1 * 20.0 / 3.0)).abs() < 1e-6);
/// ```
pub fn batch_norm<B: Backend>(bn: &BatchNorm<B>, x: Tensor<B, 4>) -> Tensor<B, 4> {
    let [n, c, h, w] = x.dims();
    let (mean, var) = if B::ad_enabled(&x.device()) {
        let mean = x.clone().mean_dim(0).mean_dim(2).mean_dim(3);
        let var = (x.clone() - mean.clone()).square().mean_dim(0).mean_dim(2).mean_dim(3);
        let count = n * h * w;
        // PyTorch's running variance is the unbiased estimate (of one value: the biased one).
        let unbiased = if count > 1 { count as f64 / (count - 1) as f64 } else { 1.0 };
        let momentum = bn.momentum;
        let running_mean = bn.running_mean.value_sync().mul_scalar(1.0 - momentum)
            + mean.clone().detach().reshape([c]).mul_scalar(momentum);
        let running_var = bn.running_var.value_sync().mul_scalar(1.0 - momentum)
            + var.clone().detach().reshape([c]).mul_scalar(momentum * unbiased);
        bn.running_mean.update(running_mean.detach());
        bn.running_var.update(running_var.detach());
        (mean, var)
    } else {
        (bn.running_mean.value_sync().reshape([1, c, 1, 1]), bn.running_var.value_sync().reshape([1, c, 1, 1]))
    };
    let scale = bn.gamma.val().reshape([1, c, 1, 1]) / var.add_scalar(bn.epsilon).sqrt();
    (x - mean) * scale + bn.beta.val().reshape([1, c, 1, 1])
}
