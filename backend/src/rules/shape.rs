//! Shape ops (reshape, permute, slice, expand, cat, flip, unfold): they move no values
//! between elements, so any pending reduction passes through; a shard stays local unless
//! the op cuts or mixes the sharded dimension.

use burn::tensor::{Shape, Slice};

use crate::spec::placement::{shard_ranges, shard_sizes, Placement};

use super::strategy::{Context, Run, Spec, Strategy};

/// Where a `Shard(d)` of `old` lands after reshaping to `new` without moving data: the new
/// sharded dimension, when every rank's block stays a contiguous run of whole rows of the new
/// dimension and the split is the canonical one.
fn reshaped_shard(old: &Shape, d: usize, new: &Shape, k: usize) -> Option<usize> {
    let outer: usize = old[..d].iter().product();
    let inner_old: usize = old[d + 1..].iter().product();
    let ranges = shard_ranges(old[d], k);
    (0..new.num_dims()).find(|&nd| {
        if new[..nd].iter().product::<usize>() != outer {
            return false;
        }
        let inner_new: usize = new[nd + 1..].iter().product();
        if inner_new == 0 || new[nd] * inner_new != old[d] * inner_old {
            return false;
        }
        let mut locals = Vec::with_capacity(k);
        for r in &ranges {
            let (a, b) = (r.start * inner_old, r.end * inner_old);
            if a % inner_new != 0 || b % inner_new != 0 {
                return false;
            }
            locals.push((b - a) / inner_new);
        }
        locals == shard_sizes(new[nd], k)
    })
}

/// Reshape: local for Replicate and Partial, and for a Shard whose blocks stay whole rows
/// (flatten, unflatten of the sharded dim); otherwise gathered.
pub(crate) fn reshape(spec: &Spec, new: &Shape, ctx: &Context) -> Strategy {
    match spec.placement {
        Placement::Shard(d) => match reshaped_shard(&spec.shape, d, new, ctx.ranks) {
            Some(nd) => Strategy::local(vec![spec.placement], Placement::Shard(nd)),
            None => Strategy::gathered(1),
        },
        p => Strategy::local(vec![p], p),
    }
}

/// A permutation of dimensions (`axes[i]` = old dim placed at i): the shard dim moves with it.
pub(crate) fn permute(spec: &Spec, axes: &[usize]) -> Strategy {
    let out = match spec.placement {
        Placement::Shard(d) => Placement::Shard(axes.iter().position(|&a| a == d).expect("axes is a permutation")),
        p => p,
    };
    Strategy::local(vec![spec.placement], out)
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

/// If `slices` cut dimension `d` (step 1) to rows that all lie in one rank's shard: that rank
/// and the slices in its local coordinates.
pub(crate) fn within_one_shard(slices: &[Slice], shape: &Shape, d: usize, ranks: usize) -> Option<(usize, Vec<Slice>)> {
    let s = slices.get(d)?;
    let len = shape[d] as isize;
    let resolve = |i: isize| if i < 0 { i + len } else { i };
    let (start, end) = (resolve(s.start), resolve(s.end.unwrap_or(len)));
    if s.step != 1 || start < 0 || end <= start || end > len {
        return None;
    }
    let (start, end) = (start as usize, end as usize);
    let ranges = shard_ranges(shape[d], ranks);
    let owner = ranges.iter().position(|r| r.start <= start && end <= r.end)?;
    let mut local = slices.to_vec();
    let offset = ranges[owner].start;
    local[d] = Slice::new((start - offset) as isize, Some((end - offset) as isize), 1);
    Some((owner, local))
}

/// Slicing: local unless it cuts the sharded dimension; rows within one rank's shard are
/// cut there and broadcast (one worker's chunk); otherwise gathered.
pub(crate) fn slice(spec: &Spec, slices: &[Slice], ctx: &Context) -> Strategy {
    match spec.placement {
        Placement::Shard(d) if covers_dim(slices, &spec.shape, d) => {
            Strategy::local(vec![spec.placement], spec.placement)
        }
        Placement::Shard(d) => match within_one_shard(slices, &spec.shape, d, ctx.ranks) {
            Some((rank, _)) => {
                Strategy { run: Run::OnOwner { rank }, ..Strategy::local(vec![spec.placement], Placement::Replicate) }
            }
            None => Strategy::gathered(1),
        },
        p => Strategy::local(vec![p], p),
    }
}

/// Expansion (broadcast to `shape`): local unless the sharded dimension is the one expanded.
/// A pending sum that grows is summed first, at its own size: the backward pass of a mean
/// over a split batch (batch normalisation's statistics) broadcasts a per-channel Partial
/// gradient to the activations' shape, and summing it there would move the activations.
pub(crate) fn expand(spec: &Spec, shape: &Shape) -> Strategy {
    let offset = shape.num_dims() - spec.shape.num_dims();
    match spec.placement {
        Placement::Shard(d) if shape[d + offset] == spec.shape[d] => {
            Strategy::local(vec![spec.placement], Placement::Shard(d + offset))
        }
        Placement::Shard(_) => Strategy::gathered(1),
        Placement::Partial(_) if shape.num_elements() > spec.shape.num_elements() => {
            Strategy::local(vec![Placement::Replicate], Placement::Replicate)
        }
        p => Strategy::local(vec![p], p),
    }
}

/// Concatenation: local when all inputs share a placement that does not shard `dim`;
/// Replicate inputs are sliced to a sharded partner's layout for free; otherwise gathered.
pub(crate) fn cat(specs: &[Spec], dim: usize) -> Strategy {
    let places: Vec<Placement> = specs.iter().map(|s| s.placement).collect();
    let target = places.iter().copied().find(|p| matches!(p, Placement::Shard(_))).unwrap_or(places[0]);
    let local = match target {
        Placement::Shard(d) => d != dim && places.iter().all(|p| *p == target || *p == Placement::Replicate),
        p => places.iter().all(|q| *q == p),
    };
    if local {
        Strategy::local(vec![target; specs.len()], target)
    } else {
        Strategy::gathered(specs.len())
    }
}

/// Flipping axes: local unless the sharded dimension is flipped.
pub(crate) fn flip(spec: &Spec, axes: &[usize]) -> Strategy {
    match spec.placement {
        Placement::Shard(d) if axes.contains(&d) => Strategy::gathered(1),
        p => Strategy::local(vec![p], p),
    }
}

/// `unfold(dim, size, step)` (sliding windows along `dim`, a new last dimension): local
/// unless the windows run along the sharded dimension.
pub(crate) fn unfold(spec: &Spec, dim: usize) -> Strategy {
    match spec.placement {
        Placement::Shard(d) if d == dim => Strategy::gathered(1),
        p => Strategy::local(vec![p], p),
    }
}
