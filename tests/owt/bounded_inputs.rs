//! Every file owt reads is a regular file of bounded size, and every count a user gives is
//! checked: FIFOs, devices, directories and files far larger than what they name can hold are
//! one line at once (each command runs under a timeout, so a hang fails the test), and counts
//! near the integer limits are refused rather than overflowing or exhausting memory.

use std::path::Path;
use std::process::Output;

use crate::faults::{ok, one_line_error, owt_within_env, train};

fn owt(args: &[&str]) -> Output {
    owt_within_env(args, &[], 120)
}

/// A FIFO at `path` (no writer ever opens it: a blocking read would wait forever).
fn fifo(path: &Path) {
    assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// `path` made (or grown to) `len` bytes, sparsely (no disk is used); what it held stays.
fn huge(path: &Path, len: u64) {
    std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).unwrap().set_len(len).unwrap();
}

#[test]
fn checkpoints_are_regular_files_of_what_their_network_can_hold() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(&train(&run, &[]));
    let r = run.to_str().unwrap();
    let eval = |checkpoint: &str| owt(&["eval", "--checkpoint", checkpoint, "--dataset", "synthetic"]);
    let pipe = dir.path().join("pipe.owt");
    fifo(&pipe);
    one_line_error(&eval(pipe.to_str().unwrap()), &["pipe.owt", "a FIFO, not a regular file"]);
    one_line_error(&eval("/dev/zero"), &["/dev/zero", "a device"]);
    // A real checkpoint with 50 GB of something after it: refused before reading, by size.
    let grown = dir.path().join("grown.owt");
    std::fs::copy(run.join("checkpoint.owt"), &grown).unwrap();
    huge(&grown, 50 << 30);
    one_line_error(
        &eval(grown.to_str().unwrap()),
        &["more than a checkpoint of alexnet-small (", "parameters) can hold"],
    );
    // A header whose checksum holds but whose state claims 1 TB.
    let bytes = std::fs::read(run.join("checkpoint.owt")).unwrap();
    let mut claims = bytes[..44].to_vec();
    claims[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let crc = crc32fast::hash(&claims);
    claims.extend_from_slice(&crc.to_le_bytes());
    claims.extend_from_slice(&bytes[48..]);
    let liar = dir.path().join("liar.owt");
    std::fs::write(&liar, claims).unwrap();
    one_line_error(
        &eval(liar.to_str().unwrap()),
        &["its state section claims 1099511627776 bytes", "more than a run's state"],
    );
    // Resume reads the same way.
    std::fs::remove_file(run.join("checkpoint.owt")).unwrap();
    fifo(&run.join("checkpoint.owt"));
    one_line_error(&train(&run, &["--resume", "--epochs", "2"]), &["a FIFO, not a regular file"]);
    one_line_error(&eval(r), &["a FIFO, not a regular file"]);
}

#[test]
fn metrics_imports_and_datasets_are_regular_files_of_bounded_size() {
    let dir = tempfile::tempdir().unwrap();
    // metrics.json as a FIFO, and as a file larger than any run's metrics.
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    fifo(&run.join("metrics.json"));
    let picture = dir.path().join("r.svg");
    let report = |run: &Path| owt(&["report", run.to_str().unwrap(), "--out", picture.to_str().unwrap()]);
    one_line_error(&report(&run), &["metrics.json", "a FIFO, not a regular file"]);
    std::fs::remove_file(run.join("metrics.json")).unwrap();
    huge(&run.join("metrics.json"), 8 << 30);
    one_line_error(&report(&run), &["metrics.json", "more than a metrics file can hold"]);
    // Imports: a directory (it said "No such device"), a device, a FIFO, a 1 TB file.
    let out = dir.path().join("imported");
    let import = |file: &Path| {
        owt(&[
            "import",
            "--from",
            "torchvision",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--model",
            "alexnet-owt",
        ])
    };
    one_line_error(&import(dir.path()), &["a directory, not a regular file"]);
    one_line_error(&import(Path::new("/dev/zero")), &["a device, not a regular file"]);
    let pipe = dir.path().join("w.safetensors");
    fifo(&pipe);
    one_line_error(&import(&pipe), &["a FIFO, not a regular file"]);
    let big = dir.path().join("big.safetensors");
    huge(&big, 1 << 40);
    one_line_error(
        &import(&big),
        &["more than a torchvision state dict of alexnet-owt (", "parameters, optimizer state included) can hold"],
    );
    assert!(!out.exists(), "a refused import left its --out behind");
    // MNIST files: a FIFO where the images should be.
    let mnist = dir.path().join("mnist");
    std::fs::create_dir(&mnist).unwrap();
    for name in
        ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
    {
        fifo(&mnist.join(name));
    }
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "mnist",
        "--data",
        mnist.to_str().unwrap(),
        "--out",
        dir.path().join("m").to_str().unwrap(),
    ]);
    one_line_error(&o, &["idx", "a FIFO, not a regular file"]);
}

#[test]
fn image_files_too_large_to_decode_are_left_out_like_undecodable_ones() {
    let root = tempfile::tempdir().unwrap();
    for split in ["train", "val"] {
        for class in ["a", "b"] {
            let dir = root.path().join(split).join(class);
            std::fs::create_dir_all(&dir).unwrap();
            for i in 0..120 {
                image::GrayImage::from_pixel(12, 12, image::Luma([i as u8 * 2]))
                    .save(dir.join(format!("{i}.png")))
                    .unwrap();
            }
        }
    }
    huge(&root.path().join("train/a/huge.png"), 600 << 20);
    // A strip of 1,000,000 x 1 pixels (a 1 KB PNG) would be resized to 28,000,000 x 28.
    image::GrayImage::from_pixel(1_000_000, 1, image::Luma([7])).save(root.path().join("train/b/strip.png")).unwrap();
    // Beside the data, not inside it (a run directory in its data folder is refused).
    let runs = tempfile::tempdir().unwrap();
    let out = runs.path().join("run");
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "folder",
        "--data",
        root.path().to_str().unwrap(),
        "--epochs",
        "1",
        "--batch",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("2 of 242 images") && err.contains("huge.png") && err.contains("more than an image file can hold"),
        "{err}"
    );
    assert!(err.contains("strip.png") && err.contains("1000000 x 1 pixels") && err.contains("64:1"), "{err}");
}

/// A tiny colour run with lighting noise 0.1 into `out`, `epochs` long, with `extra` flags.
fn lit_run(out: &Path, epochs: &str, extra: &[&str]) -> Output {
    let base = ["train", "--model", "alexnet-small", "--channels", "3", "--dataset", "synthetic", "--limit", "32"];
    let out = out.to_str().unwrap();
    owt(&[&base[..], &["--batch", "16", "--lighting", "0.1", "--epochs", epochs, "--out", out], extra].concat())
}

/// `lighting.json` read back on resume goes through the bounded reader: a FIFO there (which a
/// plain read would wait on forever, holding the run's lock) or a file far larger than the
/// components take is one line, and left as it is.
#[test]
fn a_lighting_file_that_is_not_one_is_refused_on_resume() {
    let out = tempfile::tempdir().unwrap();
    let run = |epochs: &str, extra: &[&str]| lit_run(out.path(), epochs, extra);
    ok(&run("1", &[]));
    let lighting = out.path().join("lighting.json");
    std::fs::remove_file(&lighting).unwrap();
    fifo(&lighting);
    one_line_error(&run("2", &["--resume"]), &["lighting.json", "a FIFO, not a regular file"]);
    std::fs::remove_file(&lighting).unwrap();
    huge(&lighting, 2 << 30);
    one_line_error(&run("2", &["--resume"]), &["lighting.json", "more than a lighting file can hold"]);
    assert_eq!(std::fs::metadata(&lighting).unwrap().len(), 2 << 30, "left as it is");
}

/// `lighting.json` is checked on resume as a checkpoint is: an edit (eigenvalues of 1e308,
/// which would train on saturated pixels) is refused naming the file, by its checksum or, in a
/// file without one (from before it was kept), by its bounds or by a fit of the split; a
/// removed file is fitted again, and an intact old file believed once a fit agrees.
#[test]
fn a_lighting_file_edited_after_the_run_stored_it_is_refused_on_resume() {
    let out = tempfile::tempdir().unwrap();
    let run = |epochs: &str, extra: &[&str]| lit_run(out.path(), epochs, extra);
    ok(&run("1", &[]));
    let path = out.path().join("lighting.json");
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(stored["crc32"].as_u64().is_some(), "{stored}");
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = stored.clone();
        f(&mut v);
        std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    };
    let cases: [(&str, &dyn Fn(&mut serde_json::Value), &[&str]); 6] = [
        ("eigenvalue", &|v| v["eigenvalues"][0] = 1e308.into(), &["lighting.json", "changed since the run stored it"]),
        ("images", &|v| v["images"] = 3.into(), &["changed since the run stored it"]),
        (
            "eigenvalue, no checksum",
            &|v| {
                v.as_object_mut().unwrap().remove("crc32");
                v["eigenvalues"][0] = 1e308.into();
            },
            &["lighting.json", "eigenvalues", "from 0 to 0.75"],
        ),
        (
            "noise level, no checksum",
            &|v| {
                v.as_object_mut().unwrap().remove("crc32");
                v["std"] = 0.5.into();
            },
            &["noise level 0.5", "--lighting is 0.1"],
        ),
        (
            "a vector, no checksum",
            &|v| {
                v.as_object_mut().unwrap().remove("crc32");
                v["eigenvectors"][0][0] = 2.0.into();
            },
            &["not orthonormal"],
        ),
        (
            "components swapped, no checksum",
            &|v| {
                v.as_object_mut().unwrap().remove("crc32");
                let (a, b) = (v["eigenvectors"][1].clone(), v["eigenvectors"][2].clone());
                v["eigenvectors"][1] = b;
                v["eigenvectors"][2] = a;
            },
            &["other components than a fit"],
        ),
    ];
    for (what, change, needles) in cases {
        edit(change);
        let o = run("2", &["--resume"]);
        one_line_error(&o, needles);
        assert!(!stderr_of(&o).contains("internal"), "{what}");
    }
    // An intact file without its checksum (an older run's): a fit agrees, and the run goes on.
    edit(&|v| {
        v.as_object_mut().unwrap().remove("crc32");
    });
    ok(&run("2", &["--resume"]));
    // Removed: fitted again, the same components, stored with their checksum.
    std::fs::remove_file(&path).unwrap();
    ok(&run("3", &["--resume"]));
    let again: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(again, stored);
}

fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn counts_near_the_integer_limits_are_refused_in_one_line() {
    let max = u64::MAX.to_string();
    let half = (1u64 << 63).to_string();
    let bench = |extra: &[&str]| owt(&[&["bench", "--model", "alexnet-small"][..], extra].concat());
    one_line_error(&bench(&["--steps", &max]), &["--steps 18446744073709551615", "at most 100000 steps"]);
    one_line_error(
        &bench(&["--warmup", &max, "--steps", "1"]),
        &["--warmup 18446744073709551615", "at most 100000 steps"],
    );
    one_line_error(&bench(&["--steps", &half, "--batch", "4"]), &["at most 100000 steps"]);
    one_line_error(&bench(&["--batch", &half]), &["--batch 9223372036854775808"]);
    // `owt plan` said "internal: capacity overflow" and "attempt to multiply with overflow".
    let plan = |extra: &[&str]| owt(&[&["plan", "--model", "alexnet-owt"][..], extra].concat());
    one_line_error(&plan(&["--devices", &half, "--batch", "128"]), &["a dry run stands for at most 65534 ranks"]);
    // A dry run is held in memory: --devices 4096 grew past 6 GB, --devices 70000 said
    // "internal: Meta: 65535 devices alive at once". (20000 ranks need about 6.6 TB.)
    one_line_error(&plan(&["--devices", "70000", "--batch", "70000"]), &["--devices 70000", "at most 65534 ranks"]);
    one_line_error(
        &plan(&["--devices", "20000", "--batch", "20000"]),
        &["--devices 20000: a dry run of 20000 ranks needs about 6.6 TB", "available"],
    );
    one_line_error(&plan(&["--mesh", "200,100", "--batch", "20000"]), &["--mesh 200,100: a dry run of 20000 ranks"]);
    one_line_error(&plan(&["--devices", "4", "--batch", &max]), &["do not fit in 64 bits"]);
    one_line_error(
        &plan(&["--devices", "4", "--batch", &(1u64 << 33).to_string()]),
        &["the operations of a step do not fit in 64 bits"],
    );
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    one_line_error(&train(&run, &["--epochs", &max]), &["--epochs must be at most 10000", "got 18446744073709551615"]);
    // Every image would have been resized to 100,000 pixels a side (30 GB each).
    one_line_error(&train(&run, &["--resize", "100000"]), &["at most 8192 pixels", "got --resize 100000"]);
    one_line_error(&train(&run, &["--limit", &max]), &["do not fit in 64 bits"]);
    one_line_error(&train(&run, &["--batch", &max]), &["do not fit in 64 bits"]);
    assert!(!run.exists());
    // A resume to fewer epochs than done said "resuming after epoch 3 of 2".
    ok(&train(&run, &["--epochs", "3"]));
    one_line_error(
        &train(&run, &["--resume", "--epochs", "2"]),
        &["--epochs 2: the checkpoint has already done 3 epochs", "--epochs 4"],
    );
    one_line_error(&train(&run, &["--resume", "--epochs", "3"]), &["already done 3 epochs"]);
}

/// `--workers` of 2^62 overflowed a product of it ("attempt to multiply with overflow", exit
/// 101) and `--shard-mib` of 2^44 wrapped to 0 bytes a shard; both are refused at the
/// command line naming the limit, on every command that takes them.
#[test]
fn worker_counts_and_shard_sizes_are_refused_past_their_limits() {
    let refused = |args: &[&str], limit: &str| {
        let o = owt(args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains(limit) && !err.contains("internal") && !err.contains("panicked"), "{args:?}: {err}");
    };
    let huge = (1u64 << 62).to_string();
    let train = ["train", "--model", "alexnet-small", "--dataset", "synthetic", "--workers", &huge];
    refused(&train, "1..=1024");
    refused(&["bench", "--loader", "--dataset", "synthetic", "--workers", &huge], "1..=1024");
    let shard = (1u64 << 44).to_string();
    let prepare = ["prepare", "--data", "/nonexistent", "--out", "/nonexistent/out", "--shard-mib", &shard];
    refused(&prepare, "1..=16777216");
    refused(&[&prepare[..5], &["--workers", &huge]].concat(), "1..=1024");
}
