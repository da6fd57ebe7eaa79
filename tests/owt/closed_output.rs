//! A closed or full stdout or stderr never stops a training run or loses an epoch, and the
//! commands that only print end as Unix tools do: quietly on a closed pipe, with an error
//! (not an internal one) on a full disk.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};

/// A pipe whose reading end is already closed: every write to it fails (EPIPE).
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

fn dev_full() -> Stdio {
    Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
}

fn run(args: &[&str], stdout: Stdio, stderr: Stdio) -> Output {
    let cwd = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_owt"))
        .args(args)
        .current_dir(cwd.path())
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .expect("run owt")
}

fn epochs_saved(out: &std::path::Path) -> usize {
    let metrics: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
    metrics.as_array().unwrap().len()
}

#[test]
fn training_goes_on_and_saves_every_epoch_with_stdout_and_stderr_closed_or_full() {
    for (what, stdout, stderr) in [
        ("stdout a closed pipe", closed_pipe(), Stdio::piped()),
        ("stdout and stderr closed pipes", closed_pipe(), closed_pipe()),
        ("stdout and stderr on a full disk", dev_full(), dev_full()),
    ] {
        let out = tempfile::tempdir().unwrap();
        let o = run(
            &[
                "train",
                "--model",
                "alexnet-small",
                "--dataset",
                "synthetic",
                "--limit",
                "64",
                "--batch",
                "32",
                "--epochs",
                "2",
                "--out",
                out.path().to_str().unwrap(),
            ],
            stdout,
            stderr,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{what}: {:?} {err}", o.status);
        assert_eq!(epochs_saved(out.path()), 2, "{what}");
        let left: Vec<String> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{what}: left behind {left:?}");
    }
}

#[test]
fn printing_commands_end_quietly_on_a_closed_pipe_and_say_so_on_a_full_disk() {
    for args in [
        &["plan", "--model", "alexnet-small", "--devices", "2", "--batch", "16", "--json"][..],
        &["info", "--model", "alexnet-owt", "--json"][..],
    ] {
        let o = run(args, closed_pipe(), Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.is_empty(), "{args:?}: {err}");
        assert!(o.status.success() || o.status.signal() == Some(libc::SIGPIPE), "{args:?}: {:?}", o.status);
        let o = run(args, dev_full(), Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("stdout") && err.contains("No space left") && !err.contains("internal"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// Runs owt with standard output a closed descriptor (the shell's `>&-`).
fn run_with_stdout_closed(args: &[&str], cwd: &std::path::Path) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_owt"));
    cmd.args(args).current_dir(cwd).stdin(Stdio::null()).stderr(Stdio::piped());
    // SAFETY: close(2) is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    cmd.output().expect("run owt")
}

#[test]
fn commands_whose_product_is_printed_fail_on_a_closed_stdout_and_training_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let train = [
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "synthetic",
        "--limit",
        "32",
        "--batch",
        "32",
        "--epochs",
        "1",
        "--out",
        run_dir.to_str().unwrap(),
    ];
    // Training's product is its run directory: it goes on and saves.
    let o = run_with_stdout_closed(&train, dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(epochs_saved(&run_dir), 1);
    for (name, args) in [
        ("plan", vec!["plan", "--model", "alexnet-small", "--devices", "2", "--batch", "16"]),
        ("info", vec!["info", "--model", "alexnet-owt"]),
        ("eval", vec!["eval", "--checkpoint", run_dir.to_str().unwrap(), "--dataset", "synthetic"]),
        ("bench", vec!["bench", "--model", "alexnet-small", "--batch", "8", "--steps", "1", "--warmup", "0"]),
    ] {
        let o = run_with_stdout_closed(&args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(
            err.contains("standard output is closed")
                && err.contains(&format!("owt {name}"))
                && !err.contains("internal"),
            "{name}: {err}"
        );
        // With an open standard output the same command succeeds (the closed one was the cause).
        let o = Command::new(env!("CARGO_BIN_EXE_owt")).args(&args).current_dir(dir.path()).output().unwrap();
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!o.stdout.is_empty(), "{name} prints its result");
    }
}
