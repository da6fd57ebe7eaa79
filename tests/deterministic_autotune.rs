//! `--deterministic`'s autotuning, on wgpu (Mesa lavapipe, no GPU needed): two ranks of one
//! mesh on one device, each driven by its own thread (a mesh spanning two threaded processes),
//! reach an untuned matmul shape at once while the first to arrive pauses inside its tuning.
//! Upstream CubeCL (the switch off) lets the second run a candidate of its own choosing; with
//! the switch on it waits, and both run the kernel the tuning picked.
//!
//! Its own test binary: CubeCL reads its configuration once per process, and this test points
//! the autotune cache at a fresh directory (so its shapes are tuned here, whatever earlier
//! runs left in the usual cache) and turns process-wide switches on and off.
#![cfg(feature = "wgpu")]

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::prelude::*;
use burn::tensor::Distribution;
use burn_cubecl::cubecl::config::cache::CacheConfig;
use burn_cubecl::cubecl::config::CubeClRuntimeConfig;
use cubecl_common::config::RuntimeConfig;
use cubecl_runtime::tune;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement, ThreadedGroup, Transport};

type Plain = CubeBackend<WgpuRuntime, f32, i32, u32>;
type H = Hybrid<Plain>;

/// How long the first rank to reach a shape pauses after marking it pending, before measuring:
/// far longer than the two ranks' arrivals apart (they leave a barrier together).
const PAUSE_MS: u64 = 600;

/// `[2m, k] x [k, n]` split by rows over a 2-rank mesh spanning two threads, both ranks on the
/// default wgpu device, each thread entering the matmul right after a barrier; the tuned
/// executions recorded meanwhile, by key, with the candidate each ran.
fn race(m: usize, k: usize, n: usize) -> BTreeMap<String, Vec<usize>> {
    let barrier = Barrier::new(2);
    tune::take_executions();
    tune::record_executions(true);
    let rows = ThreadedGroup::run(2, |group| {
        let mesh = MeshDevice::spanning(vec![WgpuDevice::DefaultDevice], Transport::HostStaged, Arc::new(group))
            .expect("one rank on each thread");
        let lhs = Tensor::<H, 2>::random([2 * m, k], Distribution::Default, &mesh).distribute(Placement::Shard(0));
        let rhs = Tensor::<H, 2>::random([k, n], Distribution::Default, &mesh);
        // Both inputs in place on the device before the race starts (a read is a collective
        // of the two threads).
        let _ = (lhs.clone().into_data(), rhs.clone().into_data());
        barrier.wait();
        let out = lhs.matmul(rhs);
        let pieces = out.local_shapes();
        let _ = out.into_data();
        pieces
    });
    tune::record_executions(false);
    assert_eq!(rows, vec![vec![vec![m, n]], vec![vec![m, n]]], "each rank computed its half of the rows");
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (key, index) in tune::take_executions() {
        by_key.entry(key).or_default().push(index);
    }
    by_key
}

#[test]
fn deterministic_autotuning_makes_a_rank_that_finds_a_shape_being_tuned_wait_and_run_the_tuned_kernel() {
    if owt::runtime::kernel_cache::wgpu_adapters().is_empty() {
        panic!("no Vulkan adapter: install mesa-vulkan-drivers (lavapipe) to run the wgpu tests");
    }
    let cache = tempfile::tempdir().unwrap();
    {
        let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
        config.autotune.cache = CacheConfig::File(cache.path().to_path_buf());
        let mut storage = CubeClRuntimeConfig::storage().lock();
        assert!(storage.is_none(), "nothing in this process read CubeCL's configuration yet");
        *storage = Some(Arc::new(config));
    }
    tune::set_pause_before_tuning_ms(PAUSE_MS);

    // Upstream's behaviour: the rank that finds the shape pending runs a fallback candidate.
    tune::set_deterministic(false);
    let fallbacks = tune::fallback_runs();
    let upstream = race(48, 40, 24);
    assert!(!upstream.is_empty(), "the matmul was autotuned");
    assert!(
        tune::fallback_runs() > fallbacks,
        "the race was forced: a rank ran a candidate while the other tuned ({upstream:?})"
    );

    // Deterministic: a new shape (new keys); the second rank waits, both run the tuned kernel.
    tune::set_deterministic(true);
    let (fallbacks, waits) = (tune::fallback_runs(), tune::waits());
    let deterministic = race(72, 56, 40);
    assert_eq!(tune::fallback_runs(), fallbacks, "no rank ran a candidate of its own choosing");
    assert!(tune::waits() > waits, "a rank found the shape being tuned and waited ({deterministic:?})");
    let new_keys: Vec<&String> = deterministic.keys().filter(|k| !upstream.contains_key(*k)).collect();
    assert!(!new_keys.is_empty(), "the new shape was tuned under new keys: {deterministic:?}");
    for key in new_keys {
        let ran = &deterministic[key];
        assert!(ran.len() >= 2, "{key}: both ranks ran it ({ran:?})");
        assert!(ran.iter().all(|&i| i == ran[0]), "{key}: every rank ran the tuned candidate, got {ran:?}");
    }
    tune::set_deterministic(false);
    tune::set_pause_before_tuning_ms(0);
}
