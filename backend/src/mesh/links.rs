//! How pieces travel between a mesh's ranks: the transport chosen when the mesh is made, and
//! what a backend may install for it (its own all-reduce across devices, the fence a
//! device-to-device send needs).

use std::any::Any;
use std::sync::{Arc, Mutex};

use burn::tensor::backend::Backend;

use crate::transport::{DeviceAllReduce, SendFence, Transport};

/// A mesh's links between ranks.
pub(super) struct Links<D> {
    /// How pieces travel between ranks on distinct devices.
    pub(super) transport: Transport,
    /// An `Arc<dyn DeviceAllReduce<B>>` for the inner backend `B`, when installed (the mesh is
    /// generic over the device only, so the backend's type is checked on use).
    device_all_reduce: Mutex<Option<Box<dyn Any + Send + Sync>>>,
    /// What keeps a device-to-device transfer's source intact, when installed.
    send_fence: Mutex<Option<Arc<dyn SendFence<D>>>>,
}

impl<D: 'static> Links<D> {
    /// Links by `transport`, with nothing installed.
    pub(super) fn new(transport: Transport) -> Self {
        Self { transport, device_all_reduce: Mutex::new(None), send_fence: Mutex::new(None) }
    }

    /// Installs the inner backend's all-reduce.
    pub(super) fn set_device_all_reduce<B: Backend<Device = D>>(&self, all_reduce: Arc<dyn DeviceAllReduce<B>>) {
        *self.device_all_reduce.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(all_reduce));
    }

    /// Whether an inner all-reduce is installed.
    pub(super) fn has_device_all_reduce(&self) -> bool {
        self.device_all_reduce.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// The installed all-reduce, if it is one for backend `B`.
    pub(super) fn device_all_reduce<B: Backend<Device = D>>(&self) -> Option<Arc<dyn DeviceAllReduce<B>>> {
        let installed = self.device_all_reduce.lock().unwrap_or_else(|e| e.into_inner());
        installed.as_ref().and_then(|b| b.downcast_ref::<Arc<dyn DeviceAllReduce<B>>>()).cloned()
    }

    /// Installs the send fence.
    pub(super) fn set_send_fence(&self, fence: Arc<dyn SendFence<D>>) {
        *self.send_fence.lock().unwrap_or_else(|e| e.into_inner()) = Some(fence);
    }

    /// After a transfer from `source` to another device: the installed fence, if any.
    pub(super) fn after_send(&self, source: &D) {
        let fence = self.send_fence.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(fence) = fence {
            fence.after_send(source);
        }
    }
}
