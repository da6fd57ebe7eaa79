//! The mesh: K ranks, each mapped to an inner-backend device. It is `Hybrid<B>`'s device.
//! Its pieces are types of their own: where the ranks are (`ranks`), how pieces travel
//! between them (`links`), what moved (the ledger), and the process-wide table of live meshes
//! (`registry`); the exchange scheme is a value of each handle.

pub mod grid;
mod links;
mod outer;
mod ranks;
mod registry;

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use burn::tensor::backend::{Device, DeviceId, DeviceOps};

use burn::tensor::backend::Backend;

use crate::ledger::{CollectiveKey, Phase};
use crate::ledger::{Ledger, LedgerSnapshot};
use crate::spec::placement::Placement;
use crate::spec::scheme::Exchange;
use crate::spec::WirePrecision;
use crate::transport::process_group::{GroupError, ProcessGroup, Solo};
use crate::transport::{DeviceAllReduce, SendFence, Transport};
use links::Links;
pub use outer::OuterDim;
use ranks::Ranks;
pub use registry::live_meshes;
use registry::registry;

/// Device-type id `Hybrid` devices report to Burn ("HY").
const MESH_TYPE_ID: u16 = 0x4859;

struct MeshInner<D> {
    id: u16,
    ranks: Ranks<D>,
    /// The dimensions across processes, outermost first; the ranks above are the innermost.
    outer: Vec<OuterDim>,
    /// Shared with the mesh this one extends ([`MeshDevice::extended`]), so what a backend
    /// installed on one serves both.
    links: Arc<Links<D>>,
    ledger: Mutex<Ledger>,
}

impl<D> Drop for MeshInner<D> {
    /// The last handle is gone: the id is free for the next mesh.
    fn drop(&mut self) {
        registry().release(self.id);
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
    /// The precision float pieces cross ranks in, a value of the handle like `exchange`
    /// ([`MeshDevice::with_wire`]).
    wire: WirePrecision,
    /// How tensors created on this handle are laid out ([`MeshDevice::creating`]), a value of
    /// the handle like `exchange`.
    creation: Placement,
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
        let size = ranks.len();
        Self::create(ranks, transport, Arc::new(Solo), 0, size, size)
    }

    /// A one-process mesh over `ranks` whose ledger counts traffic as if its ranks sat in
    /// processes of `ranks_per_process` consecutive ranks each: its cross-process bytes then
    /// say what a job of K / `ranks_per_process` processes would send between them (`owt
    /// plan --processes`). Nothing else differs from [`MeshDevice::with_transport`]. Panics
    /// on a count that does not divide K.
    pub fn previewing_processes(ranks: Vec<D>, transport: Transport, ranks_per_process: usize) -> Self {
        let size = ranks.len();
        assert!(
            ranks_per_process > 0 && size % ranks_per_process == 0,
            "{ranks_per_process} ranks per process do not divide a mesh of {size} ranks"
        );
        Self::create(ranks, transport, Arc::new(Solo), 0, size, ranks_per_process)
    }

    /// A mesh of `size` ranks of which this process holds `ranks`, from global rank `first`,
    /// counted in processes of `per_process` ranks, registered under a free id.
    fn create(
        ranks: Vec<D>,
        transport: Transport,
        group: Arc<dyn ProcessGroup>,
        first: usize,
        size: usize,
        per_process: usize,
    ) -> Self {
        Self::create_in(&mut registry(), ranks, transport, group, first, size, per_process)
    }

    /// [`MeshDevice::create`] under a lock of the registry already held.
    fn create_in(
        registry: &mut registry::Registry,
        ranks: Vec<D>,
        transport: Transport,
        group: Arc<dyn ProcessGroup>,
        first: usize,
        size: usize,
        per_process: usize,
    ) -> Self {
        assert!(!ranks.is_empty(), "a mesh needs at least one rank, got an empty device list");
        let ranks = Ranks { devices: ranks, first, size, group, per_process };
        Self::register(registry, ranks, Vec::new(), Arc::new(Links::new(transport)))
    }

    /// A mesh of these parts under a free id.
    fn register(
        registry: &mut registry::Registry,
        ranks: Ranks<D>,
        outer: Vec<OuterDim>,
        links: Arc<Links<D>>,
    ) -> Self {
        registry.register(|id| {
            let inner = Arc::new(MeshInner { id, ranks, outer, links, ledger: Mutex::new(Ledger::default()) });
            let weak: Box<dyn std::any::Any + Send + Sync> = Box::new(Arc::downgrade(&inner));
            let mesh = MeshDevice {
                inner,
                exchange: Exchange::default(),
                wire: WirePrecision::default(),
                creation: Placement::Replicate,
            };
            (mesh, weak)
        })
    }

    /// A mesh with this one's ranks as its innermost dimension and `outer` around it (a node's
    /// ranks within a mesh of nodes): a mesh of its own, with its own ledger, sharing this
    /// one's devices, transport and what is installed on them. Its tensors carry a placement
    /// along every dimension. Panics when this mesh spans processes or has outer dimensions
    /// already, or when a dimension has no name: the processes of an outer dimension each hold
    /// one whole block of the inner ranks.
    pub(crate) fn extended(&self, outer: OuterDim) -> Self {
        assert!(self.processes() == 1, "Hybrid: an outer dimension goes around ranks held in one process");
        assert!(self.inner.outer.is_empty(), "Hybrid: one outer dimension is supported");
        assert!(!outer.name.is_empty(), "Hybrid: a mesh dimension needs a name");
        let r = &self.inner.ranks;
        let ranks = Ranks {
            devices: r.devices.clone(),
            first: r.first,
            size: r.size,
            group: r.group.clone(),
            per_process: r.per_process,
        };
        let mut mesh = Self::register(&mut registry(), ranks, vec![outer], self.inner.links.clone());
        mesh.exchange = self.exchange;
        mesh.wire = self.wire;
        mesh
    }

    /// The dimensions across processes, outermost first (none on a 1-D mesh); the mesh's own
    /// ranks ([`MeshDevice::size`]) are the innermost dimension.
    pub fn outer_dims(&self) -> &[OuterDim] {
        &self.inner.outer
    }

    /// All ranks along every dimension: [`MeshDevice::size`] times each outer dimension's.
    pub fn total_ranks(&self) -> usize {
        self.inner.outer.iter().map(OuterDim::size).product::<usize>() * self.size()
    }

    /// This mesh's ranks cut into `parts` meshes of consecutive ranks, each with its own
    /// ledger and this mesh's transport: the nodes of a 2-D mesh held in one process. Panics
    /// unless `parts` divides the ranks, or on a mesh spanning processes.
    pub fn split(&self, parts: usize) -> Vec<MeshDevice<D>> {
        assert!(self.processes() == 1, "a mesh spanning processes cannot be cut into nodes");
        let ranks = self.rank_devices();
        assert!(parts > 0 && ranks.len() % parts == 0, "{} ranks do not cut into {parts} equal meshes", ranks.len());
        ranks.chunks(ranks.len() / parts).map(|c| Self::with_transport(c.to_vec(), self.transport())).collect()
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
            let incoming = group.all_to_all(vec![mine; p]).map_err(SpanError::Group)?;
            incoming.iter().map(|b| u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as usize).collect()
        };
        if counts.iter().any(|&c| c != l) || l == 0 {
            return Err(SpanError::UnequalRanks { counts });
        }
        let first = group.rank() * l;
        Ok(Self::create(local, transport, group, first, p * l, l))
    }

    /// Number of ranks (K) along the mesh's innermost dimension, over every process it spans
    /// (every rank of a 1-D mesh; a node's on a mesh of nodes).
    pub fn size(&self) -> usize {
        self.inner.ranks.size
    }

    /// The global ranks this process holds (all of them in a one-process mesh).
    pub fn local_ranks(&self) -> std::ops::Range<usize> {
        self.inner.ranks.local()
    }

    /// Whether global rank `rank` is one of this process's.
    pub fn is_local(&self, rank: usize) -> bool {
        self.local_ranks().contains(&rank)
    }

    /// The process that holds global rank `rank` (on a mesh
    /// [previewing processes](MeshDevice::previewing_processes), the process it would be on).
    pub fn process_of(&self, rank: usize) -> usize {
        self.inner.ranks.process_of(rank)
    }

    /// The processes the mesh spans (1 unless made with [`MeshDevice::spanning`]).
    pub fn processes(&self) -> usize {
        self.inner.ranks.group.size()
    }

    /// This process's index among them.
    pub fn process(&self) -> usize {
        self.inner.ranks.group.rank()
    }

    /// The process group the mesh's collectives cross.
    pub fn group(&self) -> &Arc<dyn ProcessGroup> {
        &self.inner.ranks.group
    }

    /// The inner device of global rank `rank`, which must be one of this process's.
    pub fn rank_device(&self, rank: usize) -> &D {
        match self.inner.ranks.device(rank) {
            Some(d) => d,
            None => panic!(
                "Hybrid: rank {rank} of a {}-rank mesh is not this process's (it holds ranks {:?}, {})",
                self.size(),
                self.local_ranks(),
                self.group().describe()
            ),
        }
    }

    /// This process's ranks' inner devices in rank order (every rank's in a one-process mesh).
    pub fn rank_devices(&self) -> &[D] {
        &self.inner.ranks.devices
    }

    /// How pieces travel between ranks on distinct devices.
    pub fn transport(&self) -> Transport {
        self.inner.links.transport
    }

    /// Lets the collectives sum float tensors with the inner backend's own all-reduce across
    /// the ranks' devices (NCCL on CUDA) instead of their ring of transfers.
    pub fn set_device_all_reduce<B: Backend<Device = D>>(&self, all_reduce: Arc<dyn DeviceAllReduce<B>>) {
        self.inner.links.set_device_all_reduce(all_reduce)
    }

    /// Makes every transfer between two of this mesh's distinct devices call `fence` on the
    /// source's device right after it is issued (see [`SendFence`]: CUDA needs it).
    pub fn set_send_fence(&self, fence: Arc<dyn SendFence<D>>) {
        self.inner.links.set_send_fence(fence)
    }

    /// After a transfer from `source` to another device: the installed fence, if any.
    pub(crate) fn after_send(&self, source: &D) {
        self.inner.links.after_send(source)
    }

    /// Whether an inner all-reduce is installed.
    pub fn has_device_all_reduce(&self) -> bool {
        self.inner.links.has_device_all_reduce()
    }

    pub(crate) fn device_all_reduce<B: Backend<Device = D>>(&self) -> Option<Arc<dyn DeviceAllReduce<B>>> {
        self.inner.links.device_all_reduce::<B>()
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
        let incoming = self.group().all_to_all(vec![mine.to_bytes(); p]).unwrap_or_else(|e| {
            crate::transport::process_group::collective_failed(
                e,
                &format!("{}, gathering the ledgers", self.group().describe()),
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
        Self { exchange: scheme, ..self.clone() }
    }

    /// The precision float pieces cross ranks in, in the collectives of tensors made on this
    /// handle ([`WirePrecision::Native`] unless [`MeshDevice::with_wire`] said otherwise).
    pub fn wire(&self) -> WirePrecision {
        self.wire
    }

    /// This mesh, sending float pieces in `wire` precision in the collectives of tensors made
    /// on the handle returned (and of everything computed from them): the same mesh, as
    /// [`MeshDevice::with_exchange`] keeps it.
    pub fn with_wire(&self, wire: WirePrecision) -> Self {
        Self { wire, ..self.clone() }
    }

    /// How tensors created on this handle are laid out: `Replicate` unless
    /// [`MeshDevice::creating`] said otherwise.
    pub fn creation(&self) -> Placement {
        self.creation
    }

    /// This mesh, laying out every tensor created on the handle returned (from data, zeros,
    /// ones, full, empty, random, arange, or moved onto the mesh) as `placement` where its
    /// shape splits (`Shard(d)` needs at least as many elements along `d` as the mesh has
    /// ranks; a tensor that does not split, or has no dimension `d`, is replicated), and every
    /// tensor made from them by Burn on `tensor.device()` likewise: the same mesh, as
    /// [`MeshDevice::with_exchange`] keeps it. With [`MeshDevice::set_default`], Burn code that
    /// creates its tensors on `Default::default()` runs with its data split over the ranks
    /// unchanged. Panics for a pending placement (`Partial`): nothing is created pending.
    pub fn creating(&self, placement: Placement) -> Self {
        assert!(
            !placement.is_partial(),
            "MeshDevice::creating: tensors are created Replicate or Shard(d), not {placement:?}"
        );
        Self { creation: placement, ..self.clone() }
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
        Self { inner: self.inner.clone(), exchange: self.exchange, wire: self.wire, creation: self.creation }
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
        let ranks = &self.inner.ranks;
        match ranks.devices.as_slice() {
            devices if ranks.group.size() > 1 => write!(
                f,
                "Mesh#{}[ranks {:?} of {} on {}: {devices:?}]",
                self.inner.id,
                ranks.local(),
                ranks.size,
                ranks.group.describe(),
            ),
            [one] => write!(f, "{one:?}, 1-rank mesh #{}", self.inner.id),
            ranks => write!(f, "Mesh#{}{ranks:?}", self.inner.id),
        }
    }
}

/// Why [`MeshDevice::set_default`] refused a mesh, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultMeshError(String);

impl std::fmt::Display for DefaultMeshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DefaultMeshError {}

impl<D: DeviceOps> MeshDevice<D> {
    /// Makes `Default::default()` return `mesh` (this handle, with its exchange scheme, wire
    /// and creation placement) for every later call in this process, for meshes of this inner
    /// device type: Burn code that creates its tensors on the default device, as Burn's own
    /// tests, examples and many models do, then runs on the mesh without a change. Set it once,
    /// before the first tensor: refused, in one line, where another default was set before, or
    /// where `Default::default()` already gave out the one-rank mesh (tensors may live on it).
    /// Setting the same handle again is no change.
    pub fn set_default(mesh: &MeshDevice<D>) -> Result<(), DefaultMeshError> {
        let mut registry = registry();
        match registry.default_of::<Self>() {
            Some(current) if current == *mesh && current.handle_values() == mesh.handle_values() => Ok(()),
            Some(current) if registry.default_chosen::<Self>() => Err(DefaultMeshError(format!(
                "MeshDevice::set_default: the default mesh was set already, to {current:?}; it is set once per process, before the first tensor"
            ))),
            Some(current) => Err(DefaultMeshError(format!(
                "MeshDevice::set_default: Default::default() already gave out {current:?} (tensors may live on it); set the default mesh before the first tensor"
            ))),
            None => {
                registry.choose_default(mesh.clone());
                Ok(())
            }
        }
    }

    /// The handle's own values (what two handles of one mesh may differ in).
    fn handle_values(&self) -> (Exchange, WirePrecision, Placement) {
        (self.exchange, self.wire, self.creation)
    }
}

impl<D: DeviceOps> Default for MeshDevice<D> {
    /// The mesh [`MeshDevice::set_default`] chose, else the 1-rank mesh on the inner backend's
    /// default device (the same mesh every time, made once, under one lock, however many
    /// threads ask at once).
    fn default() -> Self {
        let mut registry = registry();
        if let Some(mesh) = registry.default_of::<Self>() {
            return mesh;
        }
        let mesh = Self::create_in(&mut registry, vec![D::default()], Transport::HostStaged, Arc::new(Solo), 0, 1, 1);
        registry.keep_default(mesh.clone());
        mesh
    }
}

impl<D: DeviceOps> Device for MeshDevice<D> {
    fn from_id(device_id: DeviceId) -> Self {
        let inner = registry().live::<Weak<MeshInner<D>>>(device_id.index_id).and_then(Weak::upgrade);
        match inner {
            Some(inner) => Self {
                inner,
                exchange: Exchange::default(),
                wire: WirePrecision::default(),
                creation: Placement::Replicate,
            },
            None => panic!("Hybrid: no live mesh with id {} for this inner device type", device_id.index_id),
        }
    }

    fn to_id(&self) -> DeviceId {
        DeviceId::new(MESH_TYPE_ID, self.inner.id)
    }
}

impl<D: DeviceOps> DeviceOps for MeshDevice<D> {}
