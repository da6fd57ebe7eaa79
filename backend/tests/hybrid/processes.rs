//! A mesh spanning processes (here P threads of one process through `ThreadedGroup`, the same
//! collectives and pieces as real processes) equals the same mesh inside one process: every
//! redistribution of float, int and bool tensors gives the same values bit for bit on every
//! process, the processes' ledgers sum to the one-process ledger entry by entry, and the bytes
//! that cross processes are the analytic share; a training step (data-parallel convolution,
//! column-split matmul under each exchange scheme) gives the same output and gradients.

use std::collections::BTreeMap;
use std::sync::Arc;

use burn::backend::flex::FlexDevice;
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Bool, Int, TensorData};
use owt_hybrid::{
    partial_from_summands, Distributed, Exchange, Hybrid, LedgerSnapshot, MeshDevice, Placement, SpanError,
    ThreadedGroup, Transport,
};

type H = Hybrid<Flex>;
type AH = Autodiff<H>;
type Mesh = MeshDevice<FlexDevice>;

/// `body(mesh)` on P threaded processes of L ranks each (one mesh of P x L ranks), results in
/// process order.
fn across<T: Send>(processes: usize, local: usize, body: impl Fn(&Mesh) -> T + Sync) -> Vec<T> {
    ThreadedGroup::run(processes, |group| {
        let mesh = MeshDevice::spanning(vec![FlexDevice; local], Transport::HostStaged, Arc::new(group))
            .expect("every process holds the same number of ranks");
        body(&mesh)
    })
}

/// (bytes, messages) per (phase, collective).
fn entries(s: &LedgerSnapshot) -> BTreeMap<(String, String), (u64, u64)> {
    s.as_text().into_iter().map(|(k, t)| (k, (t.bytes, t.messages))).collect()
}

/// The processes' ledgers added entry by entry.
fn summed(snapshots: &[LedgerSnapshot]) -> BTreeMap<(String, String), (u64, u64)> {
    let mut sum = BTreeMap::new();
    for s in snapshots {
        for (k, (b, m)) in entries(s) {
            let e = sum.entry(k).or_insert((0, 0));
            e.0 += b;
            e.1 += m;
        }
    }
    sum
}

fn floats() -> TensorData {
    TensorData::new((0..30).map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0).collect::<Vec<_>>(), [6, 5])
}

fn ints() -> TensorData {
    TensorData::new((0..30i64).map(|i| (i * 7) % 11 - 4).collect::<Vec<_>>(), [6, 5])
}

fn bools() -> TensorData {
    TensorData::new((0..30).map(|i| (i * 5) % 3 == 0).collect::<Vec<_>>(), [6, 5])
}

const MOVES: [(Placement, Placement); 5] = [
    (Placement::Shard(0), Placement::Replicate),
    (Placement::Shard(1), Placement::Replicate),
    (Placement::Shard(0), Placement::Shard(1)),
    (Placement::Replicate, Placement::Shard(0)),
    (Placement::Shard(1), Placement::Shard(0)),
];

/// Every move of each kind, then the value read back; what each step recorded.
fn moves_of_every_kind(mesh: &Mesh) -> (Vec<TensorData>, LedgerSnapshot) {
    mesh.reset_ledger();
    let mut values = Vec::new();
    for (from, to) in MOVES {
        let f = Tensor::<H, 2>::from_data(floats(), mesh).distribute(from).distribute(to);
        let i = Tensor::<H, 2, Int>::from_data(ints(), mesh).distribute(from).distribute(to);
        let b = Tensor::<H, 2, Bool>::from_data(bools(), mesh).distribute(from).distribute(to);
        assert_eq!(f.placement(), i.placement());
        assert_eq!(f.placement(), b.placement());
        values.extend([f.into_data(), i.into_data(), b.into_data()]);
    }
    // Ops whose pieces carry their rank's place (argmax over the sharded dimension: each
    // rank's candidate indices are offset by its slice's start).
    for d in [0, 1] {
        let t = Tensor::<H, 2>::from_data(floats(), mesh).distribute(Placement::Shard(d));
        values.push(t.clone().argmax(d).into_data());
        values.push(t.argmin(1 - d).into_data());
    }
    // Pending sums whose summands differ: all-reduce (ring), reduce-scatter, and the
    // all-reduce of a tensor with fewer elements than ranks (every summand whole).
    let k = mesh.size();
    let summands = |shape: [usize; 2]| -> Vec<TensorData> {
        (0..k)
            .map(|r| {
                let n = shape[0] * shape[1];
                TensorData::new((0..n).map(|i| ((i * 13 + r * 29) % 17) as f32 / 3.0 - 2.5).collect::<Vec<_>>(), shape)
            })
            .collect()
    };
    let p = partial_from_summands::<Flex, 2>(summands([6, 5]), mesh);
    values.push(p.clone().distribute(Placement::Replicate).into_data());
    values.push(p.distribute(Placement::Shard(1)).into_data());
    values.push(partial_from_summands::<Flex, 2>(summands([1, 1]), mesh).distribute(Placement::Replicate).into_data());
    (values, mesh.ledger_snapshot())
}

#[test]
fn redistributions_across_processes_equal_one_process_bit_for_bit_and_in_the_ledger() {
    for (processes, local) in [(2, 1), (2, 2), (4, 1), (3, 1)] {
        let k = processes * local;
        let (want, one) = moves_of_every_kind(&MeshDevice::virtual_ranks(FlexDevice, k));
        assert_eq!(one.total().cross_process_bytes, 0, "nothing crosses inside one process");
        let got = across(processes, local, moves_of_every_kind);
        for (p, (values, _)) in got.iter().enumerate() {
            assert_eq!(values.len(), want.len());
            for (i, (a, b)) in values.iter().zip(&want).enumerate() {
                assert_eq!(a, b, "{processes} x {local}: value {i} on process {p}");
            }
        }
        let ledgers: Vec<LedgerSnapshot> = got.into_iter().map(|(_, l)| l).collect();
        assert_eq!(summed(&ledgers), entries(&one), "{processes} x {local}: ledgers summed over processes");
        let cross: u64 = ledgers.iter().map(|l| l.total().cross_process_bytes).sum();
        // With one rank per process every transfer crosses; with more, some stay inside.
        let total = one.total().bytes;
        assert!(
            cross > 0 && (cross < total || local == 1) && cross <= total,
            "{processes} x {local}: {cross} of {total} bytes crossed"
        );
    }
}

#[test]
fn an_all_gather_sends_across_processes_exactly_the_pieces_of_the_other_processes_ranks() {
    // [6, 5] f32 on 2 processes x 2 ranks, sharded by rows 2, 2, 1, 1: each piece goes to the
    // three other ranks, two of them on the other process.
    let ledgers = across(2, 2, |mesh| {
        let t = Tensor::<H, 2>::from_data(floats(), mesh).distribute(Placement::Shard(0));
        mesh.reset_ledger();
        let _ = t.distribute(Placement::Replicate);
        mesh.ledger_snapshot().by_collective(owt_hybrid::collectives::names::ALL_GATHER)
    });
    let row = 5 * 4;
    assert_eq!(ledgers[0].bytes, (2 + 2) * row * 3, "process 0 sends its two pieces to three ranks each");
    assert_eq!(ledgers[0].cross_process_bytes, (2 + 2) * row * 2);
    assert_eq!(ledgers[1].bytes, (1 + 1) * row * 3);
    assert_eq!(ledgers[1].cross_process_bytes, (1 + 1) * row * 2);
    assert_eq!((ledgers[0].cross_process_messages, ledgers[1].cross_process_messages), (4, 4));
    assert_eq!(ledgers[0].bytes + ledgers[1].bytes, 6 * row * 3, "the one-process all-gather's volume");
}

/// One training step: a data-parallel convolution (batch-sharded input, replicated kernel),
/// then a matmul against a column-split weight under `scheme`; the output and both gradients.
fn step(mesh: &Mesh, scheme: Exchange) -> (Vec<TensorData>, LedgerSnapshot) {
    let mesh = &mesh.with_exchange(scheme);
    mesh.reset_ledger();
    let n = 8;
    let images =
        TensorData::new((0..n * 2 * 36).map(|i| ((i * 31 % 19) as f32 - 9.0) / 5.0).collect::<Vec<_>>(), [n, 2, 6, 6]);
    let kernel =
        TensorData::new((0..3 * 2 * 9).map(|i| ((i * 7 % 13) as f32 - 6.0) / 10.0).collect::<Vec<_>>(), [3, 2, 3, 3]);
    let fc = TensorData::new((0..48 * 8).map(|i| ((i * 11 % 29) as f32 - 14.0) / 40.0).collect::<Vec<_>>(), [48, 8]);
    let x = Tensor::<AH, 4>::from_data(images, mesh).distribute(Placement::Shard(0));
    let wc = Tensor::<AH, 4>::from_data(kernel, mesh).require_grad();
    let wf = Tensor::<AH, 2>::from_data(fc, mesh).require_grad().distribute(Placement::Shard(1));
    let h = burn::tensor::activation::relu(conv2d(x, wc.clone(), None, ConvOptions::new([1, 1], [0, 0], [1, 1], 1)));
    let y = h.reshape([n, 48]).matmul(wf.clone());
    let loss = (y.clone() * y.clone()).sum();
    let grads = loss.backward();
    let gc = wc.grad(&grads).expect("a kernel gradient");
    let gf = wf.grad(&grads).expect("an FC gradient");
    let values = vec![y.into_data(), gc.into_data(), gf.into_data()];
    (values, mesh.ledger_snapshot())
}

#[test]
fn a_training_step_across_processes_equals_one_process_under_every_scheme() {
    for scheme in [Exchange::AllGather, Exchange::Broadcast, Exchange::Slices] {
        for (processes, local) in [(2, 1), (2, 2), (4, 1)] {
            let k = processes * local;
            let (want, one) = step(&MeshDevice::virtual_ranks(FlexDevice, k), scheme);
            let got = across(processes, local, |mesh| step(mesh, scheme));
            for (p, (values, _)) in got.iter().enumerate() {
                for (i, (a, b)) in values.iter().zip(&want).enumerate() {
                    assert_eq!(a, b, "{scheme:?}, {processes} x {local}: output/gradient {i} on process {p}");
                }
            }
            let ledgers: Vec<LedgerSnapshot> = got.into_iter().map(|(_, l)| l).collect();
            assert_eq!(summed(&ledgers), entries(&one), "{scheme:?}, {processes} x {local}: ledgers summed");
        }
    }
}

#[test]
fn processes_holding_different_numbers_of_ranks_refuse_the_mesh_naming_the_counts() {
    let outcomes = ThreadedGroup::run(2, |group| {
        let local = 1 + owt_hybrid::ProcessGroup::rank(&group);
        MeshDevice::spanning(vec![FlexDevice; local], Transport::HostStaged, Arc::new(group)).map(|m| m.size())
    });
    for outcome in outcomes {
        let err = outcome.expect_err("unequal ranks per process");
        assert_eq!(err, SpanError::UnequalRanks { counts: vec![1, 2] });
        assert!(err.to_string().contains("got 1, 2"), "{err}");
    }
}

#[test]
fn each_process_holds_and_uploads_only_its_own_ranks_pieces() {
    use owt_hybrid::Upload;
    let shapes = across(2, 2, |mesh| {
        assert_eq!(mesh.size(), 4);
        let batch = Tensor::<H, 2>::upload(floats(), Placement::Shard(0), mesh, None);
        (mesh.local_ranks(), batch.local_shapes())
    });
    assert_eq!(shapes[0], (0..2, vec![vec![2, 5], vec![2, 5]]));
    assert_eq!(shapes[1], (2..4, vec![vec![1, 5], vec![1, 5]]));
}

/// A stand-in for NCCL's communicator over every rank of a spanning mesh, on Flex: each
/// process's pieces to every process over the group, summed in rank order on the host (the
/// order the host ring adds in, so its sums are the ring's bit for bit). Counts its calls.
struct HostWorldAllReduce {
    group: Arc<dyn owt_hybrid::ProcessGroup>,
    spans: bool,
    calls: std::sync::atomic::AtomicUsize,
}

impl owt_hybrid::DeviceAllReduce<Flex> for HostWorldAllReduce {
    fn all_reduce_sum(
        &self,
        pieces: Vec<burn::tensor::ops::FloatTensor<Flex>>,
    ) -> Vec<burn::tensor::ops::FloatTensor<Flex>> {
        use burn::tensor::TensorPrimitive;
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let shape = burn::tensor::TensorMetadata::shape(&pieces[0]);
        let local = pieces.len();
        let mut mine = Vec::new();
        for p in pieces {
            let values =
                Tensor::<Flex, 1>::from_primitive(TensorPrimitive::Float(p)).into_data().to_vec::<f32>().unwrap();
            mine.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        }
        let every = self.group.all_gather(mine).expect("the other processes answer");
        let ranks: Vec<Vec<f32>> = every
            .iter()
            .flat_map(|b| {
                let values: Vec<f32> = b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
                let n = values.len() / local;
                values.chunks(n).map(<[f32]>::to_vec).collect::<Vec<_>>()
            })
            .collect();
        let mut sum = ranks[0].clone();
        for r in &ranks[1..] {
            for (s, v) in sum.iter_mut().zip(r) {
                *s += v;
            }
        }
        (0..local)
            .map(|_| {
                <Flex as burn::tensor::ops::FloatTensorOps<Flex>>::float_from_data(
                    TensorData::new(sum.clone(), shape.clone()),
                    &FlexDevice,
                )
            })
            .collect()
    }

    fn spans_processes(&self) -> bool {
        self.spans
    }
}

/// `body(mesh)` on P threaded processes of L ranks, each mesh with a host stand-in for a
/// device all-reduce installed (spanning processes or not); how many times each was used.
fn across_with_world_all_reduce<T: Send>(
    processes: usize,
    local: usize,
    spans: bool,
    body: impl Fn(&Mesh) -> T + Sync,
) -> Vec<(T, usize)> {
    ThreadedGroup::run(processes, |group| {
        let group: Arc<dyn owt_hybrid::ProcessGroup> = Arc::new(group);
        let mesh = MeshDevice::spanning(vec![FlexDevice; local], Transport::HostStaged, group.clone()).unwrap();
        let hook = Arc::new(HostWorldAllReduce { group, spans, calls: Default::default() });
        mesh.set_device_all_reduce::<Flex>(hook.clone());
        let out = body(&mesh);
        (out, hook.calls.load(std::sync::atomic::Ordering::SeqCst))
    })
}

#[test]
fn a_device_all_reduce_over_every_process_leaves_the_rings_values_and_ledger() {
    // What NCCL across processes replaces: the host-staged ring. The sums, and each process's
    // ledger (bytes across processes included), are the ring's exactly.
    for (processes, local) in [(2, 1), (2, 2), (4, 1)] {
        let ring = across(processes, local, |mesh| (moves_of_every_kind(mesh), step(mesh, Exchange::AllGather)));
        let world = across_with_world_all_reduce(processes, local, true, |mesh| {
            (moves_of_every_kind(mesh), step(mesh, Exchange::AllGather))
        });
        for (p, ((want_moves, want_step), ((got_moves, got_step), calls))) in ring.iter().zip(&world).enumerate() {
            // The pending sum of the moves (the tiny one goes whole), and the step's kernel gradient.
            assert_eq!(*calls, 2, "{processes} x {local}: the device all-reduce ran");
            assert_eq!(got_moves.0, want_moves.0, "{processes} x {local}: values on process {p}");
            assert_eq!(got_step.0, want_step.0, "{processes} x {local}: the step on process {p}");
            assert_eq!(got_moves.1.traffic, want_moves.1.traffic, "{processes} x {local}: ledger of process {p}");
            assert_eq!(got_step.1.traffic, want_step.1.traffic, "{processes} x {local}: step ledger of process {p}");
        }
    }
}

#[test]
fn a_device_all_reduce_inside_one_process_is_not_used_by_a_mesh_that_spans_processes() {
    let ring = across(2, 2, moves_of_every_kind);
    let local_only = across_with_world_all_reduce(2, 2, false, moves_of_every_kind);
    for ((want, _), ((got, _), calls)) in ring.iter().zip(&local_only) {
        assert_eq!(*calls, 0, "a one-process all-reduce cannot sum another process's ranks");
        assert_eq!(got, want);
    }
}

#[test]
fn a_process_that_returns_an_error_stops_the_others_with_an_error_not_a_hang() {
    use owt_hybrid::Upload;
    let outcomes = ThreadedGroup::try_run(2, |group| -> Result<Vec<f32>, String> {
        let rank = owt_hybrid::ProcessGroup::rank(&group);
        let mesh = MeshDevice::spanning(vec![FlexDevice; 1], Transport::HostStaged, Arc::new(group))
            .map_err(|e| e.to_string())?;
        if rank == 1 {
            // Returns (dropping its mesh and so its handle of the group) before the exchange.
            return Err("process 1 failed".to_string());
        }
        let rows = Tensor::<H, 2>::upload(floats(), Placement::Shard(0), &mesh, None);
        Ok(rows.redistribute(Placement::Replicate).into_data().to_vec().unwrap())
    });
    assert_eq!(
        outcomes,
        vec![Err(owt_hybrid::GroupError::Lost { process: 1 }), Ok(Err("process 1 failed".to_string()))],
        "process 0's collective stopped on process 1 leaving, as a value"
    );
}
