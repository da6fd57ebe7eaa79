//! Transactions of `Hybrid<B>`: every tensor read is gathered whole, then the inner backend's
//! own transaction reads them together (CubeCL reads them in one batch; Burn's default read
//! them one by one).

use std::future::Future;

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::{TransactionOps, TransactionPrimitive, TransactionPrimitiveData};

use crate::backend::Hybrid;
use crate::ops::dispatch::whole;

impl<B: Backend> TransactionOps<Self> for Hybrid<B> {
    fn tr_execute(
        transaction: TransactionPrimitive<Self>,
    ) -> impl Future<Output = Result<TransactionPrimitiveData, ExecutionError>> + Send {
        assert!(
            transaction.read_qfloats.is_empty(),
            "quantization is not supported on Hybrid (owt-hybrid): keep quantized tensors on the inner backend"
        );
        let mut inner = TransactionPrimitive::<B>::default();
        inner.read_floats = transaction.read_floats.into_iter().map(whole).collect();
        inner.read_ints = transaction.read_ints.into_iter().map(whole).collect();
        inner.read_bools = transaction.read_bools.into_iter().map(whole).collect();
        B::tr_execute(inner)
    }
}
