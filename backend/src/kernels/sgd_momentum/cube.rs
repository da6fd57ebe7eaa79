//! The kernel on CubeCL's runtimes: one launch per group of parameters, one unit per element of
//! the group's largest, each unit stepping its element of every parameter in the group. Each
//! tensor is read and written through its own strides (a gradient may be a transposed view,
//! CUDA's rows are pitched), so nothing is copied first. Groups are as large as the device's
//! bindings allow (five tensors a parameter).

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;
use burn_cubecl::cubecl::{calculate_cube_count_elemwise, CubeDim};
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::{alike_and_float, launch_groups, MultiTensorSgdBackend, SgdMomentum, SgdStepped, SgdTensors};

/// The offset of element `pos` (in row-major order of `shape`) in a tensor of `strides`.
#[cube]
fn offset_of<F: Float>(pos: usize, shape: &Tensor<F>, strides: &Tensor<F>) -> usize {
    let rank = shape.rank();
    let mut rem = pos;
    let mut offset = 0usize;
    for k in 0..rank {
        let d = rank - 1 - k;
        offset += (rem % shape.shape(d)) * strides.stride(d);
        rem /= shape.shape(d);
    }
    offset
}

#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn sgd_momentum_kernel<F: Float>(
    params: &Sequence<Tensor<F>>,
    grads: &Sequence<Tensor<F>>,
    velocities: &Sequence<Tensor<F>>,
    new_params: &mut Sequence<Tensor<F>>,
    new_velocities: &mut Sequence<Tensor<F>>,
    lr: InputScalar,
    momentum: InputScalar,
    decay: InputScalar,
    #[comptime] has_velocity: bool,
    #[comptime] has_decay: bool,
    #[define(F)] _dtype: StorageType,
) {
    #[unroll]
    for i in 0..params.len() {
        let p = params.index(i);
        let g = grads.index(i);
        let out_p = new_params.index_mut(i);
        let out_v = new_velocities.index_mut(i);
        let mut numel = 1usize;
        for d in 0..out_p.rank() {
            numel *= out_p.shape(d);
        }
        if ABSOLUTE_POS < numel {
            let pos = ABSOLUTE_POS;
            let value = p[offset_of::<F>(pos, out_p, p)];
            let mut grad = g[offset_of::<F>(pos, out_p, g)];
            if comptime!(has_decay) {
                grad = value * decay.get::<F>() + grad;
            }
            let mut velocity = grad;
            if comptime!(has_velocity) {
                let v = velocities.index(i);
                velocity = grad + v[offset_of::<F>(pos, out_p, v)] * momentum.get::<F>();
            }
            out_v[offset_of::<F>(pos, out_p, out_v)] = velocity;
            out_p[offset_of::<F>(pos, out_p, out_p)] = value - velocity * lr.get::<F>();
        }
    }
}

/// Bindings besides the tensors (the kernel's metadata and scalars), kept free.
const OTHER_BINDINGS: usize = 2;

impl<R, F, I, BT> MultiTensorSgdBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn sgd_takes(params: &[SgdTensors<Self>]) -> bool {
        alike_and_float(params)
    }

    fn sgd_momentum_step(params: Vec<SgdTensors<Self>>, hyper: SgdMomentum) -> Vec<SgdStepped<Self>> {
        let Some(first) = params.first() else { return Vec::new() };
        // A launch binds every buffer on the first parameter's device: one from another
        // device would be read as whatever that device's memory holds there.
        let device = &first.param.device;
        let elsewhere = params
            .iter()
            .flat_map(|t| [Some(&t.param), Some(&t.grad), t.velocity.as_ref()].into_iter().flatten())
            .find(|x| x.device != *device);
        if let Some(x) = elsewhere {
            panic!(
                "sgd_momentum_step: every parameter, gradient and velocity must be on the parameters' device {device:?}, but one is on another device {:?}",
                x.device
            );
        }
        let client = first.param.client.clone();
        let bindings = client.properties().hardware.max_bindings as usize;
        let groups = launch_groups(&params, bindings.saturating_sub(OTHER_BINDINGS) / 5);
        let mut stepped: Vec<Option<SgdStepped<Self>>> = (0..params.len()).map(|_| None).collect();
        for group in groups {
            let pick = |f: &dyn Fn(&SgdTensors<Self>) -> Option<CubeTensor<R>>| {
                group.iter().filter_map(|&i| f(&params[i])).collect()
            };
            let outputs = launch(
                pick(&|t| Some(t.param.clone())),
                pick(&|t| Some(t.grad.clone())),
                pick(&|t| t.velocity.clone()),
                hyper,
            );
            for (&i, out) in group.iter().zip(outputs) {
                stepped[i] = Some(out);
            }
        }
        stepped.into_iter().map(|s| s.expect("every parameter is in a group")).collect()
    }
}

/// One launch over parameters `params` with their `grads` and `velocities` (one each, or none
/// on a first step).
fn launch<R: CubeRuntime>(
    params: Vec<CubeTensor<R>>,
    grads: Vec<CubeTensor<R>>,
    velocities: Vec<CubeTensor<R>>,
    hyper: SgdMomentum,
) -> Vec<(CubeTensor<R>, CubeTensor<R>)> {
    let first = &params[0];
    let (client, device, dtype) = (first.client.clone(), first.device.clone(), first.dtype);
    let empty = |t: &CubeTensor<R>| empty_device_dtype(client.clone(), device.clone(), t.meta.shape().clone(), dtype);
    let outputs: Vec<(CubeTensor<R>, CubeTensor<R>)> = params.iter().map(|p| (empty(p), empty(p))).collect();
    let units = params.iter().map(|p| p.meta.num_elements()).max().unwrap_or(0);
    if units == 0 {
        return outputs;
    }
    let has_velocity = !velocities.is_empty();
    let sequence = |tensors: Vec<CubeTensor<R>>| {
        let mut seq = SequenceArg::new();
        for t in tensors {
            seq.push(t.into_tensor_arg());
        }
        seq
    };
    let new_params = sequence(outputs.iter().map(|(p, _)| p.clone()).collect());
    let new_velocities = sequence(outputs.iter().map(|(_, v)| v.clone()).collect());
    let cube_dim = CubeDim::new(&client, units);
    let cube_count = calculate_cube_count_elemwise(&client, units, cube_dim);
    sgd_momentum_kernel::launch(
        &client,
        cube_count,
        cube_dim,
        sequence(params),
        sequence(grads),
        sequence(velocities),
        new_params,
        new_velocities,
        InputScalar::new(hyper.lr, dtype),
        InputScalar::new(hyper.momentum, dtype),
        InputScalar::new(hyper.weight_decay.unwrap_or(0.0), dtype),
        has_velocity,
        hyper.weight_decay.is_some(),
        dtype.into(),
    );
    outputs
}
