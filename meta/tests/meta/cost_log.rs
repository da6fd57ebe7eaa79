//! The cost log: one entry per op with the documented flops and bytes, labels recorded,
//! devices' logs separate, reset clearing them.

use burn::backend::Autodiff;
use burn::prelude::*;
use burn::tensor::module::{conv2d, conv_transpose2d, max_pool2d};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use owt_meta::{CostTotals, Meta, MetaDevice, OpCost};

fn zeros<const D: usize>(shape: [usize; D], d: &MetaDevice) -> Tensor<Meta, D> {
    Tensor::zeros(shape, d)
}

fn only(costs: &[OpCost]) -> &OpCost {
    assert_eq!(costs.len(), 1, "expected one entry, got {costs:#?}");
    &costs[0]
}

#[test]
fn batched_matmul_logs_one_entry_of_2bmnk_flops() {
    let d = MetaDevice::new();
    let (b, m, k, n) = (3u64, 5u64, 7u64, 11u64);
    let lhs = zeros([3, 5, 7], &d);
    let rhs = zeros([3, 7, 11], &d);
    d.reset_costs();
    let out = lhs.matmul(rhs);
    assert_eq!(out.dims(), [3, 5, 11]);
    let c = only(&d.costs()).clone();
    assert_eq!(c.op, "float_matmul");
    assert_eq!(c.flops, 2 * b * m * n * k);
    assert_eq!(c.bytes_read, 4 * (b * m * k + b * k * n));
    assert_eq!(c.bytes_written, 4 * b * m * n);
    assert_eq!(c.label, None);
}

#[test]
fn broadcast_matmul_counts_the_broadcast_batch() {
    let d = MetaDevice::new();
    let (lhs, rhs) = (zeros([2, 1, 3, 4], &d), zeros([1, 5, 4, 6], &d));
    d.reset_costs();
    let _ = lhs.matmul(rhs);
    assert_eq!(only(&d.costs()).flops, 2 * (2 * 5) * 3 * 6 * 4);
}

#[test]
fn conv2d_logs_2_n_cout_outspatial_cin_per_group_kernel() {
    let d = MetaDevice::new();
    let x = zeros([2, 4, 11, 9], &d);
    let w = zeros([6, 2, 3, 2], &d);
    let bias = zeros([6], &d);
    d.reset_costs();
    let out = conv2d(x, w, Some(bias), ConvOptions::new([2, 1], [1, 0], [1, 2], 2));
    let [n, cout, oh, ow] = out.dims();
    assert_eq!([n, cout, oh, ow], [2, 6, 6, 7]);
    let c = only(&d.costs()).clone();
    assert_eq!(c.op, "conv2d");
    assert_eq!(c.flops, (2 * n * cout * oh * ow * 2 * 3 * 2) as u64);
    assert_eq!(c.bytes_read, 4 * (2 * 4 * 11 * 9 + 6 * 2 * 3 * 2 + 6));
    assert_eq!(c.bytes_written, 4 * (n * cout * oh * ow) as u64);
}

#[test]
fn conv_transpose2d_counts_from_the_input_side() {
    let d = MetaDevice::new();
    let x = zeros([2, 4, 5, 6], &d);
    let w = zeros([4, 3, 3, 3], &d);
    d.reset_costs();
    let out = conv_transpose2d(x, w, None, ConvTransposeOptions::new([2, 2], [1, 1], [1, 0], [1, 1], 2));
    assert_eq!(out.dims(), [2, 6, 10, 11]);
    let c = only(&d.costs()).clone();
    assert_eq!(c.op, "conv_transpose2d");
    // 2 · N · Cin · in-spatial · (Cout/groups) · kernel volume
    assert_eq!(c.flops, 2 * 2 * 4 * (5 * 6) * 3 * 9);
}

#[test]
fn pooling_counts_output_elements_times_kernel_volume() {
    let d = MetaDevice::new();
    let x = zeros([2, 3, 13, 13], &d);
    d.reset_costs();
    let out = max_pool2d(x, [3, 3], [2, 2], [0, 0], [1, 1], false);
    assert_eq!(out.dims(), [2, 3, 6, 6]);
    let c = only(&d.costs()).clone();
    assert_eq!((c.op, c.flops), ("max_pool2d", 2 * 3 * 6 * 6 * 9));
}

#[test]
fn conv_backward_logs_each_pass_once_with_the_forward_flops() {
    let d = MetaDevice::new();
    let x = Tensor::<Autodiff<Meta>, 4>::zeros([2, 4, 11, 9], &d).require_grad();
    let w = Tensor::<Autodiff<Meta>, 4>::zeros([6, 2, 3, 2], &d).require_grad();
    let out = conv2d(x.clone(), w.clone(), None, ConvOptions::new([2, 1], [1, 0], [1, 2], 2));
    let loss = out.sum();
    d.reset_costs();
    let _grads = loss.backward();
    let costs = d.costs();
    let forward = 2 * 2 * 6 * (6 * 7) * 2 * (3 * 2);
    for op in ["conv2d_x_backward", "conv2d_weight_backward"] {
        let entries: Vec<&OpCost> = costs.iter().filter(|c| c.op == op).collect();
        assert_eq!(entries.len(), 1, "{op}: {costs:#?}");
        assert_eq!(entries[0].flops, forward, "{op}");
    }
}

#[test]
fn views_are_free_and_elementwise_counts_outputs() {
    let d = MetaDevice::new();
    let a = zeros([4, 6], &d);
    d.reset_costs();
    let b = a.clone().reshape([6, 4]).swap_dims(0, 1).slice([0..2, 0..3]);
    let c = b.exp() + zeros([2, 3], &d);
    assert_eq!(c.dims(), [2, 3]);
    let costs = d.costs();
    let ops: Vec<&str> = costs.iter().map(|c| c.op).collect();
    assert_eq!(ops, ["float_reshape", "float_swap_dims", "float_slice", "float_exp", "float_zeros", "float_add"]);
    for c in &costs[..3] {
        assert_eq!((c.flops, c.bytes_read, c.bytes_written), (0, 0, 0), "{}", c.op);
    }
    assert_eq!((costs[3].flops, costs[3].bytes_read, costs[3].bytes_written), (6, 24, 24));
    assert_eq!((costs[5].flops, costs[5].bytes_read, costs[5].bytes_written), (6, 48, 24));
}

#[test]
fn labels_are_recorded_and_reset_clears_the_log() {
    let d = MetaDevice::new();
    let a = zeros([8, 8], &d);
    d.set_label(Some("fc6"));
    let _ = a.clone().matmul(a.clone());
    d.set_label(Some("fc7"));
    let _ = a.clone().exp();
    d.set_label(None);
    let _ = a.clone().sum();
    let labels: Vec<(&str, Option<String>)> = d.costs().into_iter().map(|c| (c.op, c.label)).collect();
    assert_eq!(
        labels,
        vec![
            ("float_zeros", None),
            ("float_matmul", Some("fc6".to_string())),
            ("float_exp", Some("fc7".to_string())),
            ("float_sum", None),
        ]
    );
    let totals = d.totals();
    assert_eq!(totals.ops, 4);
    assert_eq!(totals.flops, 2 * 8 * 8 * 8 + 64 + 64);
    assert_eq!(d.total(), (totals.flops, totals.bytes_read + totals.bytes_written));
    d.reset_costs();
    assert!(d.costs().is_empty());
    assert_eq!(d.total(), (0, 0));
    assert_eq!(d.label(), None);
}

#[test]
fn each_device_keeps_its_own_log_and_to_device_retags() {
    let (d1, d2) = (MetaDevice::new(), MetaDevice::new());
    let a = zeros([3, 3], &d1);
    let moved = a.to_device(&d2);
    assert_eq!(moved.device(), d2);
    let _ = moved.exp();
    let ops1: Vec<&str> = d1.costs().iter().map(|c| c.op).collect();
    let ops2: Vec<&str> = d2.costs().iter().map(|c| c.op).collect();
    assert_eq!(ops1, ["float_zeros", "float_to_device"]);
    assert_eq!(ops2, ["float_exp"]);
}

#[test]
fn sorts_count_elements_times_the_rounded_up_log2_of_the_length() {
    let d = MetaDevice::new();
    let a = zeros([3, 9], &d);
    d.reset_costs();
    let _ = a.clone().sort(1);
    let _ = a.sort(0);
    let flops: Vec<u64> = d.costs().iter().map(|c| c.flops).collect();
    assert_eq!(flops, vec![27 * 4, 27 * 2]);
}

#[test]
fn reads_give_zeros_and_log_the_bytes_read() {
    let d = MetaDevice::new();
    let a = zeros([3, 5], &d);
    d.reset_costs();
    let data = a.into_data();
    assert_eq!(data.to_vec::<f32>().unwrap(), vec![0.0; 15]);
    let c = only(&d.costs()).clone();
    assert_eq!((c.op, c.flops, c.bytes_read, c.bytes_written), ("float_into_data", 0, 60, 0));
}

#[test]
fn sorts_of_a_power_of_two_length_count_its_own_log2() {
    // A power of two is its own ceiling: 8 elements sort in 3 rounds, 2 in 1, 1 in none.
    let d = MetaDevice::new();
    for (len, rounds) in [(16usize, 4u64), (8, 3), (2, 1), (1, 0)] {
        let a = zeros([5, len], &d);
        d.reset_costs();
        let _ = a.sort(1);
        assert_eq!(only(&d.costs()).flops, 5 * len as u64 * rounds, "length {len}");
    }
}

#[test]
fn a_logs_totals_are_its_entries_summed() {
    let d = MetaDevice::new();
    let (a, b) = (zeros([4, 6], &d), zeros([6, 3], &d));
    let _ = a.matmul(b).exp().sum();
    let costs = d.costs();
    let totals = CostTotals::of(&costs);
    assert!(costs.len() >= 4, "{costs:#?}");
    assert_eq!(totals.ops, costs.len() as u64);
    assert_eq!(totals.flops, costs.iter().map(|c| c.flops).sum::<u64>());
    assert_eq!(totals.bytes_read, costs.iter().map(|c| c.bytes_read).sum::<u64>());
    assert_eq!(totals.bytes_written, costs.iter().map(|c| c.bytes_written).sum::<u64>());
    assert_eq!(totals.bytes(), totals.bytes_read + totals.bytes_written);
    assert!(totals.flops > 2 * 4 * 6 * 3, "the matmul's flops and more: {totals:?}");
}
