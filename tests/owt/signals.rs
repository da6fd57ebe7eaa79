//! owt deletes only what it wrote, and leaves nothing of its own behind when interrupted
//! (issue 39 point 8): a SIGINT or SIGTERM in the middle of an import's, an export's or a
//! training run's write removes the write's temporary and the writer's lock, and the process
//! still ends by that signal. (They stayed, up to a whole exported file, until a later write
//! to the same place.) A debug build pauses inside the write when told (`OWT_FAULT`).
//!
//! `owt prepare` the same (issue 60 point 3): interrupted, its temporary copy goes with every
//! shard in it; killed outright, the next prepare removes it and names it; it removes nothing
//! that lacks owt's token, and it and a `train` of the same `--out` exclude each other.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::faults::{ok, train, train_args};
use crate::writers::{import_args, torchvision_file};

/// Runs `owt args` until it says it is inside a write, then sends it `signal`: the signal
/// that ended it.
fn interrupted_in_write(args: &[String], signal: i32) -> Option<i32> {
    paused_in_write(args).end(signal)
}

/// An owt paused inside a write (`OWT_FAULT=pause-in-write`) until it is sent a signal.
struct Paused {
    child: std::process::Child,
    /// What it said up to the pause, with the temporary it is writing.
    said: String,
}

impl Paused {
    /// Sends `signal`: the signal that ended the process.
    fn end(mut self, signal: i32) -> Option<i32> {
        // SAFETY: kill(2) on the child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
        let status = self.child.wait().unwrap();
        assert!(!status.success(), "owt was not interrupted: {}", self.said);
        status.signal()
    }
}

/// Starts `owt args` and waits until it pauses inside a write.
fn paused_in_write(args: &[String]) -> Paused {
    let mut child = Command::new(env!("CARGO_BIN_EXE_owt"))
        .args(args)
        .env("OWT_FAULT", "pause-in-write")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run owt");
    let mut said = String::new();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said += &line;
        said.push('\n');
        if line.starts_with("pausing in the write of") {
            // What it says later is read (and dropped) on a thread, so it never blocks on a
            // full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return Paused { child, said };
        }
    }
    panic!("owt {args:?} ended without pausing: {said}");
}

/// The names in `dir` that are owt's temporaries or locks.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("owt-tmp-") || n.ends_with(".lock"))
        .collect()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[test]
fn a_signal_during_a_write_removes_its_temporary_and_its_lock() {
    let dir = tempfile::tempdir().unwrap();
    let file = torchvision_file(dir.path());
    // Import of a torchvision file into a new run directory, SIGINT (Ctrl-C).
    let imported = dir.path().join("imported");
    let import = import_args(&file, &imported);
    assert_eq!(interrupted_in_write(&import, libc::SIGINT), Some(libc::SIGINT));
    assert!(!imported.join("checkpoint.owt").exists(), "no half checkpoint");
    assert_eq!(leftovers(&imported), Vec::<String>::new(), "import left its temporary or lock");
    ok(&Command::new(env!("CARGO_BIN_EXE_owt")).args(&import).output().unwrap());
    // Export (a file and its lock beside it), SIGTERM.
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    let out = exports.join("w.safetensors");
    let export = strings(&[
        "export",
        "--checkpoint",
        imported.to_str().unwrap(),
        "--to",
        "torchvision",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(interrupted_in_write(&export, libc::SIGTERM), Some(libc::SIGTERM));
    assert!(!out.exists(), "no half export");
    assert_eq!(leftovers(&exports), Vec::<String>::new(), "export left its temporary or lock");
    // The export runs to its end uninterrupted, into the same place.
    ok(&Command::new(env!("CARGO_BIN_EXE_owt")).args(&export).output().unwrap());
    // A resumed run interrupted while it writes its checkpoint: the last one is kept whole.
    let run = dir.path().join("run");
    ok(&train(&run, &[]));
    let checkpoint = std::fs::read(run.join("checkpoint.owt")).unwrap();
    let resume = train_args(&run, &["--resume", "--epochs", "2"]);
    assert_eq!(interrupted_in_write(&resume, libc::SIGTERM), Some(libc::SIGTERM));
    assert_eq!(std::fs::read(run.join("checkpoint.owt")).unwrap(), checkpoint, "the last checkpoint is kept");
    assert_eq!(leftovers(&run), Vec::<String>::new(), "train left its temporary or lock");
    ok(&train(&run, &["--resume", "--epochs", "2"]));
}

/// Everything under `dir`, as paths relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            all.push(e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    all.sort();
    all
}

#[test]
fn an_interrupted_prepare_leaves_nothing_and_a_killed_ones_copy_is_removed_by_the_next() {
    let data = tempfile::tempdir().unwrap();
    crate::jpeg_pipeline::jpeg_folder(data.path(), 6, 2);
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("packed");
    let prepare = strings(&[
        "prepare",
        "--data",
        data.path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--side",
        "36",
        "--shard-mib",
        "1",
        "--workers",
        "2",
    ]);
    // A user's directories named as owt's temporaries once were, or almost: never removed.
    let theirs = [".packed.owt-tmp-backup", ".packed.owt-tmp-123", ".packed.owt-tmp-123-notatoken"];
    for name in theirs {
        std::fs::create_dir(work.path().join(name)).unwrap();
        std::fs::write(work.path().join(name).join("keep"), b"mine").unwrap();
    }
    let before = tree(work.path());
    // Paused after its first split is packed: SIGINT and SIGTERM each remove the copy with
    // its shards, and the lock.
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let paused = paused_in_write(&prepare);
        let copy = paused.said.lines().last().unwrap().trim_start_matches("pausing in the write of ").to_string();
        assert!(Path::new(&copy).join("train/index.json").exists(), "{copy}: the first split is written");
        assert!(Path::new(&copy).join("train/shard-00000.bin").exists());
        assert_eq!(paused.end(signal), Some(signal));
        assert_eq!(tree(work.path()), before, "signal {signal} left the copy or the lock");
    }
    // While a prepare writes --out, a train of the same --out is refused naming it (and leaves
    // no directory); killed outright (SIGKILL), the prepare leaves its copy.
    let paused = paused_in_write(&prepare);
    let copy = paused.said.lines().last().unwrap().trim_start_matches("pausing in the write of ").to_string();
    let refused = train(&out, &[]);
    let said = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("is being written by `owt prepare`"), "{said}");
    assert!(!out.exists(), "the refused train removed the directory it made");
    assert_eq!(paused.end(libc::SIGKILL), Some(libc::SIGKILL));
    assert!(Path::new(&copy).join("train/shard-00000.bin").exists(), "SIGKILL leaves the copy");
    // The next prepare removes it, says so naming it, and keeps the user's directories.
    let o = Command::new(env!("CARGO_BIN_EXE_owt")).args(&prepare).output().unwrap();
    ok(&o);
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(said.contains(&format!("removed {copy}: the unfinished copy of a prepare")), "{said}");
    assert!(!Path::new(&copy).exists());
    for name in theirs {
        assert_eq!(std::fs::read(work.path().join(name).join("keep")).unwrap(), b"mine", "{name} kept");
    }
    assert!(out.join("train/index.json").exists() && out.join("val/index.json").exists());
    // A train writing a run directory: a prepare of it is refused naming the train.
    let run = work.path().join("run");
    ok(&train(&run, &[]));
    let writing = paused_in_write(&train_args(&run, &["--resume", "--epochs", "2"]));
    let o = Command::new(env!("CARGO_BIN_EXE_owt"))
        .args(["prepare", "--data", data.path().to_str().unwrap(), "--out", run.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(said.contains("is being written by `owt train`"), "{said}");
    assert_eq!(writing.end(libc::SIGTERM), Some(libc::SIGTERM));
    let locks: Vec<String> = leftovers(work.path()).into_iter().filter(|n| n.ends_with(".lock")).collect();
    assert_eq!(locks, Vec::<String>::new(), "no lock left beside the outputs");
}
