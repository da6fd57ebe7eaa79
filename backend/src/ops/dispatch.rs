//! Doing: the one place that takes an op's rule and carries it out on a mesh, one mesh
//! dimension at a time, as PyTorch's DTensor expands a strategy over a mesh: along each outer
//! dimension (the nodes of a mesh of nodes), outermost first, the rule is applied to the
//! inputs' specs there (their global shapes cut by the dimensions outside it) and the inputs
//! are brought to what it names (`comm/along.rs`); then along the mesh's own ranks it is
//! applied to this process's view and carried out as on a 1-D mesh: each input redistributed
//! (`comm/collectives.rs`), the inner op run rank by rank, the output assembled in its
//! placement. The ledger records what moved, which ops had no rule (fallbacks) and any empty
//! pieces. The op files only name their rule and hand the inner op to a `run` function.
//!
//! Along an outer dimension every process runs its part of the op, so a rule there must be
//! rank-local: one that needs an exchange in rounds or one owner gathers the inputs along
//! that dimension instead (a fallback, counted). On a 1-D mesh the outer step does nothing.

use burn::tensor::backend::Backend;
use burn::tensor::TensorMetadata;

use crate::comm::along::{extent_along, redistribute_along};
use crate::comm::collectives;
use crate::mesh::MeshDevice;
use crate::rules::{Context, Run, Spec, Strategy};
use crate::spec::placement::{can_shard, shard_sizes, Placement};
use crate::tensor::dtensor::DTensor;
use crate::tensor::kind::ShardKind;

/// The spec a rule sees of `t` along the mesh's own ranks: this process's view. A pending sum
/// whose total is kept (an earlier op reduced it: see `DTensor::kept`) is the total, on every
/// rank, for free: rules see it `Replicate`, so it is reduced once however many ops read it.
pub(crate) fn spec<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>) -> Spec {
    let kept = t.is_kept_whole();
    let placement = match t.placement {
        Placement::Partial(_) if kept => Placement::Replicate,
        p => p,
    };
    Spec { shape: t.shape.clone(), placement, kept_whole: kept }
}

/// The shape of `t` as outer dimension `j` sees it: the global shape cut by the dimensions
/// outside `j`.
fn level_shape<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>, j: usize) -> burn::tensor::Shape {
    let mut shape = t.global.clone();
    for (p, dim) in t.outer[..j].iter().zip(t.mesh.outer_dims()) {
        if let Placement::Shard(d) = *p {
            if can_shard(shape[d], dim.size()) {
                shape[d] = shard_sizes(shape[d], dim.size())[dim.index()];
            }
        }
    }
    shape
}

/// What the outer step needs of one input, whatever its kind (held in an `Option` so it can
/// be moved out and back while it is brought to a layout).
pub(crate) trait Laid {
    /// Its spec along outer dimension `j`.
    fn spec_along(&self, j: usize) -> Spec;
    /// Brings it to `target` along outer dimension `j`.
    fn bring_along(&mut self, j: usize, target: Placement);
}

impl<B: Backend, K: ShardKind<B>> Laid for Option<DTensor<B, K>> {
    fn spec_along(&self, j: usize) -> Spec {
        let t = self.as_ref().expect("an input");
        Spec::new(level_shape(t, j), t.outer[j])
    }

    fn bring_along(&mut self, j: usize, target: Placement) {
        let t = self.take().expect("an input");
        *self = Some(redistribute_along(t, j, target));
    }
}

/// What an op's rule decided along the mesh's outer dimensions for its output: the placement
/// along each, and where a dimension sends it next (per-process maxima made whole).
#[derive(Debug, Clone, Default)]
pub(crate) struct OuterLayout {
    placements: Vec<Placement>,
    then: Vec<Option<Placement>>,
}

impl OuterLayout {
    /// What this process sees of a tensor of `global` shape laid out as decided: its view, each
    /// dim split along an outer dimension cut to this process's slice (an op's shape argument,
    /// given in global terms, turned into the terms of the view it runs on).
    pub(crate) fn view_of<D: burn::tensor::backend::DeviceOps>(
        &self,
        global: &burn::tensor::Shape,
        mesh: &MeshDevice<D>,
    ) -> burn::tensor::Shape {
        let mut view = global.clone();
        for (p, dim) in self.placements.iter().zip(mesh.outer_dims()) {
            if let Placement::Shard(d) = *p {
                if can_shard(view[d], dim.size()) {
                    view[d] = shard_sizes(view[d], dim.size())[dim.index()];
                }
            }
        }
        view
    }

    /// `slices` (global terms) in the terms of a view of `view` shape: a dim split along an
    /// outer dimension, which a rank-local rule there leaves whole, taken whole in the view.
    pub(crate) fn view_slices(
        &self,
        slices: &[burn::tensor::Slice],
        view: &burn::tensor::Shape,
    ) -> Vec<burn::tensor::Slice> {
        let mut local = slices.to_vec();
        for p in &self.placements {
            if let Placement::Shard(d) = *p {
                local = crate::rules::localise_slices(&local, d, view[d]);
            }
        }
        local
    }

    /// `out`, assembled from this process's pieces, laid out along the outer dimensions as
    /// decided: its global shape is its view with each dim sharded along an outer dimension
    /// summed over the processes there (one number each), then where a dimension sends it.
    pub(crate) fn apply<B: Backend, K: ShardKind<B>>(&self, out: DTensor<B, K>) -> DTensor<B, K> {
        if self.placements.is_empty() {
            return out;
        }
        let mut global = out.shape.clone();
        for (j, p) in self.placements.iter().enumerate().rev() {
            if let Placement::Shard(d) = *p {
                global[d] = extent_along(&out.mesh, j, global[d]);
            }
        }
        let mut out = out.placed_outer(self.placements.clone(), global);
        for (j, then) in self.then.iter().enumerate() {
            if let Some(p) = then {
                out = redistribute_along(out, j, *p);
            }
        }
        out
    }
}

/// The outer step of an op on `inputs` (see the module docs): along each outer dimension of
/// `mesh`, the rule applied to the inputs' specs there, the inputs brought to what it names.
/// Returns the output's layout along those dimensions.
pub(crate) fn outer_step<D: burn::tensor::backend::DeviceOps>(
    op: &str,
    rule: &impl Fn(&[Spec], &Context) -> Strategy,
    mesh: &MeshDevice<D>,
    inputs: &mut [&mut dyn Laid],
) -> OuterLayout {
    let mut layout = OuterLayout::default();
    for (j, dim) in mesh.outer_dims().iter().enumerate() {
        let specs: Vec<Spec> = inputs.iter().map(|t| t.spec_along(j)).collect();
        let context = Context { ranks: dim.size(), between_processes: true, exchange: mesh.exchange() };
        let mut s = rule(&specs, &context);
        if s.run != Run::Local {
            s = Strategy::gathered(specs.len());
        }
        let from: Vec<Placement> = specs.iter().map(|s| s.placement).collect();
        if s.fallback && dim.size() > 1 && from.iter().zip(&s.inputs).any(|(f, t)| f != t) {
            mesh.record_fallback(op);
        }
        for (t, p) in inputs.iter_mut().zip(&s.inputs) {
            t.bring_along(j, *p);
        }
        layout.placements.push(s.output);
        layout.then.push(s.then);
    }
    layout
}

/// The context of an op on `t`'s mesh: its size and the options set on it, read once here.
pub(crate) fn context<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>) -> Context {
    Context { ranks: t.ranks(), between_processes: false, exchange: t.mesh.exchange() }
}

/// Builds a tensor from per-rank results, deriving the global shape from the pieces.
pub(crate) fn assemble<B: Backend, K: ShardKind<B>>(
    mesh: MeshDevice<B::Device>,
    placement: Placement,
    shards: Vec<K::Prim>,
) -> DTensor<B, K> {
    let mut shape = shards[0].shape();
    if let Placement::Shard(d) = placement {
        let local: usize = shards.iter().map(|s| s.shape()[d]).sum();
        shape[d] = collectives::global_extent(&mesh, local);
    }
    let dtype = shards[0].dtype();
    DTensor::from_parts(mesh, shape, dtype, placement, shards)
}

/// Brings `t` to `target` (see `collectives::redistribute`).
pub(crate) fn bring<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, target: Placement) -> DTensor<B, K> {
    collectives::redistribute(t, target)
}

/// Counts a fallback of `op` when the strategy has no rule and gathering moved data.
fn note_fallback<D: burn::tensor::backend::DeviceOps>(
    op: &str,
    s: &Strategy,
    from: &[Placement],
    mesh: &MeshDevice<D>,
) {
    if s.fallback && mesh.size() > 1 && from.iter().zip(&s.inputs).any(|(f, t)| f != t) {
        mesh.record_fallback(op);
    }
}

/// The output in its placement, then where the strategy sends it next, then laid out along
/// the outer dimensions as their rules decided.
fn finish<B: Backend, K: ShardKind<B>>(
    s: &Strategy,
    mesh: MeshDevice<B::Device>,
    shards: Vec<K::Prim>,
    outer: &OuterLayout,
) -> DTensor<B, K> {
    let out = assemble::<B, K>(mesh, s.output, shards);
    let out = match s.then {
        Some(p) => bring(out, p),
        None => out,
    };
    outer.apply(out)
}

/// Whether the ranks of a mesh of inner backend `B` run their pieces of an op side by side:
/// on Flex, whose element-wise ops use one core each (its GEMMs and convolutions share
/// rayon's pool, as these rank tasks do), so K virtual ranks of one CPU keep K cores busy.
/// Each rank's op is the same pure function of its pieces either way (random draws happen on
/// rank 0 outside these calls), so results do not depend on it. GPU backends keep one thread.
fn concurrent<B: Backend>() -> bool {
    std::any::TypeId::of::<B>() == std::any::TypeId::of::<burn::backend::Flex>()
}

/// `f(rank, item)` for every local rank's item (`items[i]` is global rank `first + i`'s), in
/// rank order: side by side where [`concurrent`].
fn per_rank<B: Backend, T: Send, R: Send>(first: usize, items: Vec<T>, f: impl Fn(usize, T) -> R + Sync) -> Vec<R> {
    if items.len() > 1 && concurrent::<B>() {
        use rayon::prelude::*;
        items.into_par_iter().enumerate().map(|(i, t)| f(first + i, t)).collect()
    } else {
        items.into_iter().enumerate().map(|(i, t)| f(first + i, t)).collect()
    }
}

/// A rule that is one fixed strategy whatever the specs (an op without a rule: gathered).
pub(crate) fn fixed(s: Strategy) -> impl Fn(&[Spec], &Context) -> Strategy {
    move |_: &[Spec], _: &Context| s.clone()
}

/// Carries out a one-input op by its rule along every dimension; `f(rank, piece)` is the
/// inner op.
pub(crate) fn run1<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    rule: impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K>,
    f: impl Fn(usize, K::Prim) -> K2::Prim + Sync,
) -> DTensor<B, K2> {
    let (a, outer) = outer1(op, &rule, a);
    let s = rule(&[spec(&a)], &context(&a));
    run1_inner(op, &s, a, &outer, f)
}

/// The outer step of a one-input op: the input brought, the output's outer layout.
pub(crate) fn outer1<B: Backend, K: ShardKind<B>>(
    op: &str,
    rule: &impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K>,
) -> (DTensor<B, K>, OuterLayout) {
    if a.outer.is_empty() {
        return (a, OuterLayout::default());
    }
    let mesh = a.mesh.clone();
    let mut a = Some(a);
    let outer = outer_step(op, rule, &mesh, &mut [&mut a]);
    (a.expect("brought"), outer)
}

/// Carries out a one-input strategy along the mesh's own ranks, the outer layout decided.
pub(crate) fn run1_inner<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K>,
    outer: &OuterLayout,
    f: impl Fn(usize, K::Prim) -> K2::Prim + Sync,
) -> DTensor<B, K2> {
    note_fallback(op, s, &[a.placement], &a.mesh);
    let a = bring(a, s.inputs[0]);
    let mesh = a.mesh.clone();
    let first = mesh.local_ranks().start;
    if let Run::OnOwner { rank } = s.run {
        let piece = mesh.is_local(rank).then(|| f(rank, a.shards[rank - first].clone()));
        return outer.apply(collectives::broadcast::<B, K2>(&mesh, piece, rank));
    }
    let shards = per_rank::<B, _, _>(first, a.shards, |r, p| f(r, p));
    finish::<B, K2>(s, mesh, shards, outer)
}

/// Carries out a two-input op by its rule; `f(rank, a, b)` is the inner op.
pub(crate) fn run2<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    rule: impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    f: impl Fn(usize, K1::Prim, K2::Prim) -> K3::Prim + Sync,
) -> DTensor<B, K3> {
    a.mesh.check_same(&b.mesh, op);
    let (a, b, outer) = outer2(op, &rule, a, b);
    let s = rule(&[spec(&a), spec(&b)], &context(&a));
    run2_inner(op, &s, a, b, &outer, f)
}

/// The outer step of a two-input op.
pub(crate) fn outer2<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    rule: &impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
) -> (DTensor<B, K1>, DTensor<B, K2>, OuterLayout) {
    if a.outer.is_empty() {
        return (a, b, OuterLayout::default());
    }
    let mesh = a.mesh.clone();
    let (mut a, mut b) = (Some(a), Some(b));
    let outer = outer_step(op, rule, &mesh, &mut [&mut a, &mut b]);
    (a.expect("brought"), b.expect("brought"), outer)
}

/// Carries out a two-input strategy along the mesh's own ranks, the outer layout decided.
pub(crate) fn run2_inner<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    outer: &OuterLayout,
    f: impl Fn(usize, K1::Prim, K2::Prim) -> K3::Prim + Sync,
) -> DTensor<B, K3> {
    note_fallback(op, s, &[a.placement, b.placement], &a.mesh);
    let (a, b) = (bring(a, s.inputs[0]), bring(b, s.inputs[1]));
    let mesh = a.mesh.clone();
    let pairs: Vec<_> = a.shards.into_iter().zip(b.shards).collect();
    let shards = per_rank::<B, _, _>(mesh.local_ranks().start, pairs, |r, (x, y)| f(r, x, y));
    finish::<B, K3>(s, mesh, shards, outer)
}

/// Carries out a three-input op by its rule; `f(rank, a, b, c)` is the inner op.
pub(crate) fn run3<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>, K4: ShardKind<B>>(
    op: &str,
    rule: impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
    f: impl Fn(usize, K1::Prim, K2::Prim, K3::Prim) -> K4::Prim + Sync,
) -> DTensor<B, K4> {
    let (a, b, c, outer) = outer3(op, &rule, a, b, c);
    let s = rule(&[spec(&a), spec(&b), spec(&c)], &context(&a));
    run3_inner(op, &s, a, b, c, &outer, f)
}

/// The outer step of a three-input op.
#[allow(clippy::type_complexity)]
pub(crate) fn outer3<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    rule: &impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
) -> (DTensor<B, K1>, DTensor<B, K2>, DTensor<B, K3>, OuterLayout) {
    a.mesh.check_same(&b.mesh, op);
    a.mesh.check_same(&c.mesh, op);
    if a.outer.is_empty() {
        return (a, b, c, OuterLayout::default());
    }
    let mesh = a.mesh.clone();
    let (mut a, mut b, mut c) = (Some(a), Some(b), Some(c));
    let outer = outer_step(op, rule, &mesh, &mut [&mut a, &mut b, &mut c]);
    (a.expect("brought"), b.expect("brought"), c.expect("brought"), outer)
}

/// Carries out a three-input strategy along the mesh's own ranks, the outer layout decided.
pub(crate) fn run3_inner<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>, K4: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
    outer: &OuterLayout,
    f: impl Fn(usize, K1::Prim, K2::Prim, K3::Prim) -> K4::Prim + Sync,
) -> DTensor<B, K4> {
    note_fallback(op, s, &[a.placement, b.placement, c.placement], &a.mesh);
    let (a, b, c) = (bring(a, s.inputs[0]), bring(b, s.inputs[1]), bring(c, s.inputs[2]));
    let mesh = a.mesh.clone();
    let triples: Vec<_> = a.shards.into_iter().zip(b.shards).zip(c.shards).collect();
    let shards = per_rank::<B, _, _>(mesh.local_ranks().start, triples, |r, ((x, y), z)| f(r, x, y, z));
    finish::<B, K4>(s, mesh, shards, outer)
}

/// Carries out an op over a list of inputs of one kind (cat) by its rule; `f(rank, pieces)`.
pub(crate) fn run_all<B: Backend, K: ShardKind<B>>(
    op: &str,
    rule: impl Fn(&[Spec], &Context) -> Strategy,
    ts: Vec<DTensor<B, K>>,
    f: impl Fn(usize, Vec<K::Prim>) -> K::Prim + Sync,
) -> DTensor<B, K> {
    let mesh = ts[0].mesh.clone();
    for t in &ts[1..] {
        mesh.check_same(&t.mesh, op);
    }
    let (ts, outer) = if mesh.outer_dims().is_empty() {
        (ts, OuterLayout::default())
    } else {
        let mut held: Vec<Option<DTensor<B, K>>> = ts.into_iter().map(Some).collect();
        let mut inputs: Vec<&mut dyn Laid> = held.iter_mut().map(|t| t as &mut dyn Laid).collect();
        let outer = outer_step(op, &rule, &mesh, &mut inputs);
        (held.into_iter().map(|t| t.expect("brought")).collect::<Vec<_>>(), outer)
    };
    let specs: Vec<Spec> = ts.iter().map(spec).collect();
    let s = rule(&specs, &context(&ts[0]));
    let from: Vec<Placement> = ts.iter().map(|t| t.placement).collect();
    note_fallback(op, &s, &from, &mesh);
    let ts: Vec<DTensor<B, K>> = ts.into_iter().zip(&s.inputs).map(|(t, p)| bring(t, *p)).collect();
    let mut per: Vec<Vec<K::Prim>> = mesh.local_ranks().map(|_| Vec::with_capacity(ts.len())).collect();
    for t in ts {
        for (i, p) in t.shards.into_iter().enumerate() {
            per[i].push(p);
        }
    }
    let shards = per_rank::<B, _, _>(mesh.local_ranks().start, per, |r, ps| f(r, ps));
    finish::<B, K>(&s, mesh, shards, &outer)
}

/// Carries out an op with a first input and an optional third of kind `K` (a conv and its
/// bias) by its rule, which is given the specs of the inputs present.
pub(crate) fn run_opt<B: Backend, K: ShardKind<B>>(
    op: &str,
    rule: impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K>,
    b: DTensor<B, K>,
    c: Option<DTensor<B, K>>,
    f: impl Fn(usize, K::Prim, K::Prim, Option<K::Prim>) -> K::Prim + Sync,
) -> DTensor<B, K> {
    match c {
        Some(c) => run3::<B, K, K, K, K>(op, rule, a, b, c, |r, x, y, z| f(r, x, y, Some(z))),
        None => run2::<B, K, K, K>(op, rule, a, b, |r, x, y| f(r, x, y, None)),
    }
}

/// The outer step of an op with a first input and an optional third of kind `K`.
#[allow(clippy::type_complexity)]
pub(crate) fn outer_opt<B: Backend, K: ShardKind<B>>(
    op: &str,
    rule: &impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K>,
    b: DTensor<B, K>,
    c: Option<DTensor<B, K>>,
) -> (DTensor<B, K>, DTensor<B, K>, Option<DTensor<B, K>>, OuterLayout) {
    match c {
        Some(c) => {
            let (a, b, c, outer) = outer3(op, rule, a, b, c);
            (a, b, Some(c), outer)
        }
        None => {
            let (a, b, outer) = outer2(op, rule, a, b);
            (a, b, None, outer)
        }
    }
}

/// Carries out a strategy on a first input and an optional third along the mesh's own
/// ranks, the outer layout decided.
pub(crate) fn run_opt_inner<B: Backend, K: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K>,
    b: DTensor<B, K>,
    c: Option<DTensor<B, K>>,
    outer: &OuterLayout,
    f: impl Fn(usize, K::Prim, K::Prim, Option<K::Prim>) -> K::Prim + Sync,
) -> DTensor<B, K> {
    match c {
        Some(c) => run3_inner::<B, K, K, K, K>(op, s, a, b, c, outer, |r, x, y, z| f(r, x, y, Some(z))),
        None => run2_inner::<B, K, K, K>(op, s, a, b, outer, |r, x, y| f(r, x, y, None)),
    }
}

/// Carries out a matmul by its rule: rank-local, or with the left operand exchanged in rounds
/// among the mesh's own ranks.
pub(crate) fn run_matmul<B: Backend, K: ShardKind<B>>(
    op: &str,
    rule: impl Fn(&[Spec], &Context) -> Strategy,
    lhs: DTensor<B, K>,
    rhs: DTensor<B, K>,
    f: impl Fn(K::Prim, K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    lhs.mesh.check_same(&rhs.mesh, op);
    let (lhs, rhs, outer) = outer2(op, &rule, lhs, rhs);
    let s = rule(&[spec(&lhs), spec(&rhs)], &context(&lhs));
    match s.run {
        Run::Exchange { scheme, dim } => {
            outer.apply(crate::ops::exchange_matmul::exchange_matmul(lhs, rhs, dim, scheme, f))
        }
        _ => {
            // A sharded left operand gathered whole (scheme a's all-gather) is kept with it, so
            // the backward pass's `lhs^T @ dy` finds it (see `DTensor::kept`).
            let lhs = if s.inputs[0] == Placement::Replicate && matches!(lhs.placement, Placement::Shard(_)) {
                let whole = bring(lhs.clone(), Placement::Replicate);
                lhs.keep_whole(whole.shards.clone());
                whole
            } else {
                lhs
            };
            run2_inner::<B, K, K, K>(op, &s, lhs, rhs, &outer, |_, a, b| f(a, b))
        }
    }
}

/// A Replicate tensor made on every rank by `make(device)` (host data is uploaded to each
/// rank; nothing moves between ranks).
pub(crate) fn replicate_with<B: Backend, K: ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    make: impl Fn(&B::Device) -> K::Prim + Sync,
) -> DTensor<B, K> {
    as_created(DTensor::replicated(mesh.clone(), |r| make(mesh.rank_device(r))))
}

/// A tensor drawn once on rank 0 (by rank 0's process only) and broadcast, so replicas agree.
pub(crate) fn drawn_on_rank0<B: Backend, K: ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    draw: impl FnOnce(&B::Device) -> K::Prim,
) -> DTensor<B, K> {
    let drawn = mesh.is_local(0).then(|| draw(mesh.rank_device(0)));
    as_created(collectives::broadcast::<B, K>(mesh, drawn, 0))
}

/// A new tensor `t` (replicated) laid out as its mesh handle creates tensors
/// ([`MeshDevice::creating`]): sliced where it splits (each rank keeps its own slice, nothing
/// moves), replicated where it does not.
fn as_created<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
    match t.mesh.creation() {
        Placement::Shard(d) if d < t.shape.num_dims() && can_shard(t.shape[d], t.ranks()) && t.ranks() > 1 => {
            bring(t, Placement::Shard(d))
        }
        _ => t,
    }
}

/// Moves a tensor to another mesh (or returns it if it is on `device` already).
pub(crate) fn to_mesh<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, device: &MeshDevice<B::Device>) -> DTensor<B, K> {
    if &t.mesh == device {
        return t;
    }
    let whole = bring(whole_across(exact(t), ""), Placement::Replicate);
    let source = whole.shards[0].clone();
    // Between meshes: the host path works for any pair of devices.
    replicate_with::<B, K>(device, |d| K::to_device(source.clone(), d, crate::transport::Transport::HostStaged))
}

/// `t` on a handle of its mesh that sends pieces in their own precision: a tensor read back
/// or moved to another mesh (a checkpoint's weights, a metric) comes back exactly as its ranks
/// hold it, whatever wire the step's exchanges use ([`crate::WirePrecision`]).
fn exact<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> DTensor<B, K> {
    DTensor { mesh: t.mesh.with_wire(crate::WirePrecision::Native), ..t }
}

/// Reads a tensor back whole, exactly ([`exact`]): pending reductions resolved, shards
/// gathered, the first local rank's copy (every process gets the whole value).
pub(crate) fn whole<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> K::Prim {
    let t = bring(whole_across(exact(t), ""), Placement::Replicate);
    t.shards.into_iter().next().expect("a mesh has a rank")
}

/// Carries out a one-input op by its rule whose inner op has two results (max pooling with
/// indices, a real FFT); both come out in the rule's output placement.
pub(crate) fn run1_two<B: Backend, K: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    rule: impl Fn(&[Spec], &Context) -> Strategy,
    a: DTensor<B, K>,
    f: impl Fn(usize, K::Prim) -> (K2::Prim, K3::Prim) + Sync,
) -> (DTensor<B, K2>, DTensor<B, K3>) {
    let (a, outer) = outer1(op, &rule, a);
    let s = rule(&[spec(&a)], &context(&a));
    note_fallback(op, &s, &[a.placement], &a.mesh);
    let a = bring(a, s.inputs[0]);
    let mesh = a.mesh.clone();
    let (x, y): (Vec<_>, Vec<_>) = mesh.local_ranks().zip(a.shards).map(|(r, p)| f(r, p)).unzip();
    (finish::<B, K2>(&s, mesh.clone(), x, &outer), finish::<B, K3>(&s, mesh, y, &outer))
}

/// Every input of an op without a rule brought whole to every rank (a fallback of `op` when
/// that moved data), for ops with optional inputs or several results (attention, deformable
/// convolution) that then run rank by rank and [`assemble`] `Replicate` results.
pub(crate) fn gathered_all<B: Backend, K: ShardKind<B>>(
    op: &str,
    ts: Vec<Option<DTensor<B, K>>>,
) -> Vec<Option<DTensor<B, K>>> {
    let present: Vec<&DTensor<B, K>> = ts.iter().flatten().collect();
    let s = Strategy::gathered(present.len());
    let from: Vec<Placement> = present.iter().map(|t| t.placement).collect();
    if let Some(first) = present.first() {
        for t in &present[1..] {
            first.mesh.check_same(&t.mesh, op);
        }
        note_fallback(op, &s, &from, &first.mesh);
    }
    ts.into_iter().map(|t| t.map(|t| bring(whole_across(t, op), Placement::Replicate))).collect()
}

/// `t` brought whole along every outer dimension of its mesh (a fallback of `op` counted
/// where that moved data).
pub(crate) fn whole_across<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, op: &str) -> DTensor<B, K> {
    if t.whole_across() {
        return t;
    }
    if !op.is_empty() && t.mesh.outer_dims().iter().any(|d| d.size() > 1) {
        t.mesh.record_fallback(op);
    }
    let mut t = t;
    for j in 0..t.outer.len() {
        t = redistribute_along(t, j, Placement::Replicate);
    }
    t
}
