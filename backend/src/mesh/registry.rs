//! The meshes alive in the process, by id, so that Burn's `Device::from_id` finds a mesh
//! again, and the default mesh of each inner device type. The registry does not keep a mesh
//! alive: it holds a weak handle, and a mesh's id is free again once its last handle goes.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

/// The meshes alive now and the default meshes.
#[derive(Default)]
pub(super) struct Registry {
    /// A weak handle per live mesh, by id.
    live: HashMap<u16, Box<dyn Any + Send + Sync>>,
    /// A mesh per inner device type, made on first use and kept for the process.
    defaults: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    /// The inner device types whose default mesh a program chose (`MeshDevice::set_default`).
    chosen: std::collections::HashSet<TypeId>,
    /// Where the search for a free id starts (the id after the last one handed out).
    cursor: u16,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Default::default);

/// The registry, locked (one lock for every question and change, so ids are never handed out
/// twice).
pub(super) fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Meshes alive in the process now (the default meshes included): what tests of freeing read.
pub fn live_meshes() -> usize {
    registry().live.len()
}

impl Registry {
    /// A free id, claimed for the mesh `handle` makes of it (a weak handle is registered).
    /// Panics when all 65,536 of Burn's 16-bit device ids are taken.
    pub(super) fn register<M>(&mut self, handle: impl FnOnce(u16) -> (M, Box<dyn Any + Send + Sync>)) -> M {
        let id =
            (0..=u16::MAX).map(|i| self.cursor.wrapping_add(i)).find(|id| !self.live.contains_key(id)).unwrap_or_else(
                || panic!("Hybrid: {} meshes alive at once, the most Burn's 16-bit device ids allow", self.live.len()),
            );
        self.cursor = id.wrapping_add(1);
        let (mesh, weak) = handle(id);
        self.live.insert(id, weak);
        mesh
    }

    /// The weak handle registered under `id`, if it is a `W`.
    pub(super) fn live<W: Any>(&self, id: u16) -> Option<&W> {
        self.live.get(&id).and_then(|m| m.downcast_ref::<W>())
    }

    /// Frees `id` (its mesh's last handle is gone).
    pub(super) fn release(&mut self, id: u16) {
        self.live.remove(&id);
    }

    /// The default mesh of type `M` (one per inner device type), if made already.
    pub(super) fn default_of<M: Any + Clone>(&self) -> Option<M> {
        self.defaults.get(&TypeId::of::<M>()).and_then(|m| m.downcast_ref::<M>()).cloned()
    }

    /// Keeps `mesh` as the default mesh of its type.
    pub(super) fn keep_default<M: Any + Send + Sync>(&mut self, mesh: M) {
        self.defaults.insert(TypeId::of::<M>(), Box::new(mesh));
    }

    /// Keeps `mesh` as the default mesh of its type, chosen by the program.
    pub(super) fn choose_default<M: Any + Send + Sync>(&mut self, mesh: M) {
        self.chosen.insert(TypeId::of::<M>());
        self.keep_default(mesh);
    }

    /// Whether the program chose the default mesh of type `M` (rather than `Default` made it).
    pub(super) fn default_chosen<M: Any>(&self) -> bool {
        self.chosen.contains(&TypeId::of::<M>())
    }
}
