//! `--deterministic`: two runs of the same command print the same losses bit for bit, on a
//! 2-rank wgpu mesh (Mesa lavapipe), with no tuned kernel run as a fallback; and the switch is
//! part of what `owt bench --json` reports. The race it closes (a rank finding a shape being
//! tuned) is forced in `tests/deterministic_autotune.rs`.
#![cfg(feature = "wgpu")]

use crate::cli::stderr;
use crate::faults::owt_within_env;
use crate::wgpu_mesh::require_adapter;

/// `owt bench --json` on a 2-rank wgpu mesh, deterministic, with its kernel cache in `cache`.
fn bench(cache: &std::path::Path) -> serde_json::Value {
    let args = [
        "bench",
        "--backend",
        "wgpu",
        "--model",
        "alexnet-small",
        "--batch",
        "64",
        "--devices",
        "2",
        "--virtual-ranks",
        "--plan",
        "data-parallel",
        "--deterministic",
        "--warmup",
        "0",
        "--steps",
        "2",
        "--json",
    ];
    let o = owt_within_env(&args, &[("OWT_CACHE_DIR", cache.to_str().unwrap())], 600);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn two_deterministic_runs_of_one_command_print_the_same_losses_bit_for_bit() {
    require_adapter();
    let cache = tempfile::tempdir().unwrap();
    let (first, second) = (bench(cache.path()), bench(cache.path()));
    assert_eq!(first["deterministic"], true);
    let losses = |r: &serde_json::Value| -> Vec<u64> {
        r["losses"].as_array().unwrap().iter().map(|l| l.as_f64().unwrap().to_bits()).collect()
    };
    assert_eq!(losses(&first).len(), 2);
    assert_eq!(losses(&first), losses(&second), "{} against {}", first["losses"], second["losses"]);
    for run in [&first, &second] {
        assert_eq!(run["autotune"]["fallback_runs"], 0, "{}", run["autotune"]);
    }
}
