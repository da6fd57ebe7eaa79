//! The bias gradient of a convolution: a plain sum over positions (contiguous), then over the
//! batch, where burn-backend's generic formulation first copies the whole output gradient to a
//! transposed layout.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// The gradient of a convolution's bias from its output gradient `grad` (`[n, o, ho, wo]`).
pub fn bias_grad<B: Backend>(grad: Tensor<B, 4>) -> Tensor<B, 1> {
    let [n, o, ho, wo] = grad.dims();
    grad.reshape([n, o, ho * wo]).sum_dim(2).sum_dim(0).reshape([o])
}
