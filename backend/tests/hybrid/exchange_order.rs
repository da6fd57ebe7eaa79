//! The order in which scheme b's exchange issues its work, on `Hybrid<Meta>` with every op of
//! every rank numbered in one sequence (a shared label source): the next round's transfers
//! are issued before the current round's matmul, and with device-to-device transport (CUDA)
//! nothing is read back to the host, so a runtime that queues transfers and kernels
//! asynchronously can overlap them. With host staging (wgpu) every piece is read back to the
//! host first: that read waits for the piece, and the transfer is not overlapped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use burn::prelude::*;
use owt_hybrid::{Distributed, Exchange, Hybrid, MeshDevice, Placement, SendFence, Transport};
use owt_meta::{Meta, MetaDevice};

/// A [`SendFence`] that numbers its calls in the ops' sequence, as an op named "send_fence" on
/// the source's device.
struct NumberedFence {
    next: Arc<AtomicUsize>,
    calls: Mutex<Vec<(String, &'static str, u16)>>,
}

impl SendFence<MetaDevice> for NumberedFence {
    fn after_send(&self, source: &MetaDevice) {
        let label = format!("{:08}", self.next.fetch_add(1, Ordering::SeqCst));
        self.calls.lock().unwrap().push((label, "send_fence", source.id()));
    }
}

/// Every op of a scheme-b matmul `[6, 4] Shard(0) x [4, 6] Shard(1)` on 3 distinct devices,
/// in the order the ranks issued them: `(op, device)`, with the calls of a send fence.
fn issued(transport: Transport) -> Vec<(&'static str, u16)> {
    let devices: Vec<MetaDevice> = (0..3).map(|_| MetaDevice::new()).collect();
    let next = Arc::new(AtomicUsize::new(0));
    for d in &devices {
        let next = next.clone();
        d.set_label_source(move || Some(format!("{:08}", next.fetch_add(1, Ordering::SeqCst))));
    }
    let mesh = MeshDevice::with_transport(devices.clone(), transport).with_exchange(Exchange::Broadcast);
    let fence = Arc::new(NumberedFence { next: next.clone(), calls: Mutex::new(Vec::new()) });
    mesh.set_send_fence(fence.clone());
    let x = Tensor::<Hybrid<Meta>, 2>::zeros([6, 4], &mesh).distribute(Placement::Shard(0));
    let w = Tensor::<Hybrid<Meta>, 2>::zeros([4, 6], &mesh).distribute(Placement::Shard(1));
    devices.iter().for_each(MetaDevice::reset_costs);
    let y = x.matmul(w);
    assert_eq!(y.placement(), Placement::Shard(1));
    let mut ops: Vec<(String, &'static str, u16)> = devices
        .iter()
        .flat_map(|d| d.costs().into_iter().map(move |c| (c.label.expect("numbered"), c.op, d.id())))
        .collect();
    ops.extend(fence.calls.lock().unwrap().drain(..));
    ops.sort();
    ops.into_iter().map(|(_, op, d)| (op, d)).collect()
}

#[test]
fn each_rounds_transfers_are_issued_before_the_previous_rounds_matmul_without_host_reads() {
    let ops = issued(Transport::DeviceToDevice);
    let names: Vec<&str> = ops.iter().map(|(op, _)| *op).collect();
    assert!(!names.contains(&"float_into_data"), "a host read on the device-to-device path: {names:?}");
    // Per round, 2 transfers (the source rank's rows to the two others) and 3 matmuls.
    let transfers: Vec<usize> = (0..names.len()).filter(|&i| names[i] == "float_to_device").collect();
    let matmuls: Vec<usize> = (0..names.len()).filter(|&i| names[i] == "float_matmul").collect();
    assert_eq!((transfers.len(), matmuls.len()), (6, 9), "{names:?}");
    for round in 0..2 {
        let next_round_sent = transfers[2 * (round + 1) + 1];
        let this_round_first_matmul = matmuls[3 * round];
        assert!(
            next_round_sent < this_round_first_matmul,
            "round {}'s transfers come after round {round}'s matmul: {names:?}",
            round + 1
        );
    }
}

#[test]
fn every_device_to_device_send_is_fenced_on_its_source_before_its_device_does_anything_else() {
    let ops = issued(Transport::DeviceToDevice);
    let sends: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 == "float_to_device").collect();
    assert_eq!(sends.len(), 6, "{ops:?}");
    for &i in &sends {
        let source = ops[i].1;
        let next_on_source = ops[i + 1..].iter().find(|(_, d)| *d == source);
        assert_eq!(
            next_on_source,
            Some(&("send_fence", source)),
            "the send at {i} from device {source} is not fenced before its device's next op: {ops:?}"
        );
    }
    let fences = ops.iter().filter(|(op, _)| *op == "send_fence").count();
    assert_eq!(fences, sends.len(), "one fence per send: {ops:?}");
}

#[test]
fn host_staging_reads_each_piece_back_before_it_travels() {
    let ops = issued(Transport::HostStaged);
    let names: Vec<&str> = ops.iter().map(|(op, _)| *op).collect();
    let reads = names.iter().filter(|op| **op == "float_into_data").count();
    assert_eq!(reads, 6, "one host read per piece sent: {names:?}");
    assert!(!names.contains(&"float_to_device"), "{names:?}");
    assert!(!names.contains(&"send_fence"), "host staging needs no fence: {names:?}");
}
