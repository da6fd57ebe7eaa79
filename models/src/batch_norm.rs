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
    batch_norm_in_groups(bn, x, 1)
}

/// [`batch_norm`] whose training pass takes the statistics of each of `groups` groups of rows
/// on its own: the rows split as evenly as possible, the first `n % groups` groups a row
/// larger (as a mesh splits a batch into shards), an empty group left out. This is what DDP's
/// `BatchNorm2d` computes on each rank, written as one pass over the whole batch so that a
/// mesh whose ranks each hold one group computes it without moving the maps. The running
/// statistics move by the mean over the groups of each group's mean and unbiased variance, so
/// they stay one value, the same on every rank. `groups` of 0 or 1: the whole batch's
/// statistics.
///
/// ```
/// use burn::backend::{Autodiff, Flex};
/// use burn::nn::BatchNormConfig;
/// use burn::prelude::*;
///
/// type B = Autodiff<Flex>;
/// let device = Default::default();
/// let bn = BatchNormConfig::new(1).init::<B>(&device);
/// // Two groups of two rows: {1, 3} and {5, 7}, each of mean +-1 around its own centre.
/// let x = Tensor::<B, 4>::from_floats([[[[1.0]]], [[[3.0]]], [[[5.0]]], [[[7.0]]]], &device);
/// let y = owt_models::batch_norm_in_groups(&bn, x, 2).into_data().to_vec::<f32>().unwrap();
/// let one = 1.0 / (1.0f32 + 1e-5).sqrt();
/// for (got, want) in y.iter().zip([-one, one, -one, one]) {
///     assert!((got - want).abs() < 1e-5);
/// }
/// // Running mean 0.1 * mean(2, 6) = 0.4; variance 0.9 + 0.1 * 2 (each group's unbiased 2).
/// let mean = bn.running_mean.value_sync().into_data().to_vec::<f32>().unwrap()[0];
/// let var = bn.running_var.value_sync().into_data().to_vec::<f32>().unwrap()[0];
/// assert!((mean - 0.4).abs() < 1e-6 && (var - 1.1).abs() < 1e-6);
/// ```
pub fn batch_norm_in_groups<B: Backend>(bn: &BatchNorm<B>, x: Tensor<B, 4>, groups: usize) -> Tensor<B, 4> {
    let [n, c, h, w] = x.dims();
    if !B::ad_enabled(&x.device()) {
        // The running statistics stay in their own precision (f32 under mixed precision, as
        // the master weights); the normalisation computes in the input's.
        let mean = bn.running_mean.value_sync().reshape([1, c, 1, 1]).cast(x.dtype());
        let var = bn.running_var.value_sync().reshape([1, c, 1, 1]).cast(x.dtype());
        return normalise(bn, x, mean, var);
    }
    let groups = groups.max(1);
    let sizes: Vec<usize> = (0..groups).map(|g| n / groups + usize::from(g < n % groups)).filter(|&s| s > 0).collect();
    // PyTorch's running variance is the unbiased estimate (of one value: the biased one).
    let unbiased = |rows: usize| {
        let count = rows * h * w;
        if count > 1 {
            count as f64 / (count - 1) as f64
        } else {
            1.0
        }
    };
    let (y, batch_mean, batch_var) = if sizes.len() <= 1 {
        let (mean, var) = statistics(x.clone());
        // The normalisation first, then the running statistics from the same tensors: on a mesh
        // the batch's statistics are pending sums, reduced once by their first use.
        let y = normalise(bn, x, mean.clone(), var.clone());
        (y, mean.detach().reshape([c]), var.detach().reshape([c]).mul_scalar(unbiased(n)))
    } else if sizes.iter().all(|&s| s == sizes[0]) {
        // Equal groups: one pass over `[groups, rows, c, h, w]`, each group's statistics a
        // mean over its own rows (local to the rank that holds them).
        let (g, rows) = (sizes.len(), sizes[0]);
        let x5 = x.reshape([g, rows, c, h, w]);
        let mean = x5.clone().mean_dim(1).mean_dim(3).mean_dim(4);
        let var = (x5.clone() - mean.clone()).square().mean_dim(1).mean_dim(3).mean_dim(4);
        let scale = bn.gamma.val().reshape([1, 1, c, 1, 1]) / var.clone().add_scalar(bn.epsilon).sqrt();
        let y = (x5 - mean.clone()) * scale + bn.beta.val().reshape([1, 1, c, 1, 1]);
        let running_mean = mean.detach().mean_dim(0).reshape([c]);
        let running_var = var.detach().mean_dim(0).reshape([c]).mul_scalar(unbiased(rows));
        (y.reshape([n, c, h, w]), running_mean, running_var)
    } else {
        // Unequal groups (a short batch on a mesh it does not divide): group by group.
        let mut start = 0;
        let mut pieces = Vec::with_capacity(sizes.len());
        let (mut means, mut vars) = (Vec::with_capacity(sizes.len()), Vec::with_capacity(sizes.len()));
        for &rows in &sizes {
            let piece = x.clone().slice([start..start + rows]);
            start += rows;
            let (mean, var) = statistics(piece.clone());
            means.push(mean.clone().detach().reshape([c]));
            vars.push(var.clone().detach().reshape([c]).mul_scalar(unbiased(rows)));
            pieces.push(normalise(bn, piece, mean, var));
        }
        let count = sizes.len() as f64;
        let mean_of = |v: Vec<Tensor<B, 1>>| v.into_iter().reduce(|a, b| a + b).expect("a group").div_scalar(count);
        (Tensor::cat(pieces, 0), mean_of(means), mean_of(vars))
    };
    let momentum = bn.momentum;
    // A batch's statistics in a low precision (mixed precision's compute copy) are widened to
    // the running statistics' own before they are folded in: the running state keeps its dtype
    // (f32, as the master weights), whatever the step computed in.
    let (running_mean, running_var) = (bn.running_mean.value_sync(), bn.running_var.value_sync());
    let (batch_mean, batch_var) = (batch_mean.cast(running_mean.dtype()), batch_var.cast(running_var.dtype()));
    let running_mean = running_mean.mul_scalar(1.0 - momentum) + batch_mean.mul_scalar(momentum);
    let running_var = running_var.mul_scalar(1.0 - momentum) + batch_var.mul_scalar(momentum);
    bn.running_mean.update(running_mean.detach());
    bn.running_var.update(running_var.detach());
    y
}

/// The mean and the biased variance of `x` over images and positions, `[1, c, 1, 1]` each.
fn statistics<B: Backend>(x: Tensor<B, 4>) -> (Tensor<B, 4>, Tensor<B, 4>) {
    let mean = x.clone().mean_dim(0).mean_dim(2).mean_dim(3);
    let var = (x - mean.clone()).square().mean_dim(0).mean_dim(2).mean_dim(3);
    (mean, var)
}

/// `x` normalised by `mean` and `var` (`[1, c, 1, 1]`), then scaled and shifted.
fn normalise<B: Backend>(bn: &BatchNorm<B>, x: Tensor<B, 4>, mean: Tensor<B, 4>, var: Tensor<B, 4>) -> Tensor<B, 4> {
    let c = x.dims()[1];
    let scale = bn.gamma.val().reshape([1, c, 1, 1]) / var.add_scalar(bn.epsilon).sqrt();
    (x - mean) * scale + bn.beta.val().reshape([1, c, 1, 1])
}
