// Patched for owt (vendor/README.md): autotune results fixed before any thread uses them.
//! Deterministic autotuning: a switch that makes the kernel an op runs a function of its
//! inputs on one machine, as PyTorch's `use_deterministic_algorithms` makes cuDNN's.
//!
//! Upstream, a thread that finds a key's tuning pending (another thread is measuring its
//! candidates) runs the first candidate that launches instead of the one the tuning will pick,
//! so two ranks of one device running the same shape side by side can run different kernels
//! and round differently; and each device keeps its own results, so two GPUs can pick
//! different kernels for one shape. With the switch on ([`set_deterministic`]), a thread that
//! finds a key pending waits for the result, and every device of a runtime reads one set of
//! results (the first device's tuner), so every rank runs the same kernel for the same key.
//! Results read from the persistent cache are used as they are (never measured again unless
//! the candidates changed, as upstream).
//!
//! The counters and the pause below let a test force the race and see who ran what.

use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static DETERMINISTIC: AtomicBool = AtomicBool::new(false);
static PAUSE_MS: AtomicU64 = AtomicU64::new(0);
static FALLBACK_RUNS: AtomicU64 = AtomicU64::new(0);
static WAITS: AtomicU64 = AtomicU64::new(0);
static RECORDING: AtomicBool = AtomicBool::new(false);
static EXECUTIONS: spin::Mutex<Vec<(String, usize)>> = spin::Mutex::new(Vec::new());

/// Turns deterministic autotuning on or off for the whole process (set it before any device
/// runs a tuned op: a tuner already in use keeps what it measured).
pub fn set_deterministic(on: bool) {
    DETERMINISTIC.store(on, Ordering::SeqCst);
}

/// Whether autotuning is deterministic ([`set_deterministic`]).
pub fn is_deterministic() -> bool {
    DETERMINISTIC.load(Ordering::SeqCst)
}

/// Test support: how long a tuner pauses after marking a key pending and before measuring
/// (0, the default: no pause), so that a second thread finds the key pending.
pub fn set_pause_before_tuning_ms(ms: u64) {
    PAUSE_MS.store(ms, Ordering::SeqCst);
}

pub(crate) fn pause_before_tuning() {
    let ms = PAUSE_MS.load(Ordering::SeqCst);
    #[cfg(feature = "std")]
    if ms > 0 {
        std::thread::sleep(core::time::Duration::from_millis(ms));
    }
    #[cfg(not(feature = "std"))]
    let _ = ms;
}

/// Executions, since the process started, that ran a candidate of their own choosing because
/// another thread was still tuning their key (upstream's fallback; none when deterministic).
pub fn fallback_runs() -> u64 {
    FALLBACK_RUNS.load(Ordering::SeqCst)
}

/// Executions, since the process started, that waited for another thread's tuning of their key.
pub fn waits() -> u64 {
    WAITS.load(Ordering::SeqCst)
}

pub(crate) fn count_fallback() {
    FALLBACK_RUNS.fetch_add(1, Ordering::SeqCst);
}

pub(crate) fn count_wait() {
    WAITS.fetch_add(1, Ordering::SeqCst);
}

/// Test support: records every tuned execution's key and the index of the candidate it ran
/// from now on ([`take_executions`] reads them), or stops recording.
pub fn record_executions(on: bool) {
    RECORDING.store(on, Ordering::SeqCst);
}

/// The executions recorded since the last call (key, candidate index), in order.
pub fn take_executions() -> Vec<(String, usize)> {
    core::mem::take(&mut *EXECUTIONS.lock())
}

pub(crate) fn record(key: &dyn core::fmt::Display, index: usize) {
    if RECORDING.load(Ordering::SeqCst) {
        EXECUTIONS.lock().push((alloc::format!("{key}"), index));
    }
}

/// Waits a moment before looking at a pending key again.
pub(crate) fn wait_a_moment() {
    #[cfg(feature = "std")]
    std::thread::sleep(core::time::Duration::from_micros(200));
    #[cfg(not(feature = "std"))]
    core::hint::spin_loop();
}
