//! One writer per output: a second train, resume, import or export into an output another
//! process is writing is refused at once, naming that process, and exactly one of two
//! writers started together succeeds; readers (eval, report) go on beside a writer.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use owt::train::writer_lock::{WriterLock, RUN_LOCK_FILE};

use crate::faults::{ok, one_line_error, stderr, train, train_args};

/// Starts `owt` with `args`, its output captured.
fn spawn(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_owt"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run owt")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// Waits for `child` (a minute at most).
fn finish(mut child: Child) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            panic!("owt did not end within a minute: {}", stderr(&child.wait_with_output().unwrap()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits until `path` exists (what a writer's lock file says: it has started writing).
fn wait_for(path: &Path, child: &mut Child) {
    let start = Instant::now();
    while !path.exists() {
        if child.try_wait().unwrap().is_some() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            panic!("the writer ended before taking its lock: {err}");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no lock file within a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A torchvision state dict of alexnet-owt at input side 67 (the file `owt import` reads).
pub(crate) fn torchvision_file(dir: &Path) -> std::path::PathBuf {
    use burn::backend::Flex;
    let model = owt_models::AlexNetOwtConfig::new().with_input(67).init::<Flex>(&Default::default());
    let file = dir.join("alexnet.safetensors");
    std::fs::write(&file, owt_models::torchvision::export_safetensors(&model).unwrap()).unwrap();
    file
}

pub(crate) fn import_args(file: &Path, out: &Path) -> Vec<String> {
    let (f, o) = (file.to_str().unwrap(), out.to_str().unwrap());
    strings(&["import", "--from", "torchvision", f, "--out", o, "--model", "alexnet-owt", "--input", "67"])
}

/// While another process holds a run directory, train, resume and import into it are refused
/// in one line naming that process, and change nothing; eval and report read it meanwhile.
/// Export holds the file it writes the same way.
#[test]
fn a_held_output_refuses_every_other_writer_and_no_reader() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(&train(&run, &[]));
    let before: Vec<_> = ["checkpoint.owt", "metrics.json"].map(|f| std::fs::read(run.join(f)).unwrap()).into();
    // This test process is the other writer: its lock is an OS lock like any owt's.
    let held = WriterLock::run_dir(&run, "train", "test").unwrap();
    let holder = format!("`owt train` (process {})", std::process::id());
    let shown = format!("--out {} is being written by", run.display());
    one_line_error(&train(&run, &["--overwrite"]), &[&shown, &holder]);
    one_line_error(&train(&run, &["--resume", "--epochs", "2"]), &[&shown, &holder]);
    let file = torchvision_file(dir.path());
    let imported = dir.path().join("imported");
    std::fs::create_dir(&imported).unwrap();
    let import_lock = WriterLock::run_dir(&imported, "import", "test").unwrap();
    let o = finish(spawn(&import_args(&file, &imported)));
    one_line_error(&o, &[&format!("--out {} is being written by `owt import`", imported.display())]);
    assert!(!imported.join("checkpoint.owt").exists());
    drop(import_lock);
    let after: Vec<_> = ["checkpoint.owt", "metrics.json"].map(|f| std::fs::read(run.join(f)).unwrap()).into();
    assert!(before == after, "a refused writer changed the run");
    // Readers do not wait for the writer.
    let r = run.to_str().unwrap();
    ok(&finish(spawn(&strings(&["eval", "--checkpoint", r, "--dataset", "synthetic"]))));
    let picture = dir.path().join("r.svg");
    ok(&finish(spawn(&strings(&["report", r, "--out", picture.to_str().unwrap()]))));
    drop(held);
    assert!(!run.join(RUN_LOCK_FILE).exists(), "the lock file goes with the lock");
    // Export: the file being written is held the same way.
    let out = dir.path().join("w.safetensors");
    let export = strings(&["export", "--checkpoint", r, "--to", "torchvision", "--out", out.to_str().unwrap()]);
    let held = WriterLock::file(&out, "export", "test").unwrap();
    one_line_error(&finish(spawn(&export)), &["is being written by `owt export`", &std::process::id().to_string()]);
    assert!(!out.exists());
    drop(held);
}

/// Starts two `owt` processes with `args` together and waits for both: exactly one must
/// succeed, and the other must say why in one line (the first holds the output, or, if the
/// first was already done, its checkpoint is there). The winner, and the loser's message.
fn race(args: &[String], command: &str) -> (Output, String) {
    let (a, b) = (spawn(args), spawn(args));
    let [a, b] = [finish(a), finish(b)];
    assert!(a.status.success() != b.status.success(), "{} | {}", stderr(&a), stderr(&b));
    let (winner, loser) = if a.status.success() { (a, b) } else { (b, a) };
    let holder = format!("is being written by `owt {command}` (process");
    let err = one_line_error(&loser, &[]);
    assert!(err.contains(&holder) || err.contains("already holds a checkpoint"), "{err}");
    (winner, err)
}

/// Two trains started together into one new directory: exactly one succeeds.
#[test]
fn of_two_trains_started_together_exactly_one_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    race(&train_args(&dir.path().join("run"), &["--limit", "64"]), "train");
}

/// A resume into a directory a live run is writing is refused naming the run's process, and
/// the run ends as if alone.
#[test]
fn a_resume_beside_a_live_run_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(&train(&run, &["--limit", "64"]));
    let mut live = spawn(&train_args(&run, &["--resume", "--epochs", "3", "--limit", "64"]));
    wait_for(&run.join(RUN_LOCK_FILE), &mut live);
    let o = train(&run, &["--resume", "--epochs", "4", "--limit", "64"]);
    let still_running = live.try_wait().unwrap().is_none();
    let pid = live.id();
    let live = finish(live);
    ok(&live);
    if still_running {
        one_line_error(&o, &[&format!("is being written by `owt train` (process {pid})")]);
    } else {
        // The live run ended first: this resume then runs after it, never beside it.
        assert!(o.status.success() || stderr(&o).contains("being written"), "{}", stderr(&o));
    }
    let state = owt::train::Checkpoint::read_state(&run).unwrap();
    assert!(state.epochs_done >= 3, "the live run's epochs are kept: {}", state.epochs_done);
}

/// Two imports started together into one directory: exactly one prints "imported".
#[test]
fn of_two_imports_started_together_exactly_one_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let file = torchvision_file(dir.path());
    let (winner, err) = race(&import_args(&file, &dir.path().join("run")), "import");
    assert!(String::from_utf8_lossy(&winner.stdout).contains("imported"));
    assert!(err.contains("--overwrite") || err.contains("being written"), "{err}");
    assert!(!err.contains("--resume"), "import has no --resume: {err}");
}

/// A run refused before it writes anything leaves no directory behind; an import over a run
/// (--overwrite) takes that run's metrics away with its checkpoint, so a report never draws
/// them for the imported model.
#[test]
fn refused_runs_leave_nothing_and_imports_take_the_old_metrics_away() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh");
    let o = train(&fresh, &["--batch", "0"]);
    assert!(!o.status.success());
    let o = train(&fresh, &["--dataset", "mnist", "--data", "/nonexistent"]);
    assert!(!o.status.success());
    assert!(!fresh.exists(), "a refused run left its --out behind");
    // Nor the parents it made for a nested --out; a parent that was there stays.
    let nested = dir.path().join("q").join("r").join("s");
    let o = train(&nested, &["--dataset", "mnist", "--data", "/nonexistent"]);
    assert!(!o.status.success());
    assert!(!dir.path().join("q").exists(), "a refused run left the parents of its --out behind");
    assert!(dir.path().exists());
    let run = dir.path().join("run");
    ok(&train(&run, &[]));
    let file = torchvision_file(dir.path());
    let o = finish(spawn(&import_args(&file, &run)));
    one_line_error(&o, &["already holds a checkpoint", "--overwrite"]);
    assert!(!stderr(&o).contains("--resume"), "{}", stderr(&o));
    let mut args = import_args(&file, &run);
    args.push("--overwrite".into());
    ok(&finish(spawn(&args)));
    assert!(!run.join("metrics.json").exists(), "the replaced run's metrics stayed");
    let r = run.to_str().unwrap();
    let o = finish(spawn(&strings(&["report", r, "--out", dir.path().join("r.svg").to_str().unwrap()])));
    one_line_error(&o, &["no finished epoch"]);
    // A metrics.json of another run put beside a checkpoint is named as such.
    let other = dir.path().join("other");
    ok(&train(&other, &["--seed", "9"]));
    std::fs::copy(other.join("metrics.json"), run.join("metrics.json")).unwrap();
    let o = finish(spawn(&strings(&["report", r, "--out", dir.path().join("r.svg").to_str().unwrap()])));
    one_line_error(&o, &["metrics.json does not belong to the run in", "alexnet-owt after 0 epochs", "imported from"]);
}
