//! Transactions of `Meta`: Burn's default (each tensor read in turn; reads give zeros).

use burn::tensor::ops::TransactionOps;

use crate::backend::Meta;

impl TransactionOps<Self> for Meta {}
