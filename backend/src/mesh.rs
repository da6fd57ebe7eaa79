//! The mesh: K ranks, each mapped to an inner-backend device. It is `Hybrid<B>`'s device.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use burn::tensor::backend::{Device, DeviceId, DeviceOps};

use burn::tensor::backend::Backend;

use crate::comm::{CollectiveKey, Phase};
use crate::ledger::{Ledger, LedgerSnapshot};
use crate::process_group::{GroupError, ProcessGroup, Solo};
use crate::scheme::Exchange;
use crate::transport::{DeviceAllReduce, SendFence, Transport};

/// Device-type id `Hybrid` devices report to Burn ("HY").
const MESH_TYPE_ID: u16 = 0x4859;

struct MeshInner<D> {
    id: u16,
    /// This process's ranks' devices, in rank order (all of them in a one-process mesh).
    ranks: Vec<D>,
    /// The global rank of `ranks[0]`.
    first: usize,
    /// Ranks in the whole mesh, over every process (K).
    size: usize,
    /// The processes the mesh spans ([`Solo`] for one).
    group: Arc<dyn ProcessGroup>,
    /// Ranks per process as the ledger counts them: this process's rank count, or on a
    /// one-process mesh the layout set by [`MeshDevice::set_process_layout`] (a preview).
    ranks_per_process: std::sync::atomic::AtomicUsize,
    transport: Transport,
    ledger: Mutex<Ledger>,
    /// An `Arc<dyn DeviceAllReduce<B>>` for the inner backend `B`, when installed.
    device_all_reduce: Mutex<Option<Box<dyn Any + Send + Sync>>>,
    /// What keeps a device-to-device transfer's source intact (see [`SendFence`]), when
    /// installed.
    send_fence: Mutex<Option<Arc<dyn SendFence<D>>>>,
}

impl<D> Drop for MeshInner<D> {
    /// The last handle is gone: the id is free for the next mesh.
    fn drop(&mut self) {
        registry().live.remove(&self.id);
    }
}

/// A mesh of ranks, each on an inner-backend device; several ranks may share one physical
/// device (virtual ranks). Cloning is cheap and clones compare equal; two meshes made by
/// separate calls are different meshes, and tensors of different meshes never meet in one op.
/// A mesh is freed when its last handle (clone, tensor or module on it) goes.
pub struct MeshDevice<D> {
    inner: Arc<MeshInner<D>>,
    /// How batch-sharded activities meet column-split weights in the ops of tensors made on
    /// this handle: a value of the handle, not a mode of the mesh, so two layouts over one
    /// mesh ([`MeshDevice::with_exchange`]) never change each other's scheme.
    exchange: Exchange,
}

/// The meshes alive now, by id (so Burn's `from_id` can find them again), and the default
/// mesh of each inner device type.
#[derive(Default)]
struct Registry {
    /// A `Weak<MeshInner<D>>` per live mesh: the registry does not keep a mesh alive.
    live: HashMap<u16, Box<dyn Any + Send + Sync>>,
    /// A `MeshDevice<D>` per inner device type, made on first use and kept for the process.
    defaults: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    /// Where the search for a free id starts (the id after the last one handed out).
    cursor: u16,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Default::default);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// A mesh over `ranks` with a free id, registered; one lock held throughout.
    fn create<D: DeviceOps>(&mut self, ranks: Vec<D>, transport: Transport) -> MeshDevice<D> {
        let size = ranks.len();
        self.create_spanning(ranks, transport, Arc::new(Solo), 0, size)
    }

    /// A mesh of `size` ranks of which this process holds `ranks`, from global rank `first`.
    fn create_spanning<D: DeviceOps>(
        &mut self,
        ranks: Vec<D>,
        transport: Transport,
        group: Arc<dyn ProcessGroup>,
        first: usize,
        size: usize,
    ) -> MeshDevice<D> {
        assert!(!ranks.is_empty(), "a mesh needs at least one rank, got an empty device list");
        let id =
            (0..=u16::MAX).map(|i| self.cursor.wrapping_add(i)).find(|id| !self.live.contains_key(id)).unwrap_or_else(
                || panic!("Hybrid: {} meshes alive at once, the most Burn's 16-bit device ids allow", self.live.len()),
            );
        self.cursor = id.wrapping_add(1);
        let inner = Arc::new(MeshInner {
            id,
            ranks,
            first,
            size,
            group,
            ranks_per_process: std::sync::atomic::AtomicUsize::new(0),
            transport,
            ledger: Mutex::new(Ledger::default()),
            device_all_reduce: Mutex::new(None),
            send_fence: Mutex::new(None),
        });
        self.live.insert(id, Box::new(Arc::downgrade(&inner)));
        MeshDevice { inner, exchange: Exchange::default() }
    }
}

/// Meshes alive in the process now (the default meshes included): what tests of freeing read.
pub fn live_meshes() -> usize {
    registry().live.len()
}

impl<D: DeviceOps> MeshDevice<D> {
    /// A mesh with one rank per entry of `ranks`, in rank order, moving pieces between
    /// distinct devices through the host (works on every backend). Panics on an empty list.
    pub fn new(ranks: Vec<D>) -> Self {
        Self::with_transport(ranks, Transport::HostStaged)
    }

    /// [`MeshDevice::new`] moving pieces between distinct devices by `transport` (see
    /// [`Transport::choose`]).
    pub fn with_transport(ranks: Vec<D>, transport: Transport) -> Self {
        registry().create(ranks, transport)
    }

    /// This mesh's ranks cut into `parts` meshes of consecutive ranks, each with its own
    /// ledger and this mesh's transport: the nodes of a 2-D mesh held in one process. Panics
    /// unless `parts` divides the ranks, or on a mesh spanning processes.
    pub fn split(&self, parts: usize) -> Vec<MeshDevice<D>> {
        assert!(self.processes() == 1, "a mesh spanning processes cannot be cut into nodes");
        let ranks = self.rank_devices();
        assert!(parts > 0 && ranks.len() % parts == 0, "{} ranks do not cut into {parts} equal meshes", ranks.len());
        ranks.chunks(ranks.len() / parts).map(|c| Self::with_transport(c.to_vec(), self.inner.transport)).collect()
    }

    /// `k` virtual ranks all on `device` (how tests and CPU runs get a K-rank mesh).
    ///
    /// ```
    /// use burn::backend::flex::FlexDevice;
    /// use owt_hybrid::MeshDevice;
    ///
    /// let mesh = MeshDevice::virtual_ranks(FlexDevice, 4);
    /// assert_eq!(mesh.size(), 4);
    /// assert_eq!(mesh.rank_devices(), &[FlexDevice; 4]);
    /// assert_ne!(mesh, MeshDevice::virtual_ranks(FlexDevice, 4), "each call makes its own mesh");
    /// ```
    pub fn virtual_ranks(device: D, k: usize) -> Self {
        Self::new(vec![device; k])
    }

    /// A mesh spanning the processes of `group`: this process holds one rank per entry of
    /// `local`, and every process the same number L, so the mesh has K = P x L ranks and
    /// process p holds ranks p*L..(p+1)*L. A collective: every process of the group calls it
    /// (in the same order as its other meshes). Fails, naming the counts, when the processes
    /// hold different numbers of ranks, or when the group cannot exchange.
    pub fn spanning(local: Vec<D>, transport: Transport, group: Arc<dyn ProcessGroup>) -> Result<Self, SpanError> {
        let l = local.len();
        let p = group.size();
        let counts: Vec<usize> = if p == 1 {
            vec![l]
        } else {
            let mine = (l as u64).to_le_bytes().to_vec();
            let incoming = group.exchange(vec![mine; p]).map_err(SpanError::Group)?;
            incoming.iter().map(|b| u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as usize).collect()
        };
        if counts.iter().any(|&c| c != l) || l == 0 {
            return Err(SpanError::UnequalRanks { counts });
        }
        let first = group.rank() * l;
        Ok(registry().create_spanning(local, transport, group, first, p * l))
    }

    /// Number of ranks (K), over every process the mesh spans.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The global ranks this process holds (all of them in a one-process mesh).
    pub fn local_ranks(&self) -> std::ops::Range<usize> {
        self.inner.first..self.inner.first + self.inner.ranks.len()
    }

    /// Whether global rank `rank` is one of this process's.
    pub fn is_local(&self, rank: usize) -> bool {
        self.local_ranks().contains(&rank)
    }

    /// The process that holds global rank `rank` (on a one-process mesh with a
    /// [process layout](MeshDevice::set_process_layout), the process it would be on).
    pub fn process_of(&self, rank: usize) -> usize {
        let previewed = self.inner.ranks_per_process.load(std::sync::atomic::Ordering::Relaxed);
        rank / if previewed > 0 { previewed } else { self.inner.ranks.len() }
    }

    /// Counts this one-process mesh's traffic as if its ranks sat in processes of
    /// `ranks_per_process` consecutive ranks each: the ledger's cross-process bytes then say
    /// what a job of K / `ranks_per_process` processes would send between them (`owt plan
    /// --processes`). Nothing else changes. Panics on a mesh that really spans processes or a
    /// count that does not divide K.
    pub fn set_process_layout(&self, ranks_per_process: usize) {
        assert_eq!(self.processes(), 1, "a mesh spanning processes has its layout already");
        assert!(
            ranks_per_process > 0 && self.size() % ranks_per_process == 0,
            "{ranks_per_process} ranks per process do not divide a mesh of {} ranks",
            self.size()
        );
        self.inner.ranks_per_process.store(ranks_per_process, std::sync::atomic::Ordering::Relaxed);
    }

    /// The processes the mesh spans (1 unless made with [`MeshDevice::spanning`]).
    pub fn processes(&self) -> usize {
        self.inner.group.size()
    }

    /// This process's index among them.
    pub fn process(&self) -> usize {
        self.inner.group.rank()
    }

    /// The process group the mesh's collectives cross.
    pub fn group(&self) -> &Arc<dyn ProcessGroup> {
        &self.inner.group
    }

    /// The inner device of global rank `rank`, which must be one of this process's.
    pub fn rank_device(&self, rank: usize) -> &D {
        match rank.checked_sub(self.inner.first).and_then(|i| self.inner.ranks.get(i)) {
            Some(d) => d,
            None => panic!(
                "Hybrid: rank {rank} of a {}-rank mesh is not this process's (it holds ranks {:?}, {})",
                self.size(),
                self.local_ranks(),
                self.inner.group.describe()
            ),
        }
    }

    /// This process's ranks' inner devices in rank order (every rank's in a one-process mesh).
    pub fn rank_devices(&self) -> &[D] {
        &self.inner.ranks
    }

    /// How pieces travel between ranks on distinct devices.
    pub fn transport(&self) -> Transport {
        self.inner.transport
    }

    /// Lets the collectives sum float tensors with the inner backend's own all-reduce across
    /// the ranks' devices (NCCL on CUDA) instead of their ring of transfers.
    pub fn set_device_all_reduce<B: Backend<Device = D>>(&self, all_reduce: Arc<dyn DeviceAllReduce<B>>) {
        *self.inner.device_all_reduce.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(all_reduce));
    }

    /// Makes every transfer between two of this mesh's distinct devices call `fence` on the
    /// source's device right after it is issued (see [`SendFence`]: CUDA needs it).
    pub fn set_send_fence(&self, fence: Arc<dyn SendFence<D>>) {
        *self.inner.send_fence.lock().unwrap_or_else(|e| e.into_inner()) = Some(fence);
    }

    /// After a transfer from `source` to another device: the installed fence, if any.
    pub(crate) fn after_send(&self, source: &D) {
        let fence = self.inner.send_fence.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(fence) = fence {
            fence.after_send(source);
        }
    }

    /// Whether an inner all-reduce is installed.
    pub fn has_device_all_reduce(&self) -> bool {
        self.inner.device_all_reduce.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    pub(crate) fn device_all_reduce<B: Backend<Device = D>>(&self) -> Option<Arc<dyn DeviceAllReduce<B>>> {
        let installed = self.inner.device_all_reduce.lock().unwrap_or_else(|e| e.into_inner());
        installed.as_ref().and_then(|b| b.downcast_ref::<Arc<dyn DeviceAllReduce<B>>>()).cloned()
    }

    /// This mesh's id (unique in the process).
    pub fn id(&self) -> u16 {
        self.inner.id
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.inner.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What has moved between this mesh's ranks since the last reset.
    pub fn ledger_snapshot(&self) -> LedgerSnapshot {
        self.ledger().snapshot()
    }

    /// What has moved between the ranks of the whole mesh since the last reset: every
    /// process's ledger (each records what its own ranks sent), summed. A collective when the
    /// mesh spans processes (every process calls it); the same as
    /// [`MeshDevice::ledger_snapshot`] inside one.
    pub fn job_ledger_snapshot(&self) -> LedgerSnapshot {
        let mine = self.ledger_snapshot();
        let p = self.processes();
        if p == 1 {
            return mine;
        }
        let incoming = self.inner.group.exchange(vec![mine.to_bytes(); p]).unwrap_or_else(|e| {
            crate::comm::process_group::collective_failed(
                e,
                &format!("{}, gathering the ledgers", self.inner.group.describe()),
            )
        });
        let mut sum = LedgerSnapshot::default();
        for bytes in incoming {
            sum.add(&LedgerSnapshot::from_bytes(&bytes));
        }
        sum
    }

    /// Clears the ledger.
    pub fn reset_ledger(&self) {
        self.ledger().reset()
    }

    /// Labels the traffic recorded until the returned guard drops with `phase` (e.g. "fc6",
    /// or `Phase::of("fc6", Stage::Forward)`); phases nest, the innermost wins.
    pub fn phase(&self, phase: impl Into<Phase>) -> PhaseGuard<D> {
        self.ledger().push_phase(phase.into());
        PhaseGuard { mesh: self.clone() }
    }

    /// Labels the traffic recorded from now on with `phase` while no [`MeshDevice::phase`]
    /// guard is active (`None`: unlabelled). Unlike the guard it needs no scope, so it can
    /// follow a computation that has no scope of its own, such as a backward pass reaching
    /// layer boundaries.
    pub fn set_phase(&self, phase: Option<Phase>) {
        self.ledger().set_base_phase(phase)
    }

    /// How batch-sharded activities meet column-split weights in the ops of tensors made on
    /// this handle (see [`Exchange`]; [`Exchange::default`] unless [`MeshDevice::with_exchange`]
    /// said otherwise).
    pub fn exchange(&self) -> Exchange {
        self.exchange
    }

    /// This mesh, exchanging activities by `scheme` in the ops of tensors made on the handle
    /// returned (and of everything computed from them). The same mesh: equal to this handle,
    /// with its ranks, ledger and tensors; only the scheme differs, and this handle keeps its
    /// own.
    pub fn with_exchange(&self, scheme: Exchange) -> Self {
        Self { inner: self.inner.clone(), exchange: scheme }
    }

    /// The innermost phase label set now, if any.
    pub fn current_phase(&self) -> Option<Phase> {
        self.ledger().current_phase().cloned()
    }

    pub(crate) fn record(&self, collective: impl Into<CollectiveKey>, traffic: crate::ledger::Traffic) {
        self.ledger().record(collective.into(), traffic)
    }

    pub(crate) fn record_fallback(&self, op: &str) {
        self.ledger().fallback(op)
    }

    pub(crate) fn record_empty(&self, what: &str) {
        self.ledger().empty(what)
    }

    /// Panics unless `other` is this mesh: tensors from two meshes cannot meet in one op.
    pub(crate) fn check_same(&self, other: &Self, op: &str) {
        if self.inner.id != other.inner.id {
            panic!(
                "Hybrid: {op} got tensors from two different meshes (mesh {} with {} ranks and mesh {} with {} ranks); move one with Tensor::to_device first",
                self.inner.id,
                self.size(),
                other.inner.id,
                other.size()
            );
        }
    }
}

/// Why [`MeshDevice::spanning`] could not make a mesh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanError {
    /// The processes hold different numbers of ranks (or none): `counts[p]` is process p's.
    UnequalRanks {
        /// Ranks per process, in process order.
        counts: Vec<usize>,
    },
    /// The processes could not exchange their counts.
    Group(GroupError),
}

impl std::fmt::Display for SpanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpanError::UnequalRanks { counts } => write!(
                f,
                "every process of a mesh must hold the same number of ranks (at least one); got {} (ranks per process, in process order)",
                counts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
            ),
            SpanError::Group(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SpanError {}

/// Ends a ledger phase when dropped.
pub struct PhaseGuard<D: DeviceOps> {
    mesh: MeshDevice<D>,
}

impl<D: DeviceOps> Drop for PhaseGuard<D> {
    fn drop(&mut self) {
        self.mesh.ledger().pop_phase();
    }
}

impl<D> Clone for MeshDevice<D> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), exchange: self.exchange }
    }
}

impl<D> PartialEq for MeshDevice<D> {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}

impl<D> Eq for MeshDevice<D> {}

impl<D: std::fmt::Debug> std::fmt::Debug for MeshDevice<D> {
    /// `Mesh#ID[devices]`; a one-rank mesh by its device first (`Cpu, 1-rank mesh #ID`), as
    /// it stands for that device in a single-device run.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.inner.ranks.as_slice() {
            ranks if self.inner.group.size() > 1 => write!(
                f,
                "Mesh#{}[ranks {}..{} of {} on {}: {ranks:?}]",
                self.inner.id,
                self.inner.first,
                self.inner.first + ranks.len(),
                self.inner.size,
                self.inner.group.describe(),
            ),
            [one] => write!(f, "{one:?}, 1-rank mesh #{}", self.inner.id),
            ranks => write!(f, "Mesh#{}{ranks:?}", self.inner.id),
        }
    }
}

impl<D: DeviceOps> Default for MeshDevice<D> {
    /// The 1-rank mesh on the inner backend's default device (the same mesh every time, made
    /// once, under one lock, however many threads ask at once).
    fn default() -> Self {
        let mut registry = registry();
        if let Some(mesh) = registry.defaults.get(&TypeId::of::<D>()).and_then(|m| m.downcast_ref::<Self>()) {
            return mesh.clone();
        }
        let mesh = registry.create(vec![D::default()], Transport::HostStaged);
        registry.defaults.insert(TypeId::of::<D>(), Box::new(mesh.clone()));
        mesh
    }
}

impl<D: DeviceOps> Device for MeshDevice<D> {
    fn from_id(device_id: DeviceId) -> Self {
        let registry = registry();
        let inner = registry
            .live
            .get(&device_id.index_id)
            .and_then(|m| m.downcast_ref::<Weak<MeshInner<D>>>())
            .and_then(Weak::upgrade);
        drop(registry);
        match inner {
            Some(inner) => Self { inner, exchange: Exchange::default() },
            None => panic!("Hybrid: no live mesh with id {} for this inner device type", device_id.index_id),
        }
    }

    fn to_id(&self) -> DeviceId {
        DeviceId::new(MESH_TYPE_ID, self.inner.id)
    }
}

impl<D: DeviceOps> DeviceOps for MeshDevice<D> {}
