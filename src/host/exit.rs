//! Leaving the process: every way out of `owt` (success, an error, a panic) ends here, and
//! ends at once.
//!
//! A normal `exit` runs the C library's exit handlers, among them the allocator's teardown
//! (mimalloc collects every page). A panic inside burn-store's `load_from` (0.21: integer
//! weights read into float parameters) frees the module twice while unwinding: `apply` moves
//! the module out of `&mut self` with `ptr::read`, the mapping panics, and both the moved copy
//! and the caller's are dropped. The double free leaves a cycle in mimalloc's free list, and
//! the teardown then walks it forever: the process printed its error and spun at 100% CPU
//! inside `exit(101)`. Nothing owt needs happens in those handlers (files are written and
//! synced before a command returns; the kernel frees the memory), so the process flushes its
//! standard streams and leaves with `_exit`, which runs none, whatever state the heap is in.

use std::io::Write;

/// Flushes stdout and stderr and ends the process with `code` without running exit handlers.
pub fn now(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` takes no pointers and never returns; skipping the exit handlers is the
    // point (see the module's doc).
    unsafe { libc::_exit(code) }
}

/// A debug build's fault inside a training loop, for the tests of jobs that lose a process:
/// `OWT_FAULT=sigkill:PROCESS:EPOCH:STEP` kills (SIGKILL, no clean-up) process PROCESS of the
/// job when it reaches step STEP (0-based) of epoch EPOCH (1-based). Release builds ignore it.
pub fn step_fault(process: usize, epoch: usize, step: usize) {
    if !cfg!(debug_assertions) {
        return;
    }
    let Ok(fault) = std::env::var("OWT_FAULT") else { return };
    let Some(spec) = fault.strip_prefix("sigkill:") else { return };
    let at: Vec<usize> = spec.split(':').filter_map(|n| n.parse().ok()).collect();
    if at == [process, epoch, step] {
        // SAFETY: kill(2) on this process's own pid; nothing is borrowed.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// A debug build's pause inside an atomic write, for the tests of signals mid-write:
/// `OWT_FAULT=pause-in-write` says "pausing in the write of TMP" on stderr once the
/// temporary `tmp` holds its bytes, and waits a minute. Release builds ignore it.
pub fn write_fault(tmp: &std::path::Path) {
    if !cfg!(debug_assertions) || std::env::var("OWT_FAULT").as_deref() != Ok("pause-in-write") {
        return;
    }
    crate::err_line!("pausing in the write of {}", tmp.display());
    std::thread::sleep(std::time::Duration::from_secs(60));
}

/// The faults a debug build injects when `OWT_FAULT` names one, so tests can provoke the
/// internal errors user input no longer reaches and check that the process still exits.
/// Release builds ignore the variable.
pub fn inject_fault() {
    if !cfg!(debug_assertions) {
        return;
    }
    match std::env::var("OWT_FAULT").as_deref() {
        // A plain panic in the command.
        Ok("panic") => panic!("injected fault: a panic"),
        // Burn's own panic on integer data loaded as floats, after a large allocation: the
        // case whose exit spun in the allocator's teardown.
        Ok("burn-dtype") => {
            use burn::tensor::{Tensor, TensorData};
            let n = 64 * 3 * 11 * 11;
            let data = TensorData::new(vec![1i64; n], [64, 3, 11, 11]);
            let _ = Tensor::<burn::backend::Flex, 4>::from_data(data, (&Default::default(), burn::tensor::DType::I64));
        }
        // Burn's panic inside a state-dict load (integer weights read into float parameters):
        // OWT_FAULT_FILE names a safetensors file, loaded into alexnet-owt.
        Ok("burn-store") => {
            use burn_store::{KeyRemapper, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
            let file = std::env::var("OWT_FAULT_FILE").unwrap_or_default();
            let arch = owt_models::ModelSpec::new(owt_models::ModelKind::AlexNetOwt).architecture().unwrap();
            let mut model = arch.try_init::<burn::backend::Flex>(&Default::default()).unwrap();
            let _ = model.load_from(
                &mut SafetensorsStore::from_file(file)
                    .with_from_adapter(PyTorchToBurnAdapter)
                    .remap(KeyRemapper::from_patterns(vec![(r"^features\.0\.", "conv1.")]).unwrap())
                    .allow_partial(true),
            );
        }
        // A panic on another thread while this one waits for it.
        Ok("thread") => {
            let _ = std::thread::spawn(|| panic!("injected fault: a panic on a worker thread")).join();
            panic!("injected fault: the worker thread panicked");
        }
        _ => {}
    }
}
