//! Placement rules of the shape ops: reshape, dimension swaps and permutations, slicing,
//! concatenation and expansion.

use burn::tensor::backend::Backend;
use burn::tensor::{Shape, Slice};

use crate::dtensor::DTensor;
use crate::kind::ShardKind;
use crate::placement::{shard_ranges, shard_sizes, Placement};
use crate::rules::{assemble, gather_for, per_rank};

/// Where a `Shard(d)` of `old` lands after reshaping to `new` without moving data: the new
/// sharded dimension and each rank's local shape, when every rank's block stays a contiguous
/// run of whole rows of the new dimension and the split is the canonical one.
fn reshaped_shard(old: &Shape, d: usize, new: &Shape, k: usize) -> Option<(usize, Vec<Shape>)> {
    let outer: usize = old[..d].iter().product();
    let inner_old: usize = old[d + 1..].iter().product();
    let ranges = shard_ranges(old[d], k);
    (0..new.num_dims()).find_map(|nd| {
        if new[..nd].iter().product::<usize>() != outer {
            return None;
        }
        let inner_new: usize = new[nd + 1..].iter().product();
        if inner_new == 0 || new[nd] * inner_new != old[d] * inner_old {
            return None;
        }
        let mut locals = Vec::with_capacity(k);
        for r in &ranges {
            let (a, b) = (r.start * inner_old, r.end * inner_old);
            if a % inner_new != 0 || b % inner_new != 0 {
                return None;
            }
            locals.push((b - a) / inner_new);
        }
        if locals != shard_sizes(new[nd], k) {
            return None;
        }
        let shapes = locals
            .into_iter()
            .map(|l| {
                let mut s = new.clone();
                s[nd] = l;
                s
            })
            .collect();
        Some((nd, shapes))
    })
}

/// Reshape: local for Replicate and Partial (linear), and for a Shard whose blocks stay
/// whole rows (flatten, unflatten of the sharded dim); otherwise gathered.
pub(crate) fn reshape<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, new: Shape) -> DTensor<B, K> {
    match t.placement {
        Placement::Shard(d) => match reshaped_shard(&t.shape, d, &new, t.ranks()) {
            Some((nd, locals)) => {
                let mesh = t.mesh.clone();
                let shards = t.shards.into_iter().zip(locals).map(|(p, s)| K::reshape(p, s)).collect();
                assemble(mesh, Placement::Shard(nd), shards)
            }
            None => per_rank(gather_for("reshape", t), |p| K::reshape(p, new.clone())),
        },
        _ => {
            let placement = t.placement;
            let mesh = t.mesh.clone();
            let shards = t.shards.into_iter().map(|p| K::reshape(p, new.clone())).collect();
            let dtype = t.dtype;
            DTensor::from_parts(mesh, new, dtype, placement, shards)
        }
    }
}

/// A permutation of dimensions (`axes[i]` = old dim placed at i): the shard dim moves with it.
pub(crate) fn permute<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    axes: &[usize],
    f: impl FnMut(K::Prim) -> K::Prim,
) -> DTensor<B, K> {
    let placement = match t.placement {
        Placement::Shard(d) => Placement::Shard(axes.iter().position(|&a| a == d).expect("axes is a permutation")),
        p => p,
    };
    let mesh = t.mesh.clone();
    let shards = t.shards.into_iter().map(f).collect();
    assemble(mesh, placement, shards)
}

/// `axes` for swapping two dimensions of a rank-`n` tensor.
pub(crate) fn swap_axes(n: usize, a: usize, b: usize) -> Vec<usize> {
    let mut axes: Vec<usize> = (0..n).collect();
    axes.swap(a, b);
    axes
}

/// Whether `slices` take all of dimension `d` of `shape`.
pub(crate) fn covers_dim(slices: &[Slice], shape: &Shape, d: usize) -> bool {
    match slices.get(d) {
        None => true,
        Some(s) => s.step == 1 && s.start == 0 && s.end.is_none_or(|e| e >= 0 && e as usize == shape[d]),
    }
}

/// The slices with dimension `d` replaced by the full local range.
pub(crate) fn localise(slices: &[Slice], d: usize, local_len: usize) -> Vec<Slice> {
    let mut s = slices.to_vec();
    if d < s.len() {
        s[d] = Slice::new(0, Some(local_len as isize), 1);
    }
    s
}

/// Slicing: local unless it cuts the sharded dimension.
pub(crate) fn slice<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, slices: &[Slice]) -> DTensor<B, K> {
    if let Placement::Shard(d) = t.placement {
        if covers_dim(slices, &t.shape, d) {
            let locals: Vec<Vec<Slice>> = (0..t.ranks()).map(|r| localise(slices, d, t.local_shape(r)[d])).collect();
            let mesh = t.mesh.clone();
            let shards = t.shards.into_iter().zip(locals).map(|(p, s)| K::slice(p, &s)).collect();
            return assemble(mesh, Placement::Shard(d), shards);
        }
        if let Some((owner, local)) = within_one_shard(slices, &t, d) {
            let piece = K::slice(t.shards[owner].clone(), &local);
            return crate::collectives::broadcast::<B, K>(&t.mesh, piece, owner);
        }
        return per_rank(gather_for("slice", t), |p| K::slice(p, slices));
    }
    per_rank(t, |p| K::slice(p, slices))
}

/// If `slices` cut dimension `d` (step 1) to rows that all lie in one rank's shard: that rank
/// and the slices in its local coordinates.
fn within_one_shard<B: Backend, K: ShardKind<B>>(
    slices: &[Slice],
    t: &DTensor<B, K>,
    d: usize,
) -> Option<(usize, Vec<Slice>)> {
    let s = slices.get(d)?;
    let len = t.shape[d] as isize;
    let resolve = |i: isize| if i < 0 { i + len } else { i };
    let (start, end) = (resolve(s.start), resolve(s.end.unwrap_or(len)));
    if s.step != 1 || start < 0 || end <= start || end > len {
        return None;
    }
    let (start, end) = (start as usize, end as usize);
    let ranges = crate::placement::shard_ranges(t.shape[d], t.ranks());
    let owner = ranges.iter().position(|r| r.start <= start && end <= r.end)?;
    let mut local = slices.to_vec();
    let offset = ranges[owner].start;
    local[d] = Slice::new((start - offset) as isize, Some((end - offset) as isize), 1);
    Some((owner, local))
}

/// Concatenation: local when all inputs share a placement that does not shard `dim`;
/// Replicate inputs are sliced to a sharded partner's layout for free; otherwise gathered.
pub(crate) fn cat<B: Backend, K: ShardKind<B>>(tensors: Vec<DTensor<B, K>>, dim: usize) -> DTensor<B, K> {
    let target =
        tensors.iter().map(|t| t.placement).find(|p| matches!(p, Placement::Shard(_))).unwrap_or(tensors[0].placement);
    let mesh = tensors[0].mesh.clone();
    for t in &tensors[1..] {
        mesh.check_same(&t.mesh, "cat");
    }
    let local_ok = match target {
        Placement::Shard(d) => {
            d != dim && tensors.iter().all(|t| t.placement == target || t.placement == Placement::Replicate)
        }
        Placement::Replicate => tensors.iter().all(|t| t.placement == Placement::Replicate),
        Placement::Partial => tensors.iter().all(|t| t.placement == Placement::Partial),
    };
    let tensors: Vec<DTensor<B, K>> = if local_ok {
        tensors.into_iter().map(|t| crate::collectives::redistribute(t, target)).collect()
    } else {
        tensors.into_iter().map(|t| gather_for("cat", t)).collect()
    };
    let placement = tensors[0].placement;
    let k = mesh.size();
    let mut per: Vec<Vec<K::Prim>> = (0..k).map(|_| Vec::with_capacity(tensors.len())).collect();
    for t in tensors {
        for (r, p) in t.shards.into_iter().enumerate() {
            per[r].push(p);
        }
    }
    let shards = per.into_iter().map(|ps| K::cat(ps, dim)).collect();
    assemble(mesh, placement, shards)
}

/// Expansion (broadcast to `shape`): local unless the sharded dimension is the one expanded.
pub(crate) fn expand<B: Backend, K: ShardKind<B>>(
    t: DTensor<B, K>,
    shape: Shape,
    mut f: impl FnMut(K::Prim, Shape) -> K::Prim,
) -> DTensor<B, K> {
    let offset = shape.num_dims() - t.shape.num_dims();
    match t.placement {
        Placement::Shard(d) if shape[d + offset] == t.shape[d] => {
            let locals: Vec<Shape> = (0..t.ranks())
                .map(|r| {
                    let mut s = shape.clone();
                    s[d + offset] = t.local_shape(r)[d];
                    s
                })
                .collect();
            let mesh = t.mesh.clone();
            let shards = t.shards.into_iter().zip(locals).map(|(p, s)| f(p, s)).collect();
            assemble(mesh, Placement::Shard(d + offset), shards)
        }
        Placement::Shard(_) => per_rank(gather_for("expand", t), |p| f(p, shape.clone())),
        _ => {
            let placement = t.placement;
            let mesh = t.mesh.clone();
            let dtype = t.dtype;
            let shards = t.shards.into_iter().map(|p| f(p, shape.clone())).collect();
            DTensor::from_parts(mesh, shape, dtype, placement, shards)
        }
    }
}
