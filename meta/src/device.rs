//! `MetaDevice`: the Meta backend's device. It holds no memory, only a cost log (one
//! [`OpCost`] per op run on it) and the label new entries get.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use burn::tensor::backend::{Device, DeviceId, DeviceOps};

use crate::cost::{CostTotals, OpCost};

/// Device-type id Meta devices report to Burn ("ME").
const META_TYPE_ID: u16 = 0x4D45;

/// Names the label of each new entry at the time it is logged.
type LabelSource = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The log of one device: the label new entries get and the entries so far.
#[derive(Default)]
struct CostLog {
    label: Option<String>,
    source: Option<LabelSource>,
    costs: Vec<OpCost>,
}

/// What every clone of one device shares.
struct DeviceState {
    id: u16,
    log: Mutex<CostLog>,
}

impl Drop for DeviceState {
    /// The last handle is gone: the id is free for the next device.
    fn drop(&mut self) {
        registry().live.remove(&self.id);
    }
}

/// A shape-only device. Cloning is cheap (a reference count) and clones compare equal; each
/// [`MetaDevice::new`] is a distinct device with its own id and cost log, and
/// [`MetaDevice::default`] is one fixed device shared by the whole process. A device is freed
/// (and its id handed out again) when its last handle goes.
#[derive(Clone)]
pub struct MetaDevice {
    state: Arc<DeviceState>,
}

/// The devices alive now, by id, so Burn's `Device::from_id` can find them again; the registry
/// does not keep them alive. Id 0 is the default device's, which lives for the process.
#[derive(Default)]
struct Registry {
    live: HashMap<u16, Weak<DeviceState>>,
    /// Where the search for a free id starts.
    cursor: u16,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Default::default);
/// The default device (id 0); made on first use.
static DEFAULT: LazyLock<MetaDevice> = LazyLock::new(|| registry().register(Some(0)));

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// A new device with id `id`, or else the first free id above 0.
    fn register(&mut self, id: Option<u16>) -> MetaDevice {
        let id = id.unwrap_or_else(|| {
            let id = (0..=u16::MAX)
                .map(|i| self.cursor.wrapping_add(i))
                .find(|id| *id != 0 && !self.live.contains_key(id))
                .unwrap_or_else(|| {
                    panic!("Meta: {} devices alive at once, the most Burn's 16-bit device ids allow", self.live.len())
                });
            self.cursor = id.wrapping_add(1);
            id
        });
        let state = Arc::new(DeviceState { id, log: Mutex::new(CostLog::default()) });
        self.live.insert(id, Arc::downgrade(&state));
        MetaDevice { state }
    }
}

/// Meta devices alive in the process now (the default device, once made, included).
pub fn live_devices() -> usize {
    registry().live.len()
}

impl MetaDevice {
    /// A fresh device, distinct from every other alive (its own id and empty cost log): one
    /// per rank of a mesh, for example. Panics only with 65,535 devices alive at once (Burn's
    /// device ids are 16-bit).
    pub fn new() -> Self {
        registry().register(None)
    }

    /// This device's id (unique in the process; the default device's is 0).
    pub fn id(&self) -> u16 {
        self.state.id
    }

    fn log(&self) -> MutexGuard<'_, CostLog> {
        self.state.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Labels the ops logged from now on (e.g. with a layer name); `None` clears the label.
    pub fn set_label(&self, label: Option<&str>) {
        self.log().label = label.map(str::to_string);
    }

    /// The label new entries get now.
    pub fn label(&self) -> Option<String> {
        self.log().label.clone()
    }

    /// A snapshot of the cost log, oldest entry first.
    pub fn costs(&self) -> Vec<OpCost> {
        self.log().costs.clone()
    }

    /// Empties the cost log (the label stays).
    pub fn reset_costs(&self) {
        self.log().costs.clear()
    }

    /// Totals over the cost log (ops, flops, bytes read and written).
    pub fn totals(&self) -> CostTotals {
        CostTotals::of(&self.log().costs)
    }

    /// `(flops, bytes read + written)` over the cost log: the two numbers a roofline needs.
    pub fn total(&self) -> (u64, u64) {
        let t = self.totals();
        (t.flops, t.bytes())
    }

    /// Labels each op logged from now on with what `source` says at that moment (e.g. the
    /// ledger phase of the mesh this device is a rank of), instead of [`MetaDevice::set_label`]'s
    /// fixed label: how a dry run attributes compute to the same layers and phases as traffic.
    pub fn set_label_source(&self, source: impl Fn() -> Option<String> + Send + Sync + 'static) {
        self.log().source = Some(Arc::new(source));
    }

    /// Drops the label source set by [`MetaDevice::set_label_source`] (the fixed label applies
    /// again). A source that holds a mesh of this device keeps both alive until it goes.
    pub fn clear_label_source(&self) {
        self.log().source = None;
    }

    /// Appends one entry with the current label.
    pub(crate) fn record(&self, op: &'static str, flops: u64, bytes_read: u64, bytes_written: u64) {
        let source = self.log().source.clone();
        // Asked without holding the log: the source may take locks of its own.
        let label = match source {
            Some(source) => source(),
            None => self.log().label.clone(),
        };
        self.log().costs.push(OpCost { op, label, flops, bytes_read, bytes_written });
    }
}

impl Default for MetaDevice {
    /// The process-wide default Meta device (id 0; the same device every time).
    fn default() -> Self {
        DEFAULT.clone()
    }
}

impl PartialEq for MetaDevice {
    fn eq(&self, other: &Self) -> bool {
        self.state.id == other.state.id
    }
}

impl Eq for MetaDevice {}

impl std::hash::Hash for MetaDevice {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.state.id.hash(state)
    }
}

impl std::fmt::Debug for MetaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Meta#{}", self.state.id)
    }
}

impl Device for MetaDevice {
    /// The device with this id; index 0 is the default device. Panics on an id no device has
    /// (or of a device already freed).
    fn from_id(device_id: DeviceId) -> Self {
        if device_id.index_id == 0 {
            return Self::default();
        }
        let state = registry().live.get(&device_id.index_id).and_then(Weak::upgrade);
        match state {
            Some(state) => Self { state },
            None => panic!("Meta: no live device with id {}", device_id.index_id),
        }
    }

    fn to_id(&self) -> DeviceId {
        DeviceId::new(META_TYPE_ID, self.state.id)
    }
}

impl DeviceOps for MetaDevice {}
