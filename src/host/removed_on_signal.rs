//! What owt removes when it is interrupted: a SIGINT (Ctrl-C), SIGTERM (a job's end, `kill`)
//! or SIGHUP (a closed terminal) in the middle of a write would otherwise leave the write's
//! temporary (up to a whole checkpoint or exported file) and its writer's lock file behind.
//! Each is registered while it exists ([`RemovedOnSignal`]); the handler unlinks what is
//! registered, then lets the signal end the process as it would have (so the parent still
//! sees death by that signal).
//!
//! The handler may only call what is safe in a signal handler: it reads the registered paths
//! from a fixed table of atomic pointers (C strings made when they were registered) and calls
//! `unlink`, `signal` and `raise`.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Paths removed on a signal, at most this many at once (a command writes one file at a time
/// and holds one or two locks); beyond it a path is simply not removed.
const SLOTS: usize = 64;

static PATHS: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// The signals that end owt with its registered files removed.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Installs the handler (once, at start-up).
pub fn install() {
    for sig in SIGNALS {
        // SAFETY: `on_signal` only makes async-signal-safe calls (see the module's doc).
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    for slot in &PATHS {
        let path = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: a NUL-terminated string registered by `RemovedOnSignal::new`, never
            // freed while registered (whoever swaps it out owns it, and this process ends).
            unsafe {
                libc::unlink(path);
            }
        }
    }
    // SAFETY: restoring the default disposition and raising the signal again are
    // async-signal-safe; the process then ends as the signal would have ended it.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// A file removed if a signal ends the process while this is held (dropping it forgets the
/// file, which is then its owner's to keep or remove).
#[derive(Debug)]
pub struct RemovedOnSignal {
    slot: Option<usize>,
}

impl RemovedOnSignal {
    /// Registers `path` (made absolute, so a later change of directory does not matter).
    pub fn new(path: &Path) -> Self {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return Self { slot: None } };
        let raw = c.into_raw();
        for (i, slot) in PATHS.iter().enumerate() {
            if slot.compare_exchange(std::ptr::null_mut(), raw, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                return Self { slot: Some(i) };
            }
        }
        // SAFETY: `raw` came from `into_raw` above and was never shared.
        drop(unsafe { CString::from_raw(raw) });
        Self { slot: None }
    }
}

impl Drop for RemovedOnSignal {
    fn drop(&mut self) {
        let Some(i) = self.slot else { return };
        let raw = PATHS[i].swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !raw.is_null() {
            // SAFETY: made by `into_raw` in `new`; swapped out here, so no one else has it.
            drop(unsafe { CString::from_raw(raw) });
        }
    }
}
