//! What owt removes when it is interrupted: a SIGINT (Ctrl-C), SIGTERM (a job's end, `kill`)
//! or SIGHUP (a closed terminal) in the middle of a write would otherwise leave the write's
//! temporary (up to a whole checkpoint or exported file) and its writer's lock file behind.
//! Each is registered while it exists ([`RemovedOnSignal`]); the handler unlinks what is
//! registered, then lets the signal end the process as it would have (so the parent still
//! sees death by that signal). A directory being filled (`owt prepare`'s packed copy, up to
//! hundreds of GB) is registered as a tree ([`RemovedOnSignal::tree`]) and removed with all
//! it holds, before the files and locks.
//!
//! The handler may only call what is safe in a signal handler: it reads the registered paths
//! from fixed tables of atomic pointers (C strings made when they were registered) and calls
//! `unlink`, `signal` and `raise`; a tree is walked with `openat`, `getdents64` (into a
//! buffer on the stack), `unlinkat` and `close`, which allocate nothing.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Paths removed on a signal, at most this many at once (a command writes one file at a time
/// and holds one or two locks); beyond it a path is simply not removed.
const SLOTS: usize = 64;

static PATHS: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Directories removed with what they hold on a signal, at most this many at once.
const TREE_SLOTS: usize = 4;

static TREES: [AtomicPtr<libc::c_char>; TREE_SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; TREE_SLOTS];

/// How deep a registered tree is walked (a packed copy is two levels: split, then shards).
const TREE_DEPTH: usize = 8;

/// Passes over a tree: files made by other threads while the handler walks it are removed by
/// the next pass.
const TREE_PASSES: usize = 4;

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
    for slot in &TREES {
        let path = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !path.is_null() {
            for _ in 0..TREE_PASSES {
                // SAFETY: as for the files below; `remove_tree` only makes async-signal-safe
                // calls.
                if unsafe { remove_tree(libc::AT_FDCWD, path, TREE_DEPTH) } {
                    break;
                }
            }
        }
    }
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

/// Removes the entry `name` of the directory `parent` (a descriptor, or `AT_FDCWD` for an
/// absolute `name`) and, if it is a directory, everything in it down to `depth` levels;
/// whether it is gone. Allocates nothing: the entries are read into a buffer on the stack.
///
/// # Safety
/// `name` must be a NUL-terminated string and `parent` an open directory or `AT_FDCWD`.
#[cfg(target_os = "linux")]
unsafe fn remove_tree(parent: libc::c_int, name: *const libc::c_char, depth: usize) -> bool {
    // SAFETY (this block and the calls below): system calls on descriptors this function
    // opened and names the kernel wrote NUL-terminated into `buf`.
    unsafe {
        if libc::unlinkat(parent, name, 0) == 0 {
            return true;
        }
        let dir = libc::openat(parent, name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC);
        if dir < 0 {
            return false;
        }
        // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
        let mut buf = [0u64; 512];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), std::mem::size_of_val(&buf));
            if n <= 0 {
                break;
            }
            let bytes = buf.as_ptr() as *const u8;
            let mut at = 0usize;
            while at < n as usize {
                let entry = bytes.add(at);
                let reclen = std::ptr::read_unaligned(entry.add(16) as *const u16) as usize;
                let kind = *entry.add(18);
                let child = entry.add(19) as *const libc::c_char;
                let dot = *child == b'.' as libc::c_char;
                let is_self =
                    dot && (*child.add(1) == 0 || (*child.add(1) == b'.' as libc::c_char && *child.add(2) == 0));
                if !is_self {
                    if kind == libc::DT_DIR && depth > 0 {
                        remove_tree(dir, child, depth - 1);
                    } else {
                        libc::unlinkat(dir, child, 0);
                    }
                }
                at += reclen.max(1);
            }
        }
        libc::close(dir);
        libc::unlinkat(parent, name, libc::AT_REMOVEDIR) == 0
    }
}

/// Elsewhere a tree is left to the next run of the command that made it.
#[cfg(not(target_os = "linux"))]
unsafe fn remove_tree(_parent: libc::c_int, _name: *const libc::c_char, _depth: usize) -> bool {
    true
}

/// A file (or, made with [`RemovedOnSignal::tree`], a directory and all it holds) removed if
/// a signal ends the process while this is held (dropping it forgets the path, which is then
/// its owner's to keep or remove).
#[derive(Debug)]
pub struct RemovedOnSignal {
    slot: Option<(&'static [AtomicPtr<libc::c_char>], usize)>,
}

impl RemovedOnSignal {
    /// Registers the file `path` (made absolute, so a later change of directory does not
    /// matter).
    pub fn new(path: &Path) -> Self {
        Self::register(&PATHS, path)
    }

    /// Registers the directory `path`, removed with everything in it.
    pub fn tree(path: &Path) -> Self {
        Self::register(&TREES, path)
    }

    fn register(table: &'static [AtomicPtr<libc::c_char>], path: &Path) -> Self {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return Self { slot: None } };
        let raw = c.into_raw();
        for (i, slot) in table.iter().enumerate() {
            if slot.compare_exchange(std::ptr::null_mut(), raw, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                return Self { slot: Some((table, i)) };
            }
        }
        // SAFETY: `raw` came from `into_raw` above and was never shared.
        drop(unsafe { CString::from_raw(raw) });
        Self { slot: None }
    }
}

impl Drop for RemovedOnSignal {
    fn drop(&mut self) {
        let Some((table, i)) = self.slot else { return };
        let raw = table[i].swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !raw.is_null() {
            // SAFETY: made by `into_raw` in `new`; swapped out here, so no one else has it.
            drop(unsafe { CString::from_raw(raw) });
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_removed_with_everything_in_it_and_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join(".packed.owt-tmp-1-0123456789abcdef");
        // Two levels as a packed copy has, a third below, a hidden file, a link out of the
        // tree (removed, not followed) and more entries than one read of the directory takes.
        std::fs::create_dir_all(tree.join("train/deeper")).unwrap();
        std::fs::create_dir_all(tree.join("val")).unwrap();
        for i in 0..300 {
            std::fs::write(tree.join(format!("train/shard-{i:05}-with-a-longer-name.bin")), b"x").unwrap();
        }
        std::fs::write(tree.join("train/deeper/.hidden"), b"x").unwrap();
        std::fs::write(tree.join("val/index.json"), b"{}").unwrap();
        let beside = dir.path().join("kept");
        std::fs::create_dir(&beside).unwrap();
        std::fs::write(beside.join("file"), b"mine").unwrap();
        std::os::unix::fs::symlink(&beside, tree.join("val/link")).unwrap();
        let name = CString::new(tree.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated absolute path.
        assert!(unsafe { remove_tree(libc::AT_FDCWD, name.as_ptr(), TREE_DEPTH) });
        assert!(!tree.exists());
        assert_eq!(std::fs::read(beside.join("file")).unwrap(), b"mine");
        // A tree deeper than the walk goes is not removed (and says so).
        std::fs::create_dir_all(tree.join("a/b/c")).unwrap();
        std::fs::write(tree.join("a/b/c/f"), b"x").unwrap();
        // SAFETY: as above.
        assert!(!unsafe { remove_tree(libc::AT_FDCWD, name.as_ptr(), 1) });
        assert!(tree.join("a/b/c/f").exists());
    }
}
