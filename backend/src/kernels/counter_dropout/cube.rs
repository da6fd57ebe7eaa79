//! The kernel on CubeCL's runtimes (wgpu, CUDA): one unit per element, reading and writing
//! through the tensors' strides (CUDA's pitched rows, a transposed view), so nothing is made
//! contiguous first.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;
use burn_cubecl::cubecl::{calculate_cube_count_elemwise, CubeDim};
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::{CounterDropoutBackend, CounterMask};

#[cube]
fn lowbias32(x: u32) -> u32 {
    let x = x ^ (x >> 16u32);
    let x = x * 0x7feb_352du32;
    let x = x ^ (x >> 15u32);
    let x = x * 0x846c_a68bu32;
    x ^ (x >> 16u32)
}

#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn counter_dropout_kernel<F: Float>(
    input: &Tensor<F>,
    output: &mut Tensor<F>,
    word0: u32,
    word1: u32,
    first_row: u32,
    first_col: u32,
    keep_below: u32,
    scale: InputScalar,
    #[define(F)] _dtype: StorageType,
) {
    let cols = output.shape(1);
    if ABSOLUTE_POS >= output.shape(0) * cols {
        terminate!();
    }
    let row = ABSOLUTE_POS / cols;
    let col = ABSOLUTE_POS % cols;
    let h = lowbias32(
        lowbias32(lowbias32((u32::cast_from(row) + first_row) ^ word0) ^ (u32::cast_from(col) + first_col)) ^ word1,
    );
    let x = input[row * input.stride(0) + col * input.stride(1)];
    output[row * output.stride(0) + col * output.stride(1)] =
        select((h >> 8u32) < keep_below, x * scale.get::<F>(), F::new(0.0));
}

impl<R, F, I, BT> CounterDropoutBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn counter_dropout_takes(x: &CubeTensor<R>) -> bool {
        super::is_2d_float(x)
    }

    fn counter_dropout(x: CubeTensor<R>, mask: CounterMask) -> CubeTensor<R> {
        let output = empty_device_dtype(x.client.clone(), x.device.clone(), x.meta.shape().clone(), x.dtype);
        let units = output.meta.num_elements();
        if units == 0 {
            return output;
        }
        let cube_dim = CubeDim::new(&x.client, units);
        let cube_count = calculate_cube_count_elemwise(&x.client, units, cube_dim);
        let dtype = x.dtype;
        counter_dropout_kernel::launch(
            &output.client,
            cube_count,
            cube_dim,
            x.into_tensor_arg(),
            output.clone().into_tensor_arg(),
            mask.words[0],
            mask.words[1],
            mask.first_row,
            mask.first_col,
            mask.keep_below,
            InputScalar::new(mask.scale, dtype),
            dtype.into(),
        );
        output
    }
}
