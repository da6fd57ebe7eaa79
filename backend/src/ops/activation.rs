//! Activation ops of `Hybrid<B>`: Burn's default compositions, which run through the
//! elementwise placement rules (so any placement works without communication).

use burn::tensor::backend::Backend;
use burn::tensor::ops::ActivationOps;

use crate::backend::Hybrid;

impl<B: Backend> ActivationOps<Self> for Hybrid<B> {}
