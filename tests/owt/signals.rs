//! owt deletes only what it wrote, and leaves nothing of its own behind when interrupted
//! (issue 39 point 8): a SIGINT or SIGTERM in the middle of an import's, an export's or a
//! training run's write removes the write's temporary and the writer's lock, and the process
//! still ends by that signal. (They stayed, up to a whole exported file, until a later write
//! to the same place.) A debug build pauses inside the write when told (`OWT_FAULT`).

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::faults::{ok, train, train_args};
use crate::writers::{import_args, torchvision_file};

/// Runs `owt args` until it says it is inside a write, then sends it `signal`: the signal
/// that ended it.
fn interrupted_in_write(args: &[String], signal: i32) -> Option<i32> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_owt"))
        .args(args)
        .env("OWT_FAULT", "pause-in-write")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run owt");
    let mut said = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        said += &line;
        said.push('\n');
        if line.starts_with("pausing in the write of") {
            // SAFETY: kill(2) on the child's pid.
            unsafe {
                libc::kill(child.id() as i32, signal);
            }
            break;
        }
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "owt {args:?} was not interrupted: {said}");
    status.signal()
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
