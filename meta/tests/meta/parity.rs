//! Shape and dtype parity with Burn's Flex backend: the same ops, through `burn::Tensor`, on
//! Flex (real data) and on Meta (shapes only) must give equal shapes and dtypes, op by op.

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::tensor::backend::Backend;
use burn::tensor::module::{
    adaptive_avg_pool1d, adaptive_avg_pool2d, attention, avg_pool1d, avg_pool2d, conv1d, conv2d, conv3d,
    conv_transpose1d, conv_transpose2d, conv_transpose3d, deform_conv2d, embedding, interpolate, max_pool1d,
    max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices, unfold4d,
};
use burn::tensor::ops::{
    AttentionModuleOptions, ConvOptions, ConvTransposeOptions, DeformConvOptions, GridSampleOptions, InterpolateMode,
    InterpolateOptions, UnfoldOptions,
};
use burn::tensor::signal::{irfft, rfft};
use burn::tensor::{
    BasicOps, Bool, BoolStore, DType, FloatDType, IndexingUpdateOp, Int, IntDType, Slice, Tensor, TensorData,
};
use owt_meta::{Meta, MetaDevice};

/// One op's result: its name, shape and dtype.
type Entry = (&'static str, Vec<usize>, DType);

/// Collects the shape and dtype of each op's result.
struct Rec(Vec<Entry>);

impl Rec {
    fn add<B: Backend, const D: usize, K: BasicOps<B>>(&mut self, name: &'static str, t: Tensor<B, D, K>) {
        self.0.push((name, t.shape().to_vec(), t.dtype()));
    }
}

/// Deterministic float data of `shape` (values in [-1, 1)).
fn floats<B: Backend, const D: usize>(shape: [usize; D], device: &B::Device) -> Tensor<B, D> {
    let n: usize = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|i| ((i * 7919) % 200) as f32 / 100.0 - 1.0).collect();
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// Int data of `shape` with values in `0..bound`.
fn ints<B: Backend, const D: usize>(shape: [usize; D], bound: usize, device: &B::Device) -> Tensor<B, D, Int> {
    let n: usize = shape.iter().product();
    let values: Vec<i32> = (0..n).map(|i| ((i * 31) % bound) as i32).collect();
    Tensor::from_data(TensorData::new(values, shape), device)
}

fn elementwise<B: Backend>(r: &mut Rec, d: &B::Device) {
    let a = floats::<B, 3>([2, 3, 4], d);
    let b = floats::<B, 3>([2, 3, 4], d);
    let row = floats::<B, 3>([1, 3, 1], d);
    r.add("add", a.clone() + b.clone());
    r.add("add_broadcast", a.clone() + row.clone());
    r.add("sub", a.clone() - row.clone());
    r.add("mul", a.clone() * b.clone());
    r.add("div", a.clone() / b.clone().abs().add_scalar(1.0));
    r.add("remainder", a.clone().remainder(b.clone().abs().add_scalar(1.0)));
    r.add("powf", a.clone().abs().powf(b.clone()));
    r.add("atan2", a.clone().atan2(b.clone()));
    for (name, t) in [
        ("exp", a.clone().exp()),
        ("log", a.clone().abs().add_scalar(1.0).log()),
        ("log1p", a.clone().abs().log1p()),
        ("sqrt", a.clone().abs().sqrt()),
        ("cos", a.clone().cos()),
        ("tanh", a.clone().tanh()),
        ("erf", a.clone().erf()),
        ("recip", a.clone().add_scalar(3.0).recip()),
        ("round", a.clone().round()),
        ("floor", a.clone().floor()),
        ("neg", -a.clone()),
        ("sign", a.clone().sign()),
        ("clamp", a.clone().clamp(-0.5, 0.5)),
        ("mul_scalar", a.clone() * 2.0),
        ("powf_scalar", a.clone().abs().powf_scalar(1.5)),
        ("powi_scalar", a.clone().powi_scalar(3)),
        ("relu", burn::tensor::activation::relu(a.clone())),
        ("gelu", burn::tensor::activation::gelu(a.clone())),
        ("sigmoid", burn::tensor::activation::sigmoid(a.clone())),
        ("softmax", burn::tensor::activation::softmax(a.clone(), 2)),
        ("log_softmax", burn::tensor::activation::log_softmax(a.clone(), 1)),
        ("cross", floats::<B, 3>([2, 3, 4], d).cross(b.clone(), 1)),
    ] {
        r.add(name, t);
    }
}

fn comparisons_and_masks<B: Backend>(r: &mut Rec, d: &B::Device) {
    let a = floats::<B, 3>([2, 3, 4], d);
    let b = floats::<B, 3>([1, 3, 4], d);
    let mask = a.clone().greater_elem(0.0);
    r.add("greater", a.clone().greater(b.clone()));
    r.add("lower_equal", a.clone().lower_equal(b.clone()));
    r.add("equal_elem", a.clone().equal_elem(0.5));
    r.add("not_equal", a.clone().not_equal(b.clone()));
    r.add("is_nan", a.clone().is_nan());
    r.add("mask_where", a.clone().mask_where(mask.clone(), b.clone().expand([2, 3, 4])));
    r.add("mask_fill", a.clone().mask_fill(mask.clone(), 1.0));
    r.add("bool_not", mask.clone().bool_not());
    r.add("bool_and", mask.clone().bool_and(a.clone().lower_elem(0.5)));
    r.add("bool_or", mask.clone().bool_or(a.clone().lower_elem(0.5)));
    r.add("bool_xor", mask.clone().bool_xor(a.clone().lower_elem(0.5)));
    r.add("bool_equal", mask.clone().equal(a.clone().lower_elem(0.5)));
    r.add("bool_into_int", mask.clone().int());
    r.add("bool_into_float", mask.clone().float());
    r.add("bool_any", mask.clone().any());
    r.add("bool_all_dim", mask.clone().all_dim(1));
    r.add("float_any_dim", a.clone().any_dim(2));
    r.add("bool_cat", Tensor::cat(vec![mask.clone(), mask.clone()], 1));
    r.add("bool_reshape", mask.clone().reshape([6, 4]));
    r.add("bool_permute", mask.clone().permute([2, 0, 1]));
    r.add("bool_flip", mask.clone().flip([1]));
    r.add("bool_slice", mask.clone().slice([0..1, 1..3]));
    r.add("bool_repeat", mask.clone().repeat_dim(0, 3));
    r.add("bool_select", mask.clone().select(1, ints::<B, 1>([5], 3, d)));
    r.add("bool_gather", mask.clone().gather(2, ints::<B, 3>([2, 3, 2], 4, d)));
    let other = a.clone().lower_elem(0.0);
    r.add(
        "bool_scatter_or",
        mask.clone().scatter(
            2,
            ints::<B, 3>([2, 3, 2], 4, d),
            other.clone().slice([0..2, 0..3, 0..2]),
            IndexingUpdateOp::Add,
        ),
    );
    r.add(
        "bool_select_or",
        mask.clone().select_assign(
            1,
            ints::<B, 1>([2], 3, d),
            other.clone().slice([0..2, 0..2]),
            IndexingUpdateOp::Add,
        ),
    );
    r.add("bool_mask_where", mask.clone().mask_where(other.clone(), mask.clone()));
    r.add("bool_mask_fill", mask.clone().mask_fill(other.clone(), true));
    r.add("bool_slice_assign", mask.clone().slice_assign([0..1], other.clone().slice([0..1])));
    r.add("bool_expand", other.clone().slice([0..1]).expand([3, 3, 4]));
    r.add("bool_unfold", mask.clone().unfold::<4, _>(2, 2, 2));
    let u8_bool = (d, DType::Bool(BoolStore::U8));
    let m8 = Tensor::<B, 3, Bool>::empty([2, 3, 4], u8_bool);
    r.add("bool_u8_empty", m8.clone());
    r.add("bool_u8_not", m8.clone().bool_not());
    r.add("bool_u8_and", m8.clone().bool_and(Tensor::<B, 3, Bool>::empty([2, 3, 4], u8_bool)));
    r.add("bool_u8_into_int", m8.clone().int());
    r.add("bool_u8_any_dim", m8.clone().any_dim(0));
}

fn reductions<B: Backend>(r: &mut Rec, d: &B::Device) {
    let a = floats::<B, 3>([2, 3, 5], d);
    r.add("sum", a.clone().sum());
    r.add("mean", a.clone().mean());
    r.add("max", a.clone().max());
    r.add("prod", a.clone().prod());
    r.add("sum_dim", a.clone().sum_dim(1));
    r.add("mean_dim", a.clone().mean_dim(2));
    r.add("max_dim", a.clone().max_dim(0));
    r.add("min_dim", a.clone().min_dim(2));
    r.add("prod_dim", a.clone().prod_dim(1));
    r.add("argmax", a.clone().argmax(2));
    r.add("argmin", a.clone().argmin(0));
    let (v, i) = a.clone().max_dim_with_indices(1);
    r.add("max_dim_with_indices.values", v);
    r.add("max_dim_with_indices.indices", i);
    r.add("cumsum", a.clone().cumsum(2));
    r.add("cumprod", a.clone().cumprod(1));
    r.add("cummax", a.clone().cummax(0));
    r.add("sort", a.clone().sort(2));
    r.add("argsort", a.clone().argsort(1));
    let (v, i) = a.clone().sort_with_indices(2);
    r.add("sort_with_indices.values", v);
    r.add("sort_with_indices.indices", i);
    r.add("topk", a.clone().topk(2, 2));
}

fn int_ops<B: Backend>(r: &mut Rec, d: &B::Device) {
    let i = ints::<B, 3>([2, 3, 4], 7, d);
    let j = ints::<B, 3>([2, 1, 4], 5, d).add_scalar(1);
    r.add("int_add", i.clone() + j.clone());
    r.add("int_mul", i.clone() * j.clone());
    r.add("int_div", i.clone() / j.clone());
    r.add("int_remainder", i.clone().remainder(j.clone()));
    r.add("int_add_scalar", i.clone().add_scalar(3));
    r.add("int_neg", -i.clone());
    r.add("int_abs", i.clone().abs());
    r.add("int_clamp", i.clone().clamp(1, 4));
    r.add("int_greater", i.clone().greater(j.clone()));
    r.add("int_equal_elem", i.clone().equal_elem(2));
    r.add("int_sum", i.clone().sum());
    r.add("int_sum_dim", i.clone().sum_dim(2));
    r.add("int_mean_dim", i.clone().mean_dim(1));
    r.add("int_max_dim", i.clone().max_dim(1));
    r.add("int_prod", i.clone().prod());
    r.add("int_argmax", i.clone().argmax(2));
    r.add("int_argmin", i.clone().argmin(1));
    let (v, idx) = i.clone().max_dim_with_indices(2);
    r.add("int_max_dim_with_indices.values", v);
    r.add("int_max_dim_with_indices.indices", idx);
    r.add("int_cumsum", i.clone().cumsum(1));
    r.add("int_sort", i.clone().sort(2));
    r.add("int_argsort", i.clone().argsort(2));
    r.add("int_into_float", i.clone().float());
    r.add("int_cast_i64", i.clone().cast(IntDType::I64));
    r.add("int_cast_u8", i.clone().cast(IntDType::U8));
    r.add("int_cast_f64", i.clone().cast(FloatDType::F64));
    r.add("int_bitwise_and", i.clone().bitwise_and(j.clone()));
    r.add("int_bitwise_not", i.clone().bitwise_not());
    r.add("int_matmul", ints::<B, 2>([3, 4], 3, d).matmul(ints::<B, 2>([4, 2], 3, d)));
    r.add("int_cat", Tensor::cat(vec![i.clone(), i.clone()], 2));
    r.add("int_reshape", i.clone().reshape([4, 6]));
    r.add("int_swap_dims", i.clone().swap_dims(0, 2));
    r.add("int_flip", i.clone().flip([0, 2]));
    r.add("int_expand", ints::<B, 2>([3, 1], 3, d).expand([2, 3, 4]));
    r.add("int_unfold", i.clone().unfold::<4, _>(2, 2, 1));
    r.add("int_gather", i.clone().gather(1, ints::<B, 3>([2, 2, 4], 3, d)));
    r.add("int_select", i.clone().select(2, ints::<B, 1>([6], 4, d)));
    r.add("int_mask_fill", i.clone().mask_fill(i.clone().greater_elem(3), 0));
    r.add("int_arange", Tensor::<B, 1, Int>::arange(3..17, d));
    r.add("int_arange_step", Tensor::<B, 1, Int>::arange_step(3..17, 4, d));
    r.add("int_zeros", Tensor::<B, 2, Int>::zeros([3, 5], d));
    r.add("int_ones_i64", Tensor::<B, 2, Int>::ones([3, 5], (d, DType::I64)));
    r.add("int_full", Tensor::<B, 2, Int>::full([2, 2], 4, d));
    r.add("int_repeat", i.clone().repeat_dim(1, 2));
    r.add("int_powi", i.clone().powi(j.clone()));
    r.add("int_sign", i.clone().sign());
    r.add("int_shift_left", i.clone().bitwise_left_shift(j.clone()));
    r.add("int_shift_right", i.clone().bitwise_right_shift(j.clone()));
    r.add("int_mask_where", i.clone().mask_where(i.clone().lower_elem(2), j.clone().expand([2, 3, 4])));
    r.add(
        "int_scatter_add",
        i.clone().scatter(1, ints::<B, 3>([2, 2, 4], 3, d), ints::<B, 3>([2, 2, 4], 5, d), IndexingUpdateOp::Add),
    );
    r.add(
        "int_select_add",
        i.clone().select_assign(0, ints::<B, 1>([3], 2, d), ints::<B, 3>([3, 3, 4], 5, d), IndexingUpdateOp::Add),
    );
    r.add("int_slice_assign", i.clone().slice_assign([0..1, 0..2], ints::<B, 3>([1, 2, 4], 5, d)));
    r.add("int_random", Tensor::<B, 2, Int>::random([4, 3], burn::tensor::Distribution::Uniform(0.0, 9.0), d));
    r.add("int_topk", i.clone().topk(2, 2));
    r.add("int_cummax", i.clone().cummax(2));
    r.add("int_any_dim", i.clone().any_dim(1));
    r.add("int_all", i.clone().all());
    r.add("int_max_abs", i.clone().max_abs());
    r.add("int_i64_sum", i.clone().cast(IntDType::I64).sum_dim(0));
    r.add("int_u8_add", i.clone().cast(IntDType::U8) + j.clone().cast(IntDType::U8));
    r.add("int_gather_nd", i.clone().gather_nd::<2, 2>(ints::<B, 2>([5, 2], 2, d)));
    r.add(
        "float_scatter_nd",
        floats::<B, 3>([2, 3, 4], d).scatter_nd::<2, 2>(
            ints::<B, 2>([5, 2], 2, d),
            floats::<B, 2>([5, 4], d),
            IndexingUpdateOp::Add,
        ),
    );
    r.add("float_max_abs_dim", floats::<B, 3>([2, 3, 4], d).max_abs_dim(1));
    r.add("float_all_dim", floats::<B, 3>([2, 3, 4], d).all_dim(0));
    r.add("float_is_inf", floats::<B, 3>([2, 3, 4], d).is_inf());
    r.add("float_into_int", floats::<B, 2>([2, 3], d).int());
    r.add("float_cast_i64", floats::<B, 2>([2, 3], d).cast(IntDType::I64));
    r.add("float_cast_f64", floats::<B, 2>([2, 3], d).cast(FloatDType::F64));
    r.add("float_cast_f16", floats::<B, 2>([2, 3], d).cast(FloatDType::F16));
    r.add("f64_exp", floats::<B, 2>([2, 3], d).cast(FloatDType::F64).exp());
    r.add("f64_sum", floats::<B, 2>([2, 3], d).cast(FloatDType::F64).sum_dim(1));
    r.add("f64_argmax", floats::<B, 2>([2, 3], d).cast(FloatDType::F64).argmax(1));
    r.add(
        "f64_matmul",
        floats::<B, 2>([2, 3], d).cast(FloatDType::F64).matmul(floats::<B, 2>([3, 2], d).cast(FloatDType::F64)),
    );
}

fn shape_ops<B: Backend>(r: &mut Rec, d: &B::Device) {
    let a = floats::<B, 3>([2, 3, 4], d);
    r.add("matmul", floats::<B, 3>([2, 4, 5], d).matmul(floats::<B, 3>([2, 5, 3], d)));
    r.add("matmul_broadcast", floats::<B, 4>([2, 1, 3, 4], d).matmul(floats::<B, 4>([1, 5, 4, 6], d)));
    r.add("matmul_2d", floats::<B, 2>([7, 4], d).matmul(floats::<B, 2>([4, 1], d)));
    r.add("cat", Tensor::cat(vec![a.clone(), floats::<B, 3>([2, 5, 4], d)], 1));
    r.add("stack", Tensor::stack::<4>(vec![a.clone(), a.clone()], 1));
    r.add("slice", a.clone().slice([0..1, 1..3, 0..4]));
    r.add("slice_step", a.clone().slice([Slice::full(), Slice::full(), Slice::new(0, None, 3)]));
    r.add("slice_neg", a.clone().slice([Slice::new(-1, None, 1), Slice::new(0, Some(-1), 1)]));
    r.add("narrow", a.clone().narrow(2, 1, 2));
    r.add("slice_assign", a.clone().slice_assign([0..2, 1..2, 0..4], floats::<B, 3>([2, 1, 4], d)));
    r.add("slice_fill", a.clone().slice_fill([0..1, 0..3, 2..4], 3.0));
    r.add("gather", a.clone().gather(2, ints::<B, 3>([2, 3, 7], 4, d)));
    r.add(
        "scatter_add",
        a.clone().scatter(2, ints::<B, 3>([2, 3, 2], 4, d), floats::<B, 3>([2, 3, 2], d), IndexingUpdateOp::Add),
    );
    r.add("select", a.clone().select(1, ints::<B, 1>([5], 3, d)));
    r.add(
        "select_add",
        a.clone().select_assign(1, ints::<B, 1>([2], 3, d), floats::<B, 3>([2, 2, 4], d), IndexingUpdateOp::Add),
    );
    r.add("gather_nd", a.clone().gather_nd::<2, 2>(ints::<B, 2>([5, 2], 2, d)));
    r.add("reshape", a.clone().reshape([4, 6]));
    r.add("reshape_infer", a.clone().reshape([-1, 2]));
    r.add("permute", a.clone().permute([2, 0, 1]));
    r.add("swap_dims", a.clone().swap_dims(0, 2));
    r.add("transpose", a.clone().transpose());
    r.add("flip", a.clone().flip([0, 2]));
    r.add("expand", floats::<B, 2>([3, 1], d).expand([5, 3, 4]));
    r.add("unfold", a.clone().unfold::<4, _>(2, 3, 1));
    r.add("unfold_step", floats::<B, 2>([3, 10], d).unfold::<3, _>(1, 3, 4));
    r.add("repeat_dim", a.clone().repeat_dim(2, 3));
    r.add("repeat", a.clone().repeat(&[2, 1, 3]));
    r.add("zeros_f64", Tensor::<B, 2>::zeros([3, 2], (d, DType::F64)));
    r.add("ones", Tensor::<B, 2>::ones([3, 2], d));
    r.add("full", Tensor::<B, 2>::full([3, 2], 7.0, d));
    r.add("random", Tensor::<B, 3>::random([2, 5, 1], burn::tensor::Distribution::Default, d));
    r.add("bool_zeros", Tensor::<B, 2, Bool>::empty([2, 2], d));
    r.add("squeeze", floats::<B, 3>([2, 1, 3], d).squeeze_dim::<2>(1));
    r.add("unsqueeze", a.clone().unsqueeze_dim::<4>(1));
    r.add("flatten", a.clone().flatten::<2>(1, 2));
}

fn conv_pool<B: Backend>(r: &mut Rec, d: &B::Device) {
    let x = floats::<B, 4>([2, 4, 11, 9], d);
    let w = floats::<B, 4>([6, 2, 3, 2], d);
    let bias = Some(floats::<B, 1>([6], d));
    r.add("conv2d", conv2d(x.clone(), w.clone(), bias.clone(), ConvOptions::new([2, 1], [1, 0], [1, 2], 2)));
    r.add(
        "conv2d_plain",
        conv2d(x.clone(), floats::<B, 4>([3, 4, 5, 5], d), None, ConvOptions::new([1, 1], [2, 2], [1, 1], 1)),
    );
    let wt = floats::<B, 4>([4, 3, 3, 2], d);
    r.add(
        "conv_transpose2d",
        conv_transpose2d(x.clone(), wt.clone(), None, ConvTransposeOptions::new([2, 3], [1, 0], [1, 2], [1, 2], 2)),
    );
    r.add(
        "conv1d",
        conv1d(floats::<B, 3>([2, 4, 17], d), floats::<B, 3>([8, 2, 3], d), None, ConvOptions::new([2], [1], [2], 2)),
    );
    r.add(
        "conv_transpose1d",
        conv_transpose1d(
            floats::<B, 3>([2, 4, 7], d),
            floats::<B, 3>([4, 3, 3], d),
            None,
            ConvTransposeOptions::new([2], [1], [1], [1], 1),
        ),
    );
    r.add(
        "conv3d",
        conv3d(
            floats::<B, 5>([1, 2, 5, 6, 7], d),
            floats::<B, 5>([3, 2, 2, 3, 2], d),
            None,
            ConvOptions::new([1, 2, 1], [0, 1, 1], [1, 1, 2], 1),
        ),
    );
    r.add("max_pool2d", max_pool2d(x.clone(), [3, 2], [2, 2], [1, 0], [1, 1], false));
    r.add("max_pool2d_ceil", max_pool2d(x.clone(), [3, 3], [2, 2], [0, 0], [1, 1], true));
    r.add("max_pool2d_dilated", max_pool2d(x.clone(), [2, 2], [1, 2], [1, 1], [2, 2], false));
    let (out, idx) = max_pool2d_with_indices(x.clone(), [3, 3], [2, 2], [1, 1], [1, 1], true);
    r.add("max_pool2d_with_indices.output", out);
    r.add("max_pool2d_with_indices.indices", idx);
    r.add("avg_pool2d", avg_pool2d(x.clone(), [3, 3], [2, 2], [1, 1], true, false));
    r.add("avg_pool2d_ceil", avg_pool2d(x.clone(), [2, 4], [3, 2], [0, 1], false, true));
    r.add("max_pool1d", max_pool1d(floats::<B, 3>([2, 3, 10], d), 3, 2, 1, 1, false));
    r.add("adaptive_avg_pool2d", adaptive_avg_pool2d(x.clone(), [3, 5]));
    r.add("interpolate_nearest", interpolate(x.clone(), [5, 17], InterpolateOptions::new(InterpolateMode::Nearest)));
    r.add("interpolate_bilinear", interpolate(x.clone(), [22, 4], InterpolateOptions::new(InterpolateMode::Bilinear)));
    r.add("interpolate_bicubic", interpolate(x.clone(), [6, 6], InterpolateOptions::new(InterpolateMode::Bicubic)));
    r.add("unfold4d", unfold4d(x.clone(), [3, 2], UnfoldOptions::new([2, 1], [1, 0], [1, 1])));
    r.add(
        "conv_transpose3d",
        conv_transpose3d(
            floats::<B, 5>([1, 2, 3, 4, 2], d),
            floats::<B, 5>([2, 3, 2, 2, 3], d),
            None,
            ConvTransposeOptions::new([2, 1, 2], [0, 1, 1], [1, 0, 1], [1, 2, 1], 1),
        ),
    );
    let offset = floats::<B, 4>([1, 2 * 2 * 9, 6, 6], d);
    let mask = Some(floats::<B, 4>([1, 2 * 9, 6, 6], d));
    r.add(
        "deform_conv2d",
        deform_conv2d(
            floats::<B, 4>([1, 4, 6, 6], d),
            offset,
            floats::<B, 4>([6, 2, 3, 3], d),
            mask,
            Some(floats::<B, 1>([6], d)),
            DeformConvOptions::new([1, 1], [1, 1], [1, 1], 2, 2),
        ),
    );
    r.add("avg_pool1d", avg_pool1d(floats::<B, 3>([2, 3, 11], d), 3, 2, 1, false, true));
    r.add("adaptive_avg_pool1d", adaptive_avg_pool1d(floats::<B, 3>([2, 3, 11], d), 4));
    let (out, idx) = max_pool1d_with_indices(floats::<B, 3>([2, 3, 11], d), 2, 3, 1, 1, true);
    r.add("max_pool1d_with_indices.output", out);
    r.add("max_pool1d_with_indices.indices", idx);
    r.add("grid_sample_2d", x.clone().grid_sample_2d(floats::<B, 4>([2, 5, 7, 2], d), GridSampleOptions::default()));
    let x16 = x.clone().cast(FloatDType::F16);
    r.add(
        "f16_conv2d",
        conv2d(x16.clone(), w.clone().cast(FloatDType::F16), None, ConvOptions::new([2, 1], [1, 0], [1, 2], 2)),
    );
    r.add("f16_max_pool2d", max_pool2d(x16.clone(), [3, 2], [2, 2], [1, 0], [1, 1], false));
    r.add("f16_mean_dim", x16.clone().mean_dim(3));
    r.add("f16_sum", x16.clone().sum());
    r.add("f64_avg_pool2d", avg_pool2d(x.clone().cast(FloatDType::F64), [3, 3], [2, 2], [1, 1], true, false));
    let table = floats::<B, 2>([10, 6], d);
    r.add("embedding", embedding(table, ints::<B, 2>([3, 4], 10, d)));
    r.add(
        "attention",
        attention(
            floats::<B, 4>([2, 3, 5, 4], d),
            floats::<B, 4>([2, 3, 7, 4], d),
            floats::<B, 4>([2, 3, 7, 6], d),
            None,
            None,
            AttentionModuleOptions::default(),
        ),
    );
    let (re, im) = rfft(floats::<B, 2>([3, 8], d), 1, None);
    r.add("rfft.re", re.clone());
    r.add("rfft.im", im.clone());
    r.add("irfft", irfft(re, im, 1, None));
    let (re, im) = rfft(floats::<B, 2>([3, 4], d), 0, Some(8));
    r.add("rfft_n.re", re);
    r.add("rfft_n.im", im);
}

/// Every family of ops on backend `B`.
fn all_ops<B: Backend>(device: &B::Device) -> Vec<Entry> {
    let mut r = Rec(Vec::new());
    elementwise::<B>(&mut r, device);
    comparisons_and_masks::<B>(&mut r, device);
    reductions::<B>(&mut r, device);
    int_ops::<B>(&mut r, device);
    shape_ops::<B>(&mut r, device);
    conv_pool::<B>(&mut r, device);
    r.0
}

#[test]
fn meta_matches_flex_shapes_and_dtypes_op_by_op() {
    let flex = all_ops::<Flex>(&FlexDevice);
    let meta = all_ops::<Meta>(&MetaDevice::new());
    assert_eq!(flex.len(), meta.len());
    let mismatches: Vec<String> = flex
        .iter()
        .zip(&meta)
        .filter(|(f, m)| f != m)
        .map(|(f, m)| format!("{}: flex {:?} {:?}, meta {:?} {:?}", f.0, f.1, f.2, m.1, m.2))
        .collect();
    assert!(mismatches.is_empty(), "{} of {} ops differ:\n{}", mismatches.len(), flex.len(), mismatches.join("\n"));
    println!("{} ops agree", flex.len());
}

/// Flex leaves `argtopk` unimplemented; Meta gives `k` along the dimension, in the requested
/// dtype for floats and Flex's index dtype (i64) for ints.
#[test]
fn argtopk_keeps_k_along_the_dimension() {
    let d = MetaDevice::new();
    let a = floats::<Meta, 3>([2, 3, 9], &d);
    let idx = a.argtopk(4, 2);
    assert_eq!(idx.shape().to_vec(), vec![2, 3, 4]);
    assert_eq!(idx.dtype(), DType::I32);
    let i = ints::<Meta, 2>([5, 6], 4, &d).argtopk(2, 0);
    assert_eq!((i.shape().to_vec(), i.dtype()), (vec![2, 6], DType::I64));
}

/// Value-dependent shapes: Meta's data reads are all zeros / false, so `argwhere` finds no
/// rows, and reading data gives zeros of the right shape and dtype.
#[test]
fn data_dependent_ops_see_zeros() {
    let d = MetaDevice::new();
    let mask = floats::<Meta, 3>([2, 3, 4], &d).greater_elem(0.0);
    let rows = mask.clone().argwhere();
    assert_eq!(rows.shape().to_vec(), vec![0, 3]);
    let data = mask.into_data();
    assert_eq!(data.dtype, DType::Bool(BoolStore::Native));
    assert_eq!(data.to_vec::<bool>().unwrap(), vec![false; 24]);
    let f = floats::<Meta, 2>([2, 3], &d).cast(FloatDType::F16).into_data();
    assert_eq!((f.shape.to_vec(), f.dtype), (vec![2, 3], DType::F16));
}
