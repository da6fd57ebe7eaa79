//! Float ops of `Hybrid<B>`: each picks a placement rule (see `backend/README.md`).

use burn::tensor::backend::{Backend, ExecutionError};
use burn::tensor::ops::FloatTensorOps;
use burn::tensor::{BoolDType, Distribution, FloatDType, IntDType, Scalar, Shape, Slice, TensorData, TensorMetadata};

use crate::backend::{Hybrid, HybridBool, HybridFloat, HybridInt};
use crate::collectives::{broadcast, redistribute};
use crate::dtensor::DTensor;
use crate::kind::{BoolKind, FloatKind, IntKind};
use crate::mesh::MeshDevice;
use crate::ops::macros::{along_dim_ops, binary_ops, cmp_elem_ops, cmp_ops, scalar_ops, unary_ops};
use crate::placement::Placement;
use crate::rules::{
    binary, fallback, gather_for, linear, per_rank, reduce_dim, resolve_partial, unary, Linearity, ShardedReduce,
};
use crate::shape_rules;

type F<B> = HybridFloat<B>;
type I<B> = HybridInt<B>;
type Bo<B> = HybridBool<B>;

/// A Replicate tensor made on every rank by `make(device)` (host data is uploaded to each
/// rank; nothing moves between ranks).
pub(crate) fn replicate_with<B: Backend, K: crate::kind::ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    mut make: impl FnMut(&B::Device) -> K::Prim,
) -> DTensor<B, K> {
    DTensor::replicated(mesh.clone(), |r| make(mesh.rank_device(r)))
}

/// Moves a tensor to another mesh (or returns it if it is on `device` already).
pub(crate) fn to_mesh<B: Backend, K: crate::kind::ShardKind<B>>(
    t: DTensor<B, K>,
    device: &MeshDevice<B::Device>,
) -> DTensor<B, K> {
    if &t.mesh == device {
        return t;
    }
    let whole = resolve_partial(redistribute(t, Placement::Replicate));
    let source = whole.shards[0].clone();
    // Between meshes: the host path works for any pair of devices.
    replicate_with::<B, K>(device, |d| K::to_device(source.clone(), d, crate::transport::Transport::HostStaged))
}

/// Reads a tensor back whole: Partial summed, shards gathered (counted), rank 0's copy read.
pub(crate) fn whole<B: Backend, K: crate::kind::ShardKind<B>>(t: DTensor<B, K>) -> K::Prim {
    let t = redistribute(t, Placement::Replicate);
    t.shards.into_iter().next().expect("a mesh has a rank")
}

/// `matmul` by placements. `lhs`: [.., m, k], `rhs`: [.., k, n].
fn matmul<B: Backend>(lhs: F<B>, rhs: F<B>) -> F<B> {
    use Placement::*;
    lhs.mesh.check_same(&rhs.mesh, "matmul");
    let n = lhs.shape.num_dims();
    let (row, inner) = (n - 2, n - 1);
    let (lhs, rhs, out) = match (lhs.placement, rhs.placement) {
        (Replicate, Replicate) => (lhs, rhs, Replicate),
        // Data parallel: batch or row shards against a whole weight.
        (Shard(d), Replicate) if d < inner => (lhs, rhs, Shard(d)),
        // Contraction dimension split on the left only: slice the right for free, summands out.
        (Shard(d), Replicate) if d == inner => {
            let rhs = crate::collectives::shard_locally(rhs, row);
            (lhs, rhs, Partial)
        }
        // Batched matmul with the same batch shards on both sides.
        (Shard(d), Shard(e)) if d == e && d < row => (lhs, rhs, Shard(d)),
        // Batched matmul, whole left against batch shards on the right: slice the left.
        (Replicate, Shard(d)) if d < row => (crate::collectives::shard_locally(lhs, d), rhs, Shard(d)),
        // Model parallel: whole input against column-split weight.
        (Replicate, Shard(d)) if d == n - 1 => (lhs, rhs, Shard(n - 1)),
        // Contraction dimension split on both sides: each rank holds a summand.
        (Shard(d), Shard(e)) if d == inner && e == row => (lhs, rhs, Partial),
        (Replicate, Shard(e)) if e == row => (crate::collectives::shard_locally(lhs, inner), rhs, Partial),
        // Activities exchanged by the mesh's scheme (b, c: in rounds), then model parallel.
        (Shard(d), Shard(e))
            if e == n - 1
                && (d == row || d == inner)
                && lhs.shape[d] > 0
                && lhs.mesh.exchange() != crate::scheme::Exchange::AllGather =>
        {
            return crate::exchange::exchange_matmul(lhs, rhs, d);
        }
        // Activities exchanged (scheme a) or columns gathered, then model parallel.
        (Shard(d), Shard(e)) if e == n - 1 => (crate::collectives::all_gather(lhs, d), rhs, Shard(n - 1)),
        // Linear in each argument.
        (Partial, Replicate) | (Replicate, Partial) => (lhs, rhs, Partial),
        _ => {
            let (lhs, rhs) = (gather_for("matmul", lhs), gather_for("matmul", rhs));
            (resolve_partial(lhs), resolve_partial(rhs), Replicate)
        }
    };
    let mesh = lhs.mesh.clone();
    let shards = lhs.shards.into_iter().zip(rhs.shards).map(|(a, b)| B::float_matmul(a, b)).collect();
    crate::rules::assemble(mesh, out, shards)
}

/// `gather` along the sharded dimension (picking each image's class logit out of
/// column-split logits): every rank picks the indices that fall in its slice and contributes
/// zeros elsewhere, so the result is a `Partial` sum and nothing moves until it is consumed.
fn gather_on_sharded_dim<B: Backend>(dim: usize, tensor: F<B>, indices: I<B>) -> F<B> {
    let indices = resolve_partial(redistribute(indices, Placement::Replicate));
    let ranges = crate::placement::shard_ranges(tensor.shape[dim], tensor.ranks());
    let bool_dtype: BoolDType = <B::BoolElem as burn::tensor::Element>::dtype().into();
    let mesh = tensor.mesh.clone();
    let shards = tensor
        .shards
        .into_iter()
        .zip(indices.shards)
        .zip(ranges)
        .map(|((t, idx), range)| {
            if range.is_empty() {
                let zeros_shape = idx.shape();
                let dtype = t.dtype().into();
                return B::float_zeros(zeros_shape, &B::float_device(&t), dtype);
            }
            let start = Scalar::Int(range.start as i64);
            let inside = B::bool_and(
                B::int_greater_equal_elem(idx.clone(), start, bool_dtype),
                B::int_lower_elem(idx.clone(), Scalar::Int(range.end as i64), bool_dtype),
            );
            let local =
                B::int_clamp(B::int_sub_scalar(idx, start), Scalar::Int(0), Scalar::Int(range.len() as i64 - 1));
            let picked = B::float_gather(dim, t, local);
            B::float_mask_fill(picked, B::bool_not(inside), Scalar::Float(0.0))
        })
        .collect();
    crate::rules::assemble(mesh, Placement::Partial, shards)
}

/// argmax / argmin along the sharded dimension (the predicted class of column-split logits):
/// each rank finds its local extreme and its global index, the K candidates are all-gathered
/// (two tensors of size 1 along `dim` per rank) and every rank picks the first best.
/// `None` when `dim` is not the sharded one or a rank holds no slice of it.
fn arg_extreme_on_sharded_dim<B: Backend>(t: &F<B>, dim: usize, out_dtype: IntDType, max: bool) -> Option<I<B>> {
    if t.placement != Placement::Shard(dim) || t.ranks() == 1 || t.shards.iter().any(|s| s.shape()[dim] == 0) {
        return None;
    }
    let ranges = crate::placement::shard_ranges(t.shape[dim], t.ranks());
    let (values, indices): (Vec<_>, Vec<_>) = t
        .shards
        .iter()
        .zip(&ranges)
        .map(|(p, range)| {
            let (v, i) = if max {
                (B::float_max_dim(p.clone(), dim), B::float_argmax(p.clone(), dim, out_dtype))
            } else {
                (B::float_min_dim(p.clone(), dim), B::float_argmin(p.clone(), dim, out_dtype))
            };
            (v, B::int_add_scalar(i, Scalar::Int(range.start as i64)))
        })
        .unzip();
    let mesh = t.mesh.clone();
    let values = crate::collectives::all_gather(
        crate::rules::assemble::<B, FloatKind>(mesh.clone(), Placement::Shard(dim), values),
        dim,
    );
    let indices = crate::collectives::all_gather(
        crate::rules::assemble::<B, IntKind>(mesh.clone(), Placement::Shard(dim), indices),
        dim,
    );
    let shards = values
        .shards
        .into_iter()
        .zip(indices.shards)
        .map(|(v, i)| {
            let best = if max { B::float_argmax(v, dim, out_dtype) } else { B::float_argmin(v, dim, out_dtype) };
            B::int_gather(dim, i, best)
        })
        .collect();
    Some(crate::rules::assemble(mesh, Placement::Replicate, shards))
}

impl<B: Backend> FloatTensorOps<Self> for Hybrid<B> {
    fn float_from_data(data: TensorData, device: &MeshDevice<B::Device>) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_from_data(data.clone(), d))
    }

    /// Replicated random tensors are drawn once on rank 0 and broadcast, so replicas agree.
    fn float_random(
        shape: Shape,
        distribution: Distribution,
        device: &MeshDevice<B::Device>,
        dtype: FloatDType,
    ) -> F<B> {
        let drawn = B::float_random(shape, distribution, device.rank_device(0), dtype);
        broadcast::<B, FloatKind>(device, drawn, 0)
    }

    async fn float_into_data(tensor: F<B>) -> Result<TensorData, ExecutionError> {
        B::float_into_data(whole(tensor)).await
    }

    fn float_device(tensor: &F<B>) -> MeshDevice<B::Device> {
        tensor.mesh.clone()
    }

    fn float_to_device(tensor: F<B>, device: &MeshDevice<B::Device>) -> F<B> {
        to_mesh(tensor, device)
    }

    fn float_into_int(tensor: F<B>, out_dtype: IntDType) -> I<B> {
        unary::<B, FloatKind, IntKind>(tensor, |p| B::float_into_int(p, out_dtype))
    }

    fn float_empty(shape: Shape, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_empty(shape.clone(), d, dtype))
    }

    fn float_zeros(shape: Shape, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_zeros(shape.clone(), d, dtype))
    }

    fn float_ones(shape: Shape, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_ones(shape.clone(), d, dtype))
    }

    fn float_full(shape: Shape, fill_value: Scalar, device: &MeshDevice<B::Device>, dtype: FloatDType) -> F<B> {
        replicate_with::<B, FloatKind>(device, |d| B::float_full(shape.clone(), fill_value, d, dtype))
    }

    binary_ops!(FloatKind;
        float_add: Linearity::Additive,
        float_sub: Linearity::Additive,
        float_mul: Linearity::Scaling,
        float_div: Linearity::LeftScaling,
        float_remainder: Linearity::None,
        float_powf: Linearity::None,
        float_atan2: Linearity::None,
    );

    scalar_ops!(FloatKind; float_add_scalar, float_sub_scalar, float_remainder_scalar, float_powf_scalar_impl);

    fn float_mul_scalar(lhs: F<B>, rhs: Scalar) -> F<B> {
        linear(lhs, |p| B::float_mul_scalar(p, rhs))
    }

    fn float_div_scalar(lhs: F<B>, rhs: Scalar) -> F<B> {
        linear(lhs, |p| B::float_div_scalar(p, rhs))
    }

    fn float_neg(tensor: F<B>) -> F<B> {
        linear(tensor, |p| B::float_neg(p))
    }

    fn float_matmul(lhs: F<B>, rhs: F<B>) -> F<B> {
        matmul(lhs, rhs)
    }

    fn float_cross(lhs: F<B>, rhs: F<B>, dim: usize) -> F<B> {
        let (lhs, rhs) =
            (resolve_partial(gather_for("float_cross", lhs)), resolve_partial(gather_for("float_cross", rhs)));
        binary::<B, FloatKind, FloatKind, FloatKind>("float_cross", lhs, rhs, Linearity::None, |a, b| {
            B::float_cross(a, b, dim)
        })
    }

    unary_ops!(FloatKind;
        float_recip, float_exp, float_log, float_log1p, float_sqrt, float_abs, float_cos, float_sin, float_tan,
        float_cosh, float_sinh, float_tanh, float_acos, float_acosh, float_asin, float_asinh, float_atan, float_atanh,
        float_round, float_floor, float_ceil, float_trunc, float_erf,
    );

    fn float_cast(tensor: F<B>, dtype: FloatDType) -> F<B> {
        linear(tensor, |p| B::float_cast(p, dtype))
    }

    fn float_swap_dims(tensor: F<B>, dim1: usize, dim2: usize) -> F<B> {
        let axes = shape_rules::swap_axes(tensor.shape.num_dims(), dim1, dim2);
        shape_rules::permute(tensor, &axes, |p| B::float_swap_dims(p, dim1, dim2))
    }

    fn float_permute(tensor: F<B>, axes: &[usize]) -> F<B> {
        shape_rules::permute(tensor, axes, |p| B::float_permute(p, axes))
    }

    fn float_flip(tensor: F<B>, axes: &[usize]) -> F<B> {
        match tensor.placement {
            Placement::Shard(d) if axes.contains(&d) => fallback("float_flip", tensor, |p| B::float_flip(p, axes)),
            _ => linear(tensor, |p| B::float_flip(p, axes)),
        }
    }

    fn float_reshape(tensor: F<B>, shape: Shape) -> F<B> {
        shape_rules::reshape(tensor, shape)
    }

    fn float_gather(dim: usize, tensor: F<B>, indices: I<B>) -> F<B> {
        if tensor.placement == Placement::Shard(dim) && tensor.ranks() > 1 {
            return gather_on_sharded_dim(dim, tensor, indices);
        }
        crate::rules::gather_along("float_gather", dim, tensor, indices, |t, i| B::float_gather(dim, t, i))
    }

    fn float_scatter_add(dim: usize, tensor: F<B>, indices: I<B>, value: F<B>) -> F<B> {
        // Whole float operands stay whole: gather the (small, integer) indices instead of
        // slicing the floats to the indices' shards, so the result can meet any layout later.
        let indices = if tensor.placement == Placement::Replicate && value.placement == Placement::Replicate {
            redistribute(resolve_partial(indices), Placement::Replicate)
        } else {
            indices
        };
        let (tensor, indices, placement) = crate::rules::align_indexed("float_scatter_add", tensor, indices, dim);
        let value = match placement {
            Placement::Shard(d) if value.shape[d] == tensor.shape[d] => redistribute(resolve_partial(value), placement),
            Placement::Replicate => gather_for("float_scatter_add", value),
            _ => {
                panic!("float_scatter_add: value {:?} does not match tensor {:?}", &value.shape[..], &tensor.shape[..])
            }
        };
        let mesh = tensor.mesh.clone();
        let shards = tensor
            .shards
            .into_iter()
            .zip(indices.shards)
            .zip(resolve_partial(value).shards)
            .map(|((t, i), v)| B::float_scatter_add(dim, t, i, v))
            .collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn float_select(tensor: F<B>, dim: usize, indices: I<B>) -> F<B> {
        crate::rules::select_along("float_select", dim, tensor, indices, |t, i| B::float_select(t, dim, i))
    }

    fn float_select_add(tensor: F<B>, dim: usize, indices: I<B>, value: F<B>) -> F<B> {
        let indices = gather_for("float_select_add", indices);
        let placement = match tensor.placement {
            Placement::Shard(d) if d != dim && value.shape[d] == tensor.shape[d] => tensor.placement,
            _ => Placement::Replicate,
        };
        let tensor = if placement == Placement::Replicate { gather_for("float_select_add", tensor) } else { tensor };
        let value = redistribute(resolve_partial(value), placement);
        let tensor = resolve_partial(tensor);
        let mesh = tensor.mesh.clone();
        let shards = tensor
            .shards
            .into_iter()
            .zip(indices.shards)
            .zip(value.shards)
            .map(|((t, i), v)| B::float_select_add(t, dim, i, v))
            .collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn float_slice(tensor: F<B>, slices: &[Slice]) -> F<B> {
        shape_rules::slice(tensor, slices)
    }

    fn float_slice_assign(tensor: F<B>, slices: &[Slice], value: F<B>) -> F<B> {
        let placement = match (tensor.placement, value.placement) {
            (Placement::Shard(d), _)
                if shape_rules::covers_dim(slices, &tensor.shape, d) && value.shape[d] == tensor.shape[d] =>
            {
                tensor.placement
            }
            _ => Placement::Replicate,
        };
        let tensor = if placement == Placement::Replicate {
            resolve_partial(gather_for("float_slice_assign", tensor))
        } else {
            tensor
        };
        let value = if placement == Placement::Replicate {
            resolve_partial(gather_for("float_slice_assign", value))
        } else {
            redistribute(resolve_partial(value), placement)
        };
        let k = tensor.ranks();
        let locals: Vec<Vec<Slice>> = (0..k)
            .map(|r| match placement {
                Placement::Shard(d) => shape_rules::localise(slices, d, tensor.local_shape(r)[d]),
                _ => slices.to_vec(),
            })
            .collect();
        let mesh = tensor.mesh.clone();
        let shards = tensor
            .shards
            .into_iter()
            .zip(value.shards)
            .zip(locals)
            .map(|((t, v), s)| B::float_slice_assign(t, &s, v))
            .collect();
        crate::rules::assemble(mesh, placement, shards)
    }

    fn float_mask_where(tensor: F<B>, mask: Bo<B>, value: F<B>) -> F<B> {
        crate::rules::mask_where("float_mask_where", tensor, mask, value, |t, m, v| B::float_mask_where(t, m, v))
    }

    fn float_mask_fill(tensor: F<B>, mask: Bo<B>, value: Scalar) -> F<B> {
        binary::<B, FloatKind, BoolKind, FloatKind>("float_mask_fill", tensor, mask, Linearity::None, |t, m| {
            B::float_mask_fill(t, m, value)
        })
    }

    cmp_ops!(FloatKind; float_equal, float_greater, float_greater_equal, float_lower, float_lower_equal);
    cmp_elem_ops!(FloatKind; float_equal_elem, float_greater_elem, float_greater_equal_elem, float_lower_elem, float_lower_equal_elem);

    fn float_sum(tensor: F<B>) -> F<B> {
        crate::rules::sum_all(tensor, |p| B::float_sum(p))
    }

    fn float_sum_dim(tensor: F<B>, dim: usize) -> F<B> {
        reduce_dim::<B, FloatKind, FloatKind>("float_sum_dim", tensor, dim, ShardedReduce::Sum, |p| {
            B::float_sum_dim(p, dim)
        })
    }

    fn float_mean_dim(tensor: F<B>, dim: usize) -> F<B> {
        if tensor.placement == Placement::Shard(dim) || tensor.placement == Placement::Partial {
            let len = tensor.shape[dim] as f64;
            let sums = reduce_dim::<B, FloatKind, FloatKind>("float_mean_dim", tensor, dim, ShardedReduce::Sum, |p| {
                B::float_sum_dim(p, dim)
            });
            return linear(sums, |p| B::float_div_scalar(p, Scalar::Float(len)));
        }
        unary(tensor, |p| B::float_mean_dim(p, dim))
    }

    fn float_max_dim(tensor: F<B>, dim: usize) -> F<B> {
        reduce_dim::<B, FloatKind, FloatKind>("float_max_dim", tensor, dim, ShardedReduce::Max, |p| {
            B::float_max_dim(p, dim)
        })
    }

    along_dim_ops!(FloatKind; float_cumsum, float_cumprod, float_cummin, float_cummax);

    fn float_argmax(tensor: F<B>, dim: usize, out_dtype: IntDType) -> I<B> {
        if let Some(out) = arg_extreme_on_sharded_dim(&tensor, dim, out_dtype, true) {
            return out;
        }
        reduce_dim::<B, FloatKind, IntKind>("float_argmax", tensor, dim, ShardedReduce::Gather, |p| {
            B::float_argmax(p, dim, out_dtype)
        })
    }

    fn float_argmin(tensor: F<B>, dim: usize, out_dtype: IntDType) -> I<B> {
        if let Some(out) = arg_extreme_on_sharded_dim(&tensor, dim, out_dtype, false) {
            return out;
        }
        reduce_dim::<B, FloatKind, IntKind>("float_argmin", tensor, dim, ShardedReduce::Gather, |p| {
            B::float_argmin(p, dim, out_dtype)
        })
    }

    fn float_argtopk(tensor: F<B>, dim: usize, k: usize, out_dtype: IntDType) -> I<B> {
        reduce_dim::<B, FloatKind, IntKind>("float_argtopk", tensor, dim, ShardedReduce::Gather, |p| {
            B::float_argtopk(p, dim, k, out_dtype)
        })
    }

    fn float_expand(tensor: F<B>, shape: Shape) -> F<B> {
        shape_rules::expand(tensor, shape, |p, s| B::float_expand(p, s))
    }

    fn float_unfold(tensor: F<B>, dim: usize, size: usize, step: usize) -> F<B> {
        match tensor.placement {
            Placement::Shard(d) if d != dim => linear(tensor, |p| B::float_unfold(p, dim, size, step)),
            _ => fallback("float_unfold", tensor, |p| B::float_unfold(p, dim, size, step)),
        }
    }

    fn float_cat(tensors: Vec<F<B>>, dim: usize) -> F<B> {
        shape_rules::cat(tensors, dim)
    }

    fn float_detach(tensor: F<B>) -> F<B> {
        per_rank(tensor, |p| B::float_detach(p))
    }

    fn float_set_require_grad(tensor: F<B>, require_grad: bool) -> F<B> {
        per_rank(tensor, |p| B::float_set_require_grad(p, require_grad))
    }

    fn float_is_require_grad(tensor: &F<B>) -> bool {
        B::float_is_require_grad(&tensor.shards[0])
    }
}
