//! Transactions of `Hybrid<B>`: Burn's default (read each tensor in turn, gathered whole).

use burn::tensor::backend::Backend;
use burn::tensor::ops::TransactionOps;

use crate::backend::Hybrid;

impl<B: Backend> TransactionOps<Self> for Hybrid<B> {}
