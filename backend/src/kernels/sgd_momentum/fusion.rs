//! The step under Burn's fusing backend: one custom operation on the fusion stream taking every
//! parameter's tensors, which runs the inner backend's grouped launches on the resolved handles.

use std::marker::PhantomData;

use burn::tensor::TensorMetadata;
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{Fusion, FusionBackend, FusionRuntime, FusionTensor};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};

use super::{alike_and_float, MultiTensorSgdBackend, SgdMomentum, SgdStepped, SgdTensors};

#[derive(Debug)]
struct SgdStepOp<B> {
    desc: CustomOpIr,
    /// Which parameters have a velocity (their inputs are param, grad, velocity; the others'
    /// param, grad).
    has_velocity: Vec<bool>,
    hyper: SgdMomentum,
    backend: PhantomData<B>,
}

impl<B: FusionBackend + MultiTensorSgdBackend> Operation<B::FusionRuntime> for SgdStepOp<B> {
    fn execute(&self, handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>) {
        let mut inputs = self.desc.inputs.iter();
        let mut next = || handles.get_float_tensor::<B>(inputs.next().expect("an input per tensor"));
        let params: Vec<SgdTensors<B>> = self
            .has_velocity
            .iter()
            .map(|&v| SgdTensors { param: next(), grad: next(), velocity: v.then(&mut next) })
            .collect();
        let stepped = B::sgd_momentum_step(params, self.hyper);
        for ((value, velocity), out) in stepped.into_iter().zip(self.desc.outputs.chunks(2)) {
            handles.register_float_tensor::<B>(&out[0].id, value);
            handles.register_float_tensor::<B>(&out[1].id, velocity);
        }
    }
}

impl<B: FusionBackend + MultiTensorSgdBackend> MultiTensorSgdBackend for Fusion<B> {
    fn sgd_takes(params: &[SgdTensors<Self>]) -> bool {
        alike_and_float(params)
    }

    fn sgd_momentum_step(params: Vec<SgdTensors<Self>>, hyper: SgdMomentum) -> Vec<SgdStepped<Self>> {
        let Some(first) = params.first() else { return Vec::new() };
        let client = first.param.client.clone();
        let has_velocity: Vec<bool> = params.iter().map(|t| t.velocity.is_some()).collect();
        let inputs: Vec<FusionTensor<B::FusionRuntime>> = params
            .iter()
            .flat_map(|t| [Some(t.param.clone()), Some(t.grad.clone()), t.velocity.clone()])
            .flatten()
            .collect();
        let streams = OperationStreams::with_inputs(&inputs);
        let outputs: Vec<TensorIr> = params
            .iter()
            .flat_map(|t| {
                let out = || TensorIr::uninit(client.create_empty_handle(), t.param.shape(), t.param.dtype());
                [out(), out()]
            })
            .collect();
        let inputs: Vec<TensorIr> = inputs.into_iter().map(|t| t.into_ir()).collect();
        let desc = CustomOpIr::new("sgd_momentum_step", &inputs, &outputs);
        let op = SgdStepOp::<B> { desc: desc.clone(), has_velocity, hyper, backend: PhantomData };
        let mut out = client.register(streams, OperationIr::Custom(desc), op).into_iter();
        (0..params.len()).map(|_| (out.next().expect("a value"), out.next().expect("a velocity"))).collect()
    }
}
