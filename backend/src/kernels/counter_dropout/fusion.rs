//! The kernel under Burn's fusing backend: one custom operation on the fusion stream (what
//! burn-vision does for its own kernels), which ends the fused block before it and runs the
//! inner backend's kernel on the resolved handle.

use std::marker::PhantomData;

use burn::tensor::TensorMetadata;
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime, FusionTensor};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, OperationOutput, TensorIr};

use super::{CounterDropoutBackend, CounterMask};

#[derive(Debug)]
struct CounterDropoutOp<B> {
    desc: CustomOpIr,
    mask: CounterMask,
    backend: PhantomData<B>,
}

impl<B: FusionBackend + CounterDropoutBackend> Operation<B::FusionRuntime> for CounterDropoutOp<B> {
    fn execute(&self, handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>) {
        let ([x], [out]) = self.desc.as_fixed();
        let input = handles.get_float_tensor::<B>(x);
        handles.register_float_tensor::<B>(&out.id, B::counter_dropout(input, self.mask));
    }
}

impl<B: FusionBackend + CounterDropoutBackend> CounterDropoutBackend for Fusion<B> {
    fn counter_dropout_takes(x: &FusionTensor<B::FusionRuntime>) -> bool {
        super::is_2d_float(x)
    }

    fn counter_dropout(x: FusionTensor<B::FusionRuntime>, mask: CounterMask) -> FusionTensor<B::FusionRuntime> {
        let client = x.client.clone();
        let streams = OperationStreams::with_inputs([&x]);
        let out = TensorIr::uninit(client.create_empty_handle(), x.shape(), x.dtype());
        let desc = CustomOpIr::new("counter_dropout", &[x.into_ir()], &[out]);
        client
            .register(
                streams,
                OperationIr::Custom(desc.clone()),
                CounterDropoutOp::<B> { desc, mask, backend: PhantomData },
            )
            .output()
    }
}
