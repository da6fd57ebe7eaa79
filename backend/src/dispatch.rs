//! Doing: the one place that takes a [`Strategy`] and carries it out on a mesh. It
//! redistributes each input to the placement the strategy names (through `collectives.rs`),
//! runs the inner op rank by rank, assembles the output in its placement, and records in the
//! ledger what moved, which ops had no rule (fallbacks) and any empty pieces. The op files
//! only build specs, ask `strategy` for a rule and hand the inner op to a `run` function.

use burn::tensor::backend::Backend;
use burn::tensor::TensorMetadata;

use crate::collectives;
use crate::dtensor::DTensor;
use crate::kind::ShardKind;
use crate::mesh::MeshDevice;
use crate::placement::Placement;
use crate::strategy::{Context, Run, Spec, Strategy};

/// The spec a rule sees of `t`.
pub(crate) fn spec<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>) -> Spec {
    Spec { shape: t.shape.clone(), placement: t.placement, kept_whole: t.is_kept_whole() }
}

/// The context of an op on `t`'s mesh: its size and the options set on it, read once here.
pub(crate) fn context<B: Backend, K: ShardKind<B>>(t: &DTensor<B, K>) -> Context {
    Context { ranks: t.ranks(), exchange: t.mesh.exchange() }
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

/// The output in its placement, then where the strategy sends it next.
fn finish<B: Backend, K: ShardKind<B>>(
    s: &Strategy,
    mesh: MeshDevice<B::Device>,
    shards: Vec<K::Prim>,
) -> DTensor<B, K> {
    let out = assemble::<B, K>(mesh, s.output, shards);
    match s.then {
        Some(p) => bring(out, p),
        None => out,
    }
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

/// Carries out a one-input strategy; `f(rank, piece)` is the inner op.
pub(crate) fn run1<B: Backend, K: ShardKind<B>, K2: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K>,
    f: impl Fn(usize, K::Prim) -> K2::Prim + Sync,
) -> DTensor<B, K2> {
    note_fallback(op, s, &[a.placement], &a.mesh);
    let a = bring(a, s.inputs[0]);
    let mesh = a.mesh.clone();
    let first = mesh.local_ranks().start;
    if let Run::OnOwner { rank } = s.run {
        let piece = mesh.is_local(rank).then(|| f(rank, a.shards[rank - first].clone()));
        return collectives::broadcast::<B, K2>(&mesh, piece, rank);
    }
    let shards = per_rank::<B, _, _>(first, a.shards, |r, p| f(r, p));
    finish::<B, K2>(s, mesh, shards)
}

/// Carries out a two-input strategy; `f(rank, a, b)` is the inner op.
pub(crate) fn run2<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    f: impl Fn(usize, K1::Prim, K2::Prim) -> K3::Prim + Sync,
) -> DTensor<B, K3> {
    a.mesh.check_same(&b.mesh, op);
    note_fallback(op, s, &[a.placement, b.placement], &a.mesh);
    let (a, b) = (bring(a, s.inputs[0]), bring(b, s.inputs[1]));
    let mesh = a.mesh.clone();
    let pairs: Vec<_> = a.shards.into_iter().zip(b.shards).collect();
    let shards = per_rank::<B, _, _>(mesh.local_ranks().start, pairs, |r, (x, y)| f(r, x, y));
    finish::<B, K3>(s, mesh, shards)
}

/// Carries out a three-input strategy; `f(rank, a, b, c)` is the inner op.
pub(crate) fn run3<B: Backend, K1: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>, K4: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K1>,
    b: DTensor<B, K2>,
    c: DTensor<B, K3>,
    f: impl Fn(usize, K1::Prim, K2::Prim, K3::Prim) -> K4::Prim + Sync,
) -> DTensor<B, K4> {
    a.mesh.check_same(&b.mesh, op);
    a.mesh.check_same(&c.mesh, op);
    note_fallback(op, s, &[a.placement, b.placement, c.placement], &a.mesh);
    let (a, b, c) = (bring(a, s.inputs[0]), bring(b, s.inputs[1]), bring(c, s.inputs[2]));
    let mesh = a.mesh.clone();
    let triples: Vec<_> = a.shards.into_iter().zip(b.shards).zip(c.shards).collect();
    let shards = per_rank::<B, _, _>(mesh.local_ranks().start, triples, |r, ((x, y), z)| f(r, x, y, z));
    finish::<B, K4>(s, mesh, shards)
}

/// Carries out a strategy over a list of inputs of one kind (cat); `f(rank, pieces)`.
pub(crate) fn run_all<B: Backend, K: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    ts: Vec<DTensor<B, K>>,
    f: impl Fn(usize, Vec<K::Prim>) -> K::Prim + Sync,
) -> DTensor<B, K> {
    let mesh = ts[0].mesh.clone();
    for t in &ts[1..] {
        mesh.check_same(&t.mesh, op);
    }
    let from: Vec<Placement> = ts.iter().map(|t| t.placement).collect();
    note_fallback(op, s, &from, &mesh);
    let ts: Vec<DTensor<B, K>> = ts.into_iter().zip(&s.inputs).map(|(t, p)| bring(t, *p)).collect();
    let mut per: Vec<Vec<K::Prim>> = mesh.local_ranks().map(|_| Vec::with_capacity(ts.len())).collect();
    for t in ts {
        for (i, p) in t.shards.into_iter().enumerate() {
            per[i].push(p);
        }
    }
    let shards = per_rank::<B, _, _>(mesh.local_ranks().start, per, |r, ps| f(r, ps));
    finish::<B, K>(s, mesh, shards)
}

/// Carries out a strategy with a first input and optional further ones of kind `K` (a conv
/// and its bias); absent inputs have no entry in the strategy beyond the given ones.
pub(crate) fn run_opt<B: Backend, K: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K>,
    b: DTensor<B, K>,
    c: Option<DTensor<B, K>>,
    f: impl Fn(usize, K::Prim, K::Prim, Option<K::Prim>) -> K::Prim + Sync,
) -> DTensor<B, K> {
    match c {
        Some(c) => run3::<B, K, K, K, K>(op, s, a, b, c, |r, x, y, z| f(r, x, y, Some(z))),
        None => run2::<B, K, K, K>(op, s, a, b, |r, x, y| f(r, x, y, None)),
    }
}

/// Carries out a matmul strategy: rank-local, or with the left operand exchanged in rounds.
pub(crate) fn run_matmul<B: Backend, K: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    lhs: DTensor<B, K>,
    rhs: DTensor<B, K>,
    f: impl Fn(K::Prim, K::Prim) -> K::Prim + Sync,
) -> DTensor<B, K> {
    match s.run {
        Run::Exchange { scheme, dim } => {
            lhs.mesh.check_same(&rhs.mesh, op);
            crate::exchange::exchange_matmul(lhs, rhs, dim, scheme, f)
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
            run2::<B, K, K, K>(op, s, lhs, rhs, |_, a, b| f(a, b))
        }
    }
}

/// A Replicate tensor made on every rank by `make(device)` (host data is uploaded to each
/// rank; nothing moves between ranks).
pub(crate) fn replicate_with<B: Backend, K: ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    make: impl Fn(&B::Device) -> K::Prim + Sync,
) -> DTensor<B, K> {
    DTensor::replicated(mesh.clone(), |r| make(mesh.rank_device(r)))
}

/// A tensor drawn once on rank 0 (by rank 0's process only) and broadcast, so replicas agree.
pub(crate) fn drawn_on_rank0<B: Backend, K: ShardKind<B>>(
    mesh: &MeshDevice<B::Device>,
    draw: impl FnOnce(&B::Device) -> K::Prim,
) -> DTensor<B, K> {
    let drawn = mesh.is_local(0).then(|| draw(mesh.rank_device(0)));
    collectives::broadcast::<B, K>(mesh, drawn, 0)
}

/// Moves a tensor to another mesh (or returns it if it is on `device` already).
pub(crate) fn to_mesh<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>, device: &MeshDevice<B::Device>) -> DTensor<B, K> {
    if &t.mesh == device {
        return t;
    }
    let whole = bring(t, Placement::Replicate);
    let source = whole.shards[0].clone();
    // Between meshes: the host path works for any pair of devices.
    replicate_with::<B, K>(device, |d| K::to_device(source.clone(), d, crate::transport::Transport::HostStaged))
}

/// Reads a tensor back whole: pending reductions resolved, shards gathered, the first local
/// rank's copy (every process gets the whole value).
pub(crate) fn whole<B: Backend, K: ShardKind<B>>(t: DTensor<B, K>) -> K::Prim {
    let t = bring(t, Placement::Replicate);
    t.shards.into_iter().next().expect("a mesh has a rank")
}

/// Carries out a one-input strategy whose inner op has two results (max pooling with indices,
/// a real FFT); both come out in the strategy's output placement.
pub(crate) fn run1_two<B: Backend, K: ShardKind<B>, K2: ShardKind<B>, K3: ShardKind<B>>(
    op: &str,
    s: &Strategy,
    a: DTensor<B, K>,
    f: impl Fn(usize, K::Prim) -> (K2::Prim, K3::Prim) + Sync,
) -> (DTensor<B, K2>, DTensor<B, K3>) {
    note_fallback(op, s, &[a.placement], &a.mesh);
    let a = bring(a, s.inputs[0]);
    let mesh = a.mesh.clone();
    let (x, y): (Vec<_>, Vec<_>) = mesh.local_ranks().zip(a.shards).map(|(r, p)| f(r, p)).unzip();
    (finish::<B, K2>(s, mesh.clone(), x), finish::<B, K3>(s, mesh, y))
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
    ts.into_iter().map(|t| t.map(|t| bring(t, Placement::Replicate))).collect()
}
