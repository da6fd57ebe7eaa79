//! The ways a user could lose work or get a wrong answer with exit code 0, each tried through
//! the binary: a bad `--out`, a run over an existing checkpoint, damaged and truncated
//! checkpoints, divergence, undecodable image folders, plans and sizes that cannot work,
//! resumes with defaults written out, stale temporary files, and `eval` on a checkpoint file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn owt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_owt")).args(args).output().expect("run owt")
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts a failed run whose stderr is one line holding every needle, with no panic.
pub(crate) fn one_line_error(o: &Output, needles: &[&str]) -> String {
    let err = stderr(o);
    assert!(!o.status.success(), "expected a failure, got success; stdout: {}; stderr: {err}", stdout(o));
    assert!(!err.contains("panicked") && !err.contains("internal") && !err.contains("RUST_BACKTRACE"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {err}");
    for n in needles {
        assert!(lines[0].contains(n), "{n:?} not in: {}", lines[0]);
    }
    lines[0].to_string()
}

/// Asserts a run that started (it printed what it trains) and then failed, with no panic, in
/// an error line holding every needle, and no result.
fn failed_run(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected a failure; stderr: {err}");
    assert!(!err.contains("panicked") && !err.contains("internal"), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    for n in needles {
        assert!(errors[0].contains(n), "{n:?} not in: {}", errors[0]);
    }
    assert!(!stdout(o).contains("final test accuracy"), "{}", stdout(o));
}

pub(crate) fn ok(o: &Output) {
    assert!(o.status.success(), "stdout: {}; stderr: {}", stdout(o), stderr(o));
}

/// The flags of a tiny synthetic run.
const TINY: [(&str, &str); 6] = [
    ("--model", "alexnet-small"),
    ("--dataset", "synthetic"),
    ("--limit", "8"),
    ("--batch", "4"),
    ("--epochs", "1"),
    ("--seed", "3"),
];

/// Flags without a value.
const SWITCHES: [&str; 2] = ["--resume", "--overwrite"];

/// `owt train` of a tiny synthetic run into `out`; `extra` flags replace the tiny run's.
pub(crate) fn train(out: &Path, extra: &[&str]) -> Output {
    let args = train_args(out, extra);
    owt(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The arguments of [`train`].
pub(crate) fn train_args(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut pairs: Vec<(String, Option<String>)> =
        TINY.iter().map(|(f, v)| (f.to_string(), Some(v.to_string()))).collect();
    let mut rest = extra.iter();
    while let Some(flag) = rest.next() {
        let value = if SWITCHES.contains(flag) { None } else { rest.next().map(|v| v.to_string()) };
        match pairs.iter_mut().find(|(f, _)| f == flag) {
            Some(pair) => pair.1 = value,
            None => pairs.push((flag.to_string(), value)),
        }
    }
    let mut args = vec!["train".to_string(), "--out".to_string(), out.to_str().unwrap().to_string()];
    for (flag, value) in pairs {
        args.push(flag);
        args.extend(value);
    }
    args
}

fn eval(checkpoint: &Path) -> Output {
    owt(&["eval", "--checkpoint", checkpoint.to_str().unwrap(), "--dataset", "synthetic"])
}

#[test]
fn a_bad_out_fails_before_any_data_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, b"x").unwrap();
    // The dataset is missing too: the --out error must come first.
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "mnist",
        "--data",
        "/nonexistent",
        "--out",
        file.to_str().unwrap(),
    ]);
    one_line_error(&o, &["--out", "afile", "is a file"]);
    let o = train(Path::new("/proc/owt-cannot-exist/run"), &[]);
    one_line_error(&o, &["--out /proc/owt-cannot-exist/run", "cannot create"]);
    let o = train(&file.join("below"), &[]);
    one_line_error(&o, &["--out", "cannot create"]);
}

#[test]
fn a_run_does_not_silently_replace_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    ok(&train(dir.path(), &[]));
    let before = std::fs::read(dir.path().join("checkpoint.owt")).unwrap();
    let o = train(dir.path(), &["--lr", "0.02"]);
    one_line_error(&o, &["already holds a checkpoint of alexnet-small", "--resume", "--overwrite"]);
    assert_eq!(std::fs::read(dir.path().join("checkpoint.owt")).unwrap(), before, "untouched");
    ok(&train(dir.path(), &["--lr", "0.02", "--overwrite"]));
    assert_ne!(std::fs::read(dir.path().join("checkpoint.owt")).unwrap(), before, "replaced");
    let o = train(dir.path(), &["--resume", "--overwrite"]);
    assert!(!o.status.success() && stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

/// A trained checkpoint's bytes and the byte offsets where its sections start.
fn trained_checkpoint() -> (tempfile::TempDir, Vec<u8>, [usize; 4]) {
    let dir = tempfile::tempdir().unwrap();
    ok(&train(dir.path(), &[]));
    let bytes = std::fs::read(dir.path().join("checkpoint.owt")).unwrap();
    assert_eq!(&bytes[..8], b"OWTCKPT2");
    let len = |i: usize| u64::from_le_bytes(bytes[8 + 12 * i..16 + 12 * i].try_into().unwrap()) as usize;
    let state = 48;
    let model = state + len(0);
    let optimizer = model + len(1);
    assert_eq!(optimizer + len(2), bytes.len());
    (dir, bytes, [0, state, model, optimizer])
}

#[test]
fn damaged_or_truncated_checkpoints_are_refused_naming_the_section() {
    let (dir, bytes, [_, state, model, optimizer]) = trained_checkpoint();
    let path = dir.path().join("checkpoint.owt");
    ok(&eval(dir.path()));
    // Flipped bytes in each section, including 400 in the weights.
    for (at, count, section) in
        [(10, 1, "header"), (state + 3, 1, "state"), (model + 100, 400, "model"), (optimizer + 50, 8, "optimizer")]
    {
        let mut damaged = bytes.clone();
        for b in &mut damaged[at..at + count] {
            *b ^= 0x5a;
        }
        std::fs::write(&path, &damaged).unwrap();
        let o = eval(dir.path());
        one_line_error(&o, &["is damaged", section]);
        assert!(!stdout(&o).contains("accuracy"), "a damaged checkpoint was evaluated");
        // Resuming reads it too.
        let o = train(dir.path(), &["--epochs", "2", "--resume"]);
        one_line_error(&o, &["is damaged", section]);
    }
    // Truncated anywhere: inside the magic, the header, each section, one byte short.
    for (cut, section) in [
        (0, "header"),
        (5, "header"),
        (30, "header"),
        (state + 2, "state"),
        (model + 10, "model"),
        (optimizer + 1, "optimizer"),
        (bytes.len() - 1, "optimizer"),
    ] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let o = eval(dir.path());
        one_line_error(&o, &["truncated", section]);
    }
    // Bytes appended after the last section.
    std::fs::write(&path, [&bytes[..], b"junk"].concat()).unwrap();
    one_line_error(&eval(dir.path()), &["unexpected bytes"]);
    // A newer format is named as such.
    let mut newer = bytes.clone();
    newer[7] = b'9';
    std::fs::write(&path, &newer).unwrap();
    one_line_error(&eval(dir.path()), &["format 9", "formats 1 and 2"]);
}

#[test]
fn checkpoints_from_before_checksums_still_load() {
    let (dir, bytes, [_, state, model, optimizer]) = trained_checkpoint();
    // Format 1: the magic, then each section as length + bytes.
    let mut v1 = b"OWTCKPT1".to_vec();
    for (a, b) in [(state, model), (model, optimizer), (optimizer, bytes.len())] {
        v1.extend_from_slice(&((b - a) as u64).to_le_bytes());
        v1.extend_from_slice(&bytes[a..b]);
    }
    let before = stdout(&eval(dir.path()));
    std::fs::write(dir.path().join("checkpoint.owt"), &v1).unwrap();
    let o = eval(dir.path());
    ok(&o);
    assert_eq!(stdout(&o), before, "the same numbers from format 1");
    ok(&train(dir.path(), &["--epochs", "2", "--resume"]));
}

#[test]
fn divergence_names_lr_and_weight_decay_and_keeps_the_last_good_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    ok(&train(dir.path(), &[]));
    let good = std::fs::read(dir.path().join("checkpoint.owt")).unwrap();
    let o = train(dir.path(), &["--lr", "5", "--overwrite", "--limit", "64", "--batch", "8"]);
    failed_run(&o, &["diverged", "--lr (got 5)", "--weight-decay (got 0.0005)"]);
    assert_eq!(std::fs::read(dir.path().join("checkpoint.owt")).unwrap(), good, "the last good checkpoint is kept");
    let o = train(dir.path(), &["--weight-decay", "1e30", "--overwrite", "--limit", "64", "--batch", "8"]);
    failed_run(&o, &["diverged", "--weight-decay (got 1000000000000000000000000000000)"]);
}

fn write_png(path: &Path, shade: u8) {
    image::GrayImage::from_fn(12, 12, |x, _| image::Luma([shade.wrapping_add(x as u8 * 9)])).save(path).unwrap();
}

/// A folder dataset with `good` decodable and `bad` undecodable images per split, 2 classes.
fn folder_dataset(root: &Path, splits: &[&str], good: usize, bad: usize) {
    for split in splits {
        for (class, shade) in [("a", 20u8), ("b", 200)] {
            let dir = root.join(split).join(class);
            std::fs::create_dir_all(&dir).unwrap();
            for i in 0..good {
                write_png(&dir.join(format!("{i}.png")), shade);
            }
            for i in 0..bad {
                std::fs::write(dir.join(format!("broken{i}.jpg")), b"not a jpeg at all").unwrap();
            }
        }
    }
}

#[test]
fn image_folders_refuse_many_undecodable_files_and_warn_about_a_few() {
    let root = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let folder = |root: &Path, extra: &[&str]| {
        let mut args = vec![
            "train",
            "--model",
            "alexnet-small",
            "--dataset",
            "folder",
            "--data",
            root.to_str().unwrap(),
            "--epochs",
            "1",
            "--batch",
            "8",
            "--out",
            out.path().to_str().unwrap(),
            "--overwrite",
        ];
        args.extend(extra);
        owt(&args)
    };
    folder_dataset(root.path(), &["train", "val"], 0, 3);
    let e = one_line_error(&folder(root.path(), &[]), &["6 of 6 images", "cannot be decoded", "broken0.jpg"]);
    assert!(e.contains("more than 1%"), "{e}");
    // 1 in 101 per split: trained on the 100 good ones, with one warning line per split.
    let few = tempfile::tempdir().unwrap();
    folder_dataset(few.path(), &["train", "val"], 50, 0);
    std::fs::write(few.path().join("train/a/broken.jpg"), b"junk").unwrap();
    let o = folder(few.path(), &[]);
    ok(&o);
    let err = stderr(&o);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("1 of 101") && warnings[0].contains("left out"), "{warnings:?}");
    // Evaluation needs only the held-out split.
    let val_only = tempfile::tempdir().unwrap();
    folder_dataset(val_only.path(), &["val"], 4, 0);
    let o = owt(&[
        "eval",
        "--checkpoint",
        out.path().to_str().unwrap(),
        "--dataset",
        "folder",
        "--data",
        val_only.path().to_str().unwrap(),
    ]);
    ok(&o);
    assert!(stdout(&o).contains("(8 images)"), "{}", stdout(&o));
}

/// A PNG whose header decodes but whose pixel data does not: the first `keep` bytes of a
/// good one (signature and IHDR, part of IDAT).
fn truncated_png(path: &Path, shade: u8) {
    write_png(path, shade);
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..45]).unwrap();
}

/// Files whose pixels fail (their headers pass the check at open) are never trained on as
/// blank images: beyond 1% of the split the run stops in one line naming them; the eval of a
/// split like it says the same.
#[test]
fn images_whose_pixels_fail_stop_a_run_beyond_one_percent() {
    let root = tempfile::tempdir().unwrap();
    folder_dataset(root.path(), &["train", "val"], 20, 0);
    for i in 0..5 {
        truncated_png(&root.path().join(format!("train/b/{i}.png")), 200);
    }
    let runs = tempfile::tempdir().unwrap(); // beside the data: a run inside it is refused
    let out = runs.path().join("run");
    let data = root.path().to_str().unwrap();
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "folder",
        "--data",
        data,
        "--epochs",
        "1",
        "--batch",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]);
    failed_run(&o, &["of 40 images", "found while reading their pixels", "more than 1%"]);
    assert!(!out.join("checkpoint.owt").exists(), "nothing was written from the blank-free epoch that did not end");
    let warnings = stderr(&o).lines().filter(|l| l.starts_with("warning: cannot decode")).count();
    assert!((1..=5).contains(&warnings), "{}", stderr(&o));
}

/// Eval refuses what train refuses: held-out classes the network was not trained on (train
/// compares them with train/'s, eval with the checkpoint's), and more classes than the network
/// has outputs (it said "internal: index 10 out of bounds"), in the same words.
#[test]
fn eval_refuses_classes_train_refuses() {
    let root = tempfile::tempdir().unwrap();
    folder_dataset(root.path(), &["train", "val"], 4, 0);
    let runs = tempfile::tempdir().unwrap(); // beside the data: a run inside it is refused
    let run = runs.path().join("run");
    let data = root.path().to_str().unwrap();
    let r = run.to_str().unwrap();
    ok(&owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "folder",
        "--data",
        data,
        "--epochs",
        "1",
        "--batch",
        "4",
        "--out",
        r,
    ]));
    std::fs::rename(root.path().join("val/b"), root.path().join("val/c")).unwrap();
    let train_says = one_line_error(
        &owt(&["train", "--model", "alexnet-small", "--dataset", "folder", "--data", data, "--out", r, "--overwrite"]),
        &["class folders differ"],
    );
    // Evaluation looks the held-out classes up among the checkpoint's (a folder may hold
    // fewer): "c" is not one of them.
    let eval_says = one_line_error(
        &owt(&["eval", "--checkpoint", r, "--dataset", "folder", "--data", data]),
        &["class folders [\"c\"] are not among the 2 classes the checkpoint was trained on", "[\"a\", \"b\"]"],
    );
    assert_ne!(train_says, eval_says);
    let many = root.path().join("many");
    for class in 0..11 {
        let dir = many.join("val").join(format!("c{class:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        write_png(&dir.join("0.png"), 10 * class as u8);
    }
    let o = owt(&["eval", "--checkpoint", r, "--dataset", "folder", "--data", many.to_str().unwrap()]);
    // (A checkpoint from before class names were kept says "the dataset has 11 classes but
    // alexnet-small has 10 outputs".)
    one_line_error(&o, &["class folders [\"c00\", \"c01\"", "are not among the 2 classes"]);
}

#[test]
fn plan_refuses_what_train_refuses_with_the_same_words() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--model", "alexnet-small", "--devices", "16", "--batch", "64"][..],
        &["--model", "alexnet-small", "--devices", "3", "--batch", "64", "--plan", "two-tower"],
        &["--model", "alexnet-small", "--devices", "4", "--batch", "2"],
        &["--model", "alexnet-small", "--towers", "2", "--devices", "4", "--batch", "8", "--plan", "model-parallel"],
    ] {
        let plan = one_line_error(&owt(&[&["plan"][..], args].concat()), &["plan"]);
        let mut train_args =
            vec!["train", "--dataset", "synthetic", "--out", dir.path().to_str().unwrap(), "--overwrite"];
        train_args.extend(args);
        let train = one_line_error(&owt(&train_args), &["plan"]);
        assert_eq!(plan, train, "owt plan and owt train refuse {args:?} alike");
    }
}

#[test]
fn sizes_that_cannot_fit_are_refused_up_front_with_the_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let max = u64::MAX.to_string();
    one_line_error(&owt(&["info", "--model", "alexnet-small", "--classes", &max]), &["too large", "overflow"]);
    one_line_error(
        &owt(&["plan", "--model", "alexnet-small", "--classes", &max, "--devices", "2", "--batch", "8"]),
        &["too large"],
    );
    for (flag, value) in [("--input", "20000"), ("--classes", "100000000000"), ("--batch", "1000000000")] {
        let o = owt(&["train", "--model", "alexnet-small", "--dataset", "synthetic", "--out", out, flag, value]);
        let e = one_line_error(&o, &["needs about", "available"]);
        assert!(e.contains("B ") || e.contains("bytes"), "{e}");
    }
    let o =
        owt(&["train", "--model", "alexnet-small", "--dataset", "synthetic", "--limit", "1000000000000", "--out", out]);
    one_line_error(&o, &["needs about", "of images"]);
}

#[test]
fn resume_compares_effective_settings_in_words() {
    let dir = tempfile::tempdir().unwrap();
    ok(&train(dir.path(), &[]));
    // The defaults written out are the same run.
    ok(&train(dir.path(), &["--epochs", "2", "--resume", "--towers", "2", "--classes", "10", "--channels", "1"]));
    let e = one_line_error(
        &train(dir.path(), &["--epochs", "3", "--resume", "--lr", "0.1"]),
        &["cannot resume", "--lr 0.1", "--lr 0.01"],
    );
    assert!(!e.contains('{') && !e.contains('"'), "no JSON: {e}");
    one_line_error(&train(dir.path(), &["--epochs", "3", "--resume", "--towers", "1"]), &["--towers 1", "--towers 2"]);
}

#[test]
fn a_killed_writes_temporary_file_is_removed_and_eval_takes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    ok(&train(dir.path(), &[]));
    // What a SIGKILL during the write leaves: a temporary of a process that is gone.
    let stale: PathBuf = dir.path().join(".checkpoint.owt.owt-tmp-4294967-0123456789abcdef");
    std::fs::write(&stale, b"half a checkpoint").unwrap();
    // A user's hidden file of the name owt's temporaries once had: theirs, kept (it was
    // deleted whoever wrote it).
    let users: PathBuf = dir.path().join(".checkpoint.owt.tmp-4294967");
    std::fs::write(&users, b"mine").unwrap();
    ok(&train(dir.path(), &["--epochs", "2", "--resume"]));
    assert!(!stale.exists(), "the stale temporary is gone");
    assert_eq!(std::fs::read(&users).unwrap(), b"mine", "the user's file is kept");
    std::fs::remove_file(&users).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp-") || n.contains("probe"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let by_dir = eval(dir.path());
    let by_file = eval(&dir.path().join("checkpoint.owt"));
    ok(&by_file);
    assert_eq!(stdout(&by_file), stdout(&by_dir));
}

#[cfg(feature = "wgpu")]
#[test]
fn no_vulkan_adapter_is_one_line_naming_the_package() {
    let o = Command::new(env!("CARGO_BIN_EXE_owt"))
        .args(["bench", "--model", "alexnet-small", "--batch", "2", "--backend", "wgpu", "--steps", "1"])
        .env("VK_ICD_FILENAMES", "/nonexistent.json")
        .env("VK_DRIVER_FILES", "/nonexistent.json")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(!o.status.success());
    let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("mesa-vulkan-drivers") && !err.contains("RecvError") && !err.contains("panicked"), "{err}");
}

/// Runs owt with `args`, killed after `seconds`: a process that does not exit fails the test
/// instead of hanging the suite.
fn owt_within(args: &[&str], seconds: u64) -> Output {
    owt_within_env(args, &[], seconds)
}

/// [`owt_within`] with environment variables set.
pub(crate) fn owt_within_env(args: &[&str], env: &[(&str, &str)], seconds: u64) -> Output {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_owt"))
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run owt");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed().as_secs() >= seconds {
            child.kill().ok();
            let o = child.wait_with_output().unwrap();
            panic!("owt {args:?} did not exit within {seconds} s; stderr: {}", stderr(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// An import of integer weights (the case that printed "internal" and then spun in the exit)
/// is one line naming the key and the type, and the process exits.
#[test]
fn integer_weights_in_an_import_are_one_line_and_the_process_exits() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ints.safetensors");
    crate::torchvision::one_tensor_file(&file, "features.0.weight", "I64", &[2], &[1u8; 16]);
    let out = dir.path().join("run");
    let o = owt_within(
        &[
            "import",
            "--from",
            "torchvision",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--model",
            "alexnet-owt",
        ],
        120,
    );
    one_line_error(&o, &["features.0.weight", "I64", "floating point"]);
}

/// Every internal error a test can provoke ends the process with 101 after one line per panic,
/// in bounded time. User input no longer reaches one, so the debug build injects them
/// (`OWT_FAULT`, src/host/exit.rs). `burn-store` is the case that spun: a panic inside burn-store's
/// `load_from` frees the module twice while unwinding, and the allocator's exit-time teardown
/// then loops forever on its damaged free list (it did, every time, before owt left with
/// `_exit`).
#[test]
fn every_internal_error_exits() {
    let dir = tempfile::tempdir().unwrap();
    let ints = dir.path().join("ints.safetensors");
    crate::torchvision::one_tensor_file(
        &ints,
        "features.0.weight",
        "I64",
        &[64, 3, 11, 11],
        &vec![1u8; 8 * 64 * 3 * 121],
    );
    for (fault, panics) in [("panic", 1), ("thread", 2), ("burn-dtype", 1), ("burn-store", 1)] {
        let env = [("OWT_FAULT", fault), ("OWT_FAULT_FILE", ints.to_str().unwrap())];
        let o = owt_within_env(&["info", "--model", "alexnet-small"], &env, 60);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(101), "{fault}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), panics, "{fault}: {err}");
        assert!(lines.iter().all(|l| l.starts_with("error: internal: ")), "{fault}: {err}");
        assert!(stdout(&o).is_empty(), "{fault}: the command ran on: {}", stdout(&o));
    }
    // The exits of errors and of success leave through the same door, output flushed.
    let o = owt_within(&["info", "--model", "alexnet-small", "--json"], 60);
    ok(&o);
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("the whole JSON arrives");
    assert!(json.is_object() || json.is_array());
}

/// A checkpoint whose weights hold NaN (written by hand here, as an edited or foreign file
/// would be) is refused by eval and by a resume, naming the tensor; eval never prints NaN.
#[test]
fn checkpoints_with_non_finite_weights_are_refused_by_eval_and_resume() {
    use burn::backend::Flex;
    use burn::module::Module;
    use owt::train::checkpoint::{record_from_bytes, record_to_bytes, Checkpoint};
    let dir = tempfile::tempdir().unwrap();
    ok(&train(dir.path(), &[]));
    let ckpt = Checkpoint::load(dir.path()).unwrap();
    let device = Default::default();
    let model: owt_models::AlexNet<Flex> = ckpt.state.config.model.architecture().unwrap().try_init(&device).unwrap();
    let mut model = model.load_record(record_from_bytes::<Flex, _>(ckpt.model_bytes(), &device).unwrap());
    model.fc7.weight = model.fc7.weight.map(|w| w.add_scalar(f32::NAN));
    let bytes = record_to_bytes::<Flex, _>(model.into_record()).unwrap();
    Checkpoint::save(dir.path(), &ckpt.state, &bytes, ckpt.optimizer_bytes()).unwrap();
    one_line_error(&eval(dir.path()), &["fc7.weight", "NaN or infinite", "checkpoint.owt"]);
    let o = train(dir.path(), &["--resume", "--epochs", "2"]);
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("fc7.weight") && err.contains("NaN or infinite"), "{err}");
    assert!(!err.contains("learning rate"), "blames the rate: {err}");
}

/// Export is as careful as train: it refuses to replace a file without --overwrite, takes a
/// name at the length limit, and removes its own stale temporary from a killed export.
#[test]
fn export_refuses_to_replace_a_file_and_cleans_up_after_a_killed_export() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(&train(&run, &["--model", "alexnet-owt", "--input", "67"]));
    let export = |out: &Path, extra: &[&str]| {
        let args =
            [
                &[
                    "export",
                    "--checkpoint",
                    run.to_str().unwrap(),
                    "--to",
                    "torchvision",
                    "--out",
                    out.to_str().unwrap(),
                ][..],
                extra,
            ]
            .concat();
        owt(&args)
    };
    let theirs = dir.path().join("theirs.safetensors");
    std::fs::write(&theirs, b"someone else's file").unwrap();
    one_line_error(&export(&theirs, &[]), &["theirs.safetensors", "exists", "--overwrite"]);
    assert_eq!(std::fs::read(&theirs).unwrap(), b"someone else's file");
    ok(&export(&theirs, &["--overwrite"]));
    let folder = dir.path().join("folder.safetensors");
    std::fs::create_dir(&folder).unwrap();
    one_line_error(&export(&folder, &["--overwrite"]), &["a directory"]);
    // A legal name at the limit (255 bytes), and a temporary a killed export left beside it.
    let long = dir.path().join(format!("{}.safetensors", "w".repeat(255 - ".safetensors".len())));
    let stale = dir.path().join(format!(".{}.owt-tmp-4294967-0123456789abcdef", "w".repeat(218)));
    std::fs::write(&stale, b"half an export").unwrap();
    ok(&export(&long, &[]));
    assert!(long.exists() && !stale.exists());
}

/// `owt report` of a run whose rate fell to the smallest an f32 update holds and below (a
/// subnormal rate looped forever in the log-scale axis: drawing such rates is the report's
/// unit test, since `--lr` now refuses them), drawn within a minute, to a picture whose name
/// is at the length limit.
#[test]
fn report_draws_the_smallest_rate_to_a_name_at_the_length_limit() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    one_line_error(&train(&run, &["--lr", "3e-323"]), &["--lr must be in [1.1754943508222875e-38, ", "got 3e-323"]);
    let smallest = (f32::MIN_POSITIVE as f64).to_string();
    ok(&train(&run, &["--lr", &smallest, "--epochs", "2", "--lr-schedule", "step:1"]));
    let name = format!("{}.svg", "r".repeat(255 - ".svg".len()));
    let picture = dir.path().join(&name);
    let o = owt_within(&["report", run.to_str().unwrap(), "--out", picture.to_str().unwrap()], 60);
    ok(&o);
    let svg = std::fs::read_to_string(&picture).unwrap();
    assert!(svg.contains("rate (log scale)"), "1.2e-38 and 1.2e-39 are drawn on a log scale");
}

/// A node of a 2-D mesh run as threads that fails alone (node 0 cannot write metrics.json)
/// ends the job at once with its error, in one error line: the other node stops at its next
/// exchange instead of waiting out the group's timeout, and says nothing of it.
#[test]
fn a_failing_node_of_a_two_dimensional_mesh_ends_the_job_at_once_with_its_error() {
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir(out.path().join("metrics.json")).unwrap();
    let started = std::time::Instant::now();
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "synthetic",
        "--limit",
        "32",
        "--batch",
        "16",
        "--epochs",
        "3",
        "--mesh",
        "2,1",
        "--overwrite",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    failed_run(&o, &["metrics.json"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
}
