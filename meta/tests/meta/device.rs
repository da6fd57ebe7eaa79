//! `MetaDevice`: distinct devices from `new`, one fixed default, ids Burn can map back,
//! cheap clones that compare equal.

use burn::tensor::backend::{Device, DeviceOps};
use owt_meta::MetaDevice;

#[test]
fn new_devices_are_distinct_and_found_by_id() {
    let (a, b) = (MetaDevice::new(), MetaDevice::new());
    assert_ne!(a, b);
    assert_ne!(a.id(), b.id());
    assert_eq!(a, a.clone());
    assert_eq!(MetaDevice::from_id(b.to_id()), b);
    assert_eq!(b.id(), DeviceOps::id(&b).index_id);
}

#[test]
fn the_default_device_is_one_fixed_device() {
    let d = MetaDevice::default();
    assert_eq!(d, MetaDevice::default());
    assert_eq!(d.id(), 0);
    assert_eq!(MetaDevice::from_id(d.to_id()), d);
    assert_ne!(d, MetaDevice::new());
    assert_eq!(format!("{d:?}"), "Meta#0");
}

#[test]
fn clones_share_one_log() {
    let d = MetaDevice::new();
    let c = d.clone();
    c.set_label(Some("conv1"));
    assert_eq!(d.label().as_deref(), Some("conv1"));
    let _ = burn::tensor::Tensor::<owt_meta::Meta, 2>::zeros([2, 2], &c);
    assert_eq!(d.costs().len(), 1);
    assert_eq!(d.costs()[0].label.as_deref(), Some("conv1"));
}
