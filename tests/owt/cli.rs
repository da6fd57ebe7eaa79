//! The `owt` binary: profiles, a train/eval round trip, and one-line errors for bad input.

use std::path::Path;
use std::process::{Command, Output};

use owt::data::{encode_idx, IdxArray};
use owt_models::{ModelKind, ModelSpec};

/// Runs `owt` in a directory of its own: a command without `--out` writes `runs/latest` there,
/// not into the checkout beside another test's (one writer per run directory refuses that).
pub(crate) fn owt(args: &[&str]) -> Output {
    let cwd = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_owt")).args(args).current_dir(cwd.path()).output().expect("run owt")
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a failed run with exactly one error line that contains every `needle`, and no panic.
fn assert_one_line_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got success; stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace") && !err.contains("internal"),
        "panic output: {err}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {err}");
    for n in needles {
        assert!(lines[0].contains(n), "'{n}' not in: {}", lines[0]);
    }
}

/// The `metrics.json` a run wrote into `out`.
fn metrics_json(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap()
}

/// An MNIST-layout directory of 28x28 images: `train` and `test` images whose class is the
/// brightness band, so a model can learn something.
fn write_fixture(dir: &Path, train: usize, test: usize) {
    for (prefix, n) in [("train", train), ("t10k", test)] {
        let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
        let pixels: Vec<u8> = labels
            .iter()
            .flat_map(|&l| (0..784).map(move |p| if p % 28 < 14 { l * 25 } else { 255 - l * 25 }))
            .collect();
        std::fs::write(
            dir.join(format!("{prefix}-images-idx3-ubyte")),
            encode_idx(&IdxArray { dims: vec![n, 28, 28], data: pixels }),
        )
        .unwrap();
        std::fs::write(
            dir.join(format!("{prefix}-labels-idx1-ubyte")),
            encode_idx(&IdxArray { dims: vec![n], data: labels }),
        )
        .unwrap();
    }
}

#[test]
fn info_prints_the_profile_as_json_and_table() {
    let o = owt(&["info", "--model", "alexnet-owt", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["model"], "alexnet-owt");
    assert_eq!(v["total_params"], 61_100_840);
    let layers = v["layers"].as_array().unwrap();
    let fc6 = layers.iter().find(|l| l["name"] == "fc6").unwrap();
    assert_eq!((fc6["params"].as_u64(), fc6["macs"].as_u64()), (Some(37_752_832), Some(37_748_736)));
    assert_eq!(fc6["output_shape"], serde_json::json!([4096]));
    // By hand: filters x (in/groups x k x k) x output side^2 per conv, in x out per FC layer:
    // conv1 64x363x55^2 = 70,276,800; conv2 192x1600x27^2 = 223,948,800; conv3 384x1728x13^2 =
    // 112,140,288; conv4 256x3456x169 = 149,520,384; conv5 256x2304x169 = 99,680,256; fc6
    // 9216x4096 = 37,748,736; fc7 4096x4096 = 16,777,216; fc8 4096x1000 = 4,096,000.
    assert_eq!(v["total_macs"].as_u64(), Some(714_188_480));

    let o = owt(&["info", "--model", "alexnet-2012"]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("60,965,224") && table.contains("conv3") && table.contains("256x6x6"), "{table}");
    let o = owt(&["info", "--model", "alexnet-small", "--input", "32", "--channels", "3", "--towers", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["layers"][0]["output_shape"], serde_json::json!([32, 32, 32]));
}

#[test]
fn train_then_eval_round_trip_agrees_with_metrics() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 60, 30);
    let out = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let o_ = out.path().to_str().unwrap();
    let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--batch", "16", "--out", o_];
    let scaled = ["--lr-scaling", "linear", "--base-batch", "32"];
    let o = owt(&[&base[..], &scaled, &["--epochs", "1", "--lr-schedule", "step:3"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    // The rate scaled to the batch is printed at the start, and per epoch.
    assert!(stderr(&o).contains("lr 0.005 (0.01 x 16/32, linear scaling) (step:3 schedule)"), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("epoch 1/1: lr 0.005, train loss") && stdout.contains("images/s"), "{stdout}");
    let metrics = metrics_json(out.path());
    assert_eq!(metrics[0]["lr"].as_f64(), Some(0.005));
    // A resume with another schedule or scaling is another run.
    let o = owt(&[&base[..], &scaled, &["--epochs", "2", "--resume"]].concat());
    assert_one_line_error(&o, &["--lr-schedule constant", "--lr-schedule step:3"]);
    let acc = metrics[0]["test_accuracy"].as_f64().unwrap();
    // Ten classes: top-5 beside top-1, never below it.
    let top5 = metrics[0]["test_top5_accuracy"].as_f64().unwrap();
    assert!(top5 >= acc && top5 <= 1.0, "top-5 {top5} vs top-1 {acc}");
    let o = owt(&["eval", "--checkpoint", o_, "--dataset", "mnist", "--data", d]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = String::from_utf8_lossy(&o.stdout);
    let want = format!("test accuracy {:.2}%, top-5 {:.2}% (30 images)", 100.0 * acc, 100.0 * top5);
    assert!(line.contains(&want), "{line} vs {want}");

    // The run's picture: curves and the rate drawn, no traffic bars on one device.
    let o = owt(&["report", o_]);
    assert!(o.status.success(), "{}", stderr(&o));
    let counts = report_colours(&out.path().join("report.png"));
    for (what, n) in [("train", counts.train), ("test", counts.test), ("learning rate", counts.lr)] {
        assert!(n >= 20, "{what} drawn in {n} pixels: {counts:?}");
    }
    assert_eq!(counts.phases, [0; 4], "bars on a one-device run: {counts:?}");
    let svg = out.path().join("r.svg");
    let o = owt(&["report", o_, "--out", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.contains(r#"width="1200""#), "{}", &svg_text[..200]);
    assert!(svg_text.contains("test"), "{}", &svg_text[..200]);
    // An existing file at --out is the user's: refused unless --overwrite; the run's own
    // report.png is replaced by each report.
    let photo = out.path().join("photo.png");
    std::fs::write(&photo, b"not owt's").unwrap();
    let o = owt(&["report", o_, "--out", photo.to_str().unwrap()]);
    assert_one_line_error(&o, &["photo.png exists", "--overwrite"]);
    assert_eq!(std::fs::read(&photo).unwrap(), b"not owt's", "the file was touched");
    let o = owt(&["report", o_, "--out", photo.to_str().unwrap(), "--overwrite"]);
    assert!(o.status.success() && std::fs::read(&photo).unwrap().starts_with(b"\x89PNG"), "{}", stderr(&o));
    let o = owt(&["report", o_, "--filters", "--out", photo.to_str().unwrap()]);
    assert_one_line_error(&o, &["photo.png exists", "--overwrite"]);
    let o = owt(&["report", o_]);
    assert!(o.status.success(), "the run's own picture is replaced: {}", stderr(&o));
    let o = owt(&["report", o_, "--out", "x.jpg"]);
    assert_one_line_error(&o, &["x.jpg", ".png or .svg"]);
    let o = owt(&["report", d]);
    assert_one_line_error(&o, &["metrics.json", "owt train"]);
}

/// Pixels of each of the report's colours in a PNG it wrote.
#[derive(Debug)]
struct ReportColours {
    train: usize,
    test: usize,
    lr: usize,
    /// Per phase, in `owt::report::PHASE_COLORS` order.
    phases: [usize; 4],
}

fn report_colours(png: &Path) -> ReportColours {
    use owt::report::{LR_COLOR, PHASE_COLORS, SIZE, TEST_COLOR, TRAIN_COLOR};
    let image = image::open(png).unwrap().to_rgb8();
    assert_eq!(image.dimensions(), SIZE);
    let count = |c: plotters::style::RGBColor| image.pixels().filter(|p| p.0 == [c.0, c.1, c.2]).count();
    // Not blank: a white page with a few labels would have well under 1% of pixels drawn.
    let drawn = image.pixels().filter(|p| p.0 != [255, 255, 255]).count();
    assert!(drawn * 100 > image.pixels().len(), "{drawn} pixels drawn");
    ReportColours {
        train: count(TRAIN_COLOR),
        test: count(TEST_COLOR),
        lr: count(LR_COLOR),
        phases: PHASE_COLORS.map(|(_, c)| count(c)),
    }
}

#[test]
fn wrong_input_geometry_is_one_line() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 10, 10);
    let o = owt(&["train", "--model", "alexnet-2012", "--dataset", "mnist", "--data", data.path().to_str().unwrap()]);
    assert_one_line_error(&o, &["[N, 3, 227, 227]", "[N, 1, 28, 28]"]);
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--channels",
        "3",
        "--dataset",
        "mnist",
        "--data",
        data.path().to_str().unwrap(),
    ]);
    assert_one_line_error(&o, &["[N, 3, 28, 28]", "[N, 1, 28, 28]"]);
    let o = owt(&["info", "--model", "alexnet-2012", "--input", "40"]);
    assert_one_line_error(&o, &["too small"]);
}

#[test]
fn empty_and_missing_datasets_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("train/cat")).unwrap();
    std::fs::create_dir_all(dir.path().join("val/cat")).unwrap();
    let o = owt(&["train", "--model", "alexnet-small", "--dataset", "folder", "--data", dir.path().to_str().unwrap()]);
    assert_one_line_error(&o, &["empty"]);
    let empty = tempfile::tempdir().unwrap();
    write_fixture(empty.path(), 0, 5);
    let o = owt(&["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", empty.path().to_str().unwrap()]);
    assert_one_line_error(&o, &["empty"]);
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "fashion-mnist",
        "--data",
        dir.path().to_str().unwrap(),
    ]);
    assert_one_line_error(&o, &["Fashion-MNIST not found", "apt-get install dataset-fashion-mnist"]);
    let o = owt(&["train", "--model", "alexnet-small", "--dataset", "mnist"]);
    assert_one_line_error(&o, &["MNIST needs --data DIR"]);
}

#[test]
fn zero_batch_is_one_line() {
    let o = owt(&["train", "--model", "alexnet-small", "--dataset", "synthetic", "--batch", "0"]);
    assert_one_line_error(&o, &["--batch", "at least 1", "got 0"]);
}

#[test]
fn malformed_learning_rate_schedules_are_named() {
    let synthetic = ["train", "--model", "alexnet-small", "--dataset", "synthetic"];
    for (schedule, says) in [("step:5,3", "must increase, got 5,3"), ("cosine", "expected constant, step:")] {
        let o = owt(&[&synthetic[..], &["--lr-schedule", schedule]].concat());
        let err = stderr(&o);
        assert!(!o.status.success() && err.contains(&format!("'{schedule}'")) && err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = owt(&[&synthetic[..], &["--lr-scaling", "linear", "--base-batch", "0"]].concat());
    assert_one_line_error(&o, &["--base-batch must be at least 1, got 0"]);
}

#[test]
fn unknown_backend_names_the_choices() {
    let o = owt(&["train", "--model", "alexnet-small", "--dataset", "synthetic", "--backend", "tpu"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("invalid value 'tpu'") && err.contains("flex") && err.contains("wgpu") && err.contains("cuda"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let o = owt(&["info", "--model", "alexnet-3000"]);
    assert!(!o.status.success() && stderr(&o).contains("alexnet-small"), "{}", stderr(&o));
}

#[test]
fn cuda_without_feature_or_gpu_is_one_line() {
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "synthetic",
        "--limit",
        "8",
        "--epochs",
        "1",
        "--backend",
        "cuda",
    ]);
    if cfg!(feature = "cuda") {
        if !Path::new("/proc/driver/nvidia/version").exists() {
            assert_one_line_error(&o, &["--backend cuda", "no", "use --backend flex"]);
        }
    } else {
        assert_one_line_error(&o, &["--backend cuda", "without the cuda feature", "--features cuda"]);
    }
    if !cfg!(feature = "wgpu") {
        let o = owt(&["eval", "--checkpoint", "/nonexistent", "--dataset", "synthetic", "--backend", "wgpu"]);
        assert_one_line_error(&o, &["--backend wgpu", "without the wgpu feature"]);
    }
}

/// CUDA's kernel switches: a library forced on another backend is one line naming the flag;
/// a wrong word names the choices; strict f32 and CubeCL's own kernels run anywhere (on Flex
/// they change nothing: the same losses as the defaults).
#[test]
fn cuda_kernel_switches_are_checked_and_mean_nothing_off_cuda() {
    let bench = ["bench", "--model", "alexnet-small", "--batch", "4", "--warmup", "0", "--steps", "2", "--json"];
    let with = |extra: &[&str]| owt(&[&bench[..], extra].concat());
    assert_one_line_error(&with(&["--conv", "cudnn"]), &["--conv cudnn runs on CUDA only", "--backend flex"]);
    assert_one_line_error(&with(&["--matmul", "cublaslt"]), &["--matmul cublaslt runs on CUDA only"]);
    let o = with(&["--tf32", "maybe"]);
    assert!(!o.status.success() && stderr(&o).contains("expected on or off"), "{}", stderr(&o));
    let o = with(&["--conv", "cuda"]);
    assert!(stderr(&o).contains("expected auto, owt, cubecl or cudnn"), "{}", stderr(&o));
    let losses = |o: &Output| -> Vec<f64> {
        assert!(o.status.success(), "{}", stderr(o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(report.get("cuda_kernels").is_none(), "no CUDA kernels off CUDA");
        let window = report["timed_window_unix_s"].as_array().unwrap();
        assert!(window[0].as_f64().unwrap() <= window[1].as_f64().unwrap());
        report["losses"].as_array().unwrap().iter().map(|l| l.as_f64().unwrap()).collect()
    };
    let plain = losses(&with(&[]));
    assert_eq!(losses(&with(&["--tf32", "off", "--conv", "cubecl", "--matmul", "cubecl"])), plain);
}

#[test]
fn eval_without_checkpoint_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = owt(&["eval", "--checkpoint", dir.path().to_str().unwrap(), "--dataset", "synthetic"]);
    assert_one_line_error(&o, &["checkpoint.owt", "train with --out"]);
}

#[test]
fn parallel_train_writes_per_step_traffic_and_resumes_on_another_device_count() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 48, 20);
    let out = tempfile::tempdir().unwrap();
    let (d, o_) = (data.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--batch", "16", "--out", o_];
    let o =
        owt(&[&base[..], &["--epochs", "1", "--devices", "2", "--scheme", "c", "--fc-update", "per-chunk"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("bytes") && stdout.contains("messages per step between ranks"), "{stdout}");
    let metrics = metrics_json(out.path());
    let comm = &metrics[0]["communication"];
    assert_eq!(comm["steps"], 3);
    assert!(comm["bytes_per_step"].as_f64().unwrap() > 0.0, "{comm}");
    // By hand: the conv weights are replicas, so each step all-reduces their gradients:
    // 2 (K-1) x 151,168 conv parameters x 4 bytes = 1,209,344 at K = 2 (plus the FC chunks'
    // loss reductions, which `owt plan` does not model for per-chunk updates).
    let all_reduce = comm["by_collective"]["all_reduce"]["bytes"].as_f64().unwrap();
    assert!(all_reduce >= 1_209_344.0 && all_reduce < 1_209_344.0 * 1.05, "{comm}");
    assert_eq!(metrics[0]["layout"], "2 ranks, plan weird-trick, scheme c");
    // Per layer and phase, the same bytes again; the conv layers' gradient sync among them.
    let by_phase = comm["by_phase"].as_object().unwrap();
    let sum: f64 = by_phase.values().map(|t| t["bytes"].as_f64().unwrap()).sum();
    assert!((sum - comm["bytes_per_step"].as_f64().unwrap()).abs() < 1e-6 * sum, "{comm}");
    assert!(by_phase["conv3:sync"]["bytes"].as_f64().unwrap() > 0.0, "{comm}");
    // Its picture has the sync bars.
    let o = owt(&["report", o_]);
    assert!(o.status.success(), "{}", stderr(&o));
    let counts = report_colours(&out.path().join("report.png"));
    assert!(counts.phases[2] >= 100, "sync bars: {counts:?}");
    // Resume the same run (same FC update) on 4 ranks.
    let o = owt(&[&base[..], &["--epochs", "2", "--devices", "4", "--fc-update", "per-chunk", "--resume"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let metrics = metrics_json(out.path());
    assert_eq!(metrics[1]["layout"], "4 ranks, plan weird-trick, scheme a");
    // A different FC update is a different run.
    let o = owt(&[&base[..], &["--epochs", "3", "--devices", "4", "--resume"]].concat());
    assert_one_line_error(&o, &["cannot resume", "--fc-update per-chunk", "--fc-update per-step"]);
}

/// `owt train --accum-steps N`: a step's batch in N micro-batches, said at the start; a batch
/// that does not split into them is refused before any data is read.
#[test]
fn accumulation_splits_each_batch_and_refuses_a_batch_it_cannot_split() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 32, 20);
    let out = tempfile::tempdir().unwrap();
    let (d, o_) = (data.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--out", o_, "--epochs", "1"];
    let o = owt(&[&base[..], &["--batch", "16", "--accum-steps", "3"]].concat());
    assert_one_line_error(&o, &["--accum-steps 3", "--batch must be a multiple of 3, got 16"]);
    let o = owt(&[&base[..], &["--batch", "16", "--accum-steps", "2", "--devices", "2"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("batch 16 (2 micro-batches of 8)"), "{}", stderr(&o));
}

/// `owt train --precision f16`: the run computes in f16 on f32 masters, records its loss scale
/// and skipped steps per epoch, and is a run of its own (a resume in bf16 is refused).
#[test]
fn mixed_precision_runs_record_their_loss_scale_and_are_part_of_the_run() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 32, 20);
    let out = tempfile::tempdir().unwrap();
    let (d, o_) = (data.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--out", o_, "--batch", "8"];
    let o = owt(&[&base[..], &["--epochs", "1", "--precision", "f16", "--devices", "2"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let metrics = metrics_json(out.path());
    let scale = &metrics[0]["loss_scale"];
    let (s, skipped) = (scale["scale"].as_f64().unwrap(), scale["skipped_steps"].as_u64().unwrap());
    // 4 steps from 2^16: each skip halves the scale, and none of it grows back within 2000.
    assert_eq!(s, 65536.0 / 2f64.powi(skipped as i32), "{scale}");
    assert!(skipped < 4 && metrics[0]["train_loss"].as_f64().unwrap().is_finite(), "{metrics}");
    let o = owt(&[&base[..], &["--epochs", "2", "--precision", "bf16", "--devices", "2", "--resume"]].concat());
    assert_one_line_error(&o, &["cannot resume", "--precision bf16", "--precision f16"]);
    let o = owt(&[
        &base[..],
        &["--epochs", "1", "--precision", "f16", "--devices", "2", "--fc-update", "per-chunk", "--overwrite"],
    ]
    .concat());
    assert_one_line_error(&o, &["--precision f16", "--fc-update per-chunk"]);
}

/// `--precision bf16|f16` with batch normalisation (VGG-11-BN): the run trains, evaluates after
/// every epoch, checkpoints and resumes, on one device and on 2 ranks, and its running
/// statistics stay f32 (as the master weights; a low-precision batch's statistics are widened
/// before they are folded in). Before, the first evaluation stopped the run: "dtype mismatch".
#[test]
fn mixed_precision_with_batch_norm_trains_resumes_and_keeps_f32_statistics() {
    let out = tempfile::tempdir().unwrap();
    for (precision, devices) in [("bf16", "1"), ("f16", "1"), ("bf16", "2"), ("f16", "2")] {
        let dir = out.path().join(format!("{precision}-{devices}"));
        let d = dir.to_str().unwrap();
        let base = [
            "train",
            "--model",
            "vgg11-bn",
            "--dataset",
            "synthetic",
            "--input",
            "32",
            "--hidden",
            "16",
            "--classes",
            "10",
            "--limit",
            "32",
            "--batch",
            "8",
            "--precision",
            precision,
            "--devices",
            devices,
            "--out",
            d,
        ];
        let what = format!("--precision {precision} --devices {devices}");
        let o = owt(&[&base[..], &["--epochs", "2"]].concat());
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let o = owt(&[&base[..], &["--epochs", "3", "--resume"]].concat());
        assert!(o.status.success(), "{what}, resumed: {}", stderr(&o));
        let metrics = metrics_json(&dir);
        let epochs = metrics.as_array().unwrap();
        assert_eq!(epochs.len(), 3, "{what}: {metrics}");
        assert!(epochs.iter().all(|e| e["test_loss"].as_f64().is_some_and(f64::is_finite)), "{what}: {metrics}");
        let o = owt(&["eval", "--checkpoint", d, "--dataset", "synthetic"]);
        assert!(o.status.success(), "{what}, eval: {}", stderr(&o));
        // The checkpoint's running statistics, as an export writes them: f32.
        let file = dir.join("back.safetensors");
        let o = owt(&["export", "--checkpoint", d, "--to", "torchvision", "--out", file.to_str().unwrap()]);
        assert!(o.status.success(), "{what}, export: {}", stderr(&o));
        let bytes = std::fs::read(&file).unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        let stats: Vec<(&String, &serde_json::Value)> =
            header.as_object().unwrap().iter().filter(|(k, _)| k.contains(".running_")).collect();
        assert_eq!(stats.len(), 16, "{what}: 8 batch norms, mean and variance each");
        assert!(stats.iter().all(|(_, v)| v["dtype"] == "F32"), "{what}: {stats:?}");
    }
}

/// `owt train --wire bf16`: the run sends half the bytes of f32's in every layer (the loss's
/// labels and the readouts aside), says so in its layout, and is a run of its own: a resume in
/// another precision is refused naming both.
#[test]
fn a_bf16_wire_halves_the_bytes_of_a_run_and_is_part_of_it() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 32, 20);
    let d = data.path().to_str().unwrap();
    let run = |wire: &str, out: &std::path::Path, extra: &[&str]| {
        let o_ = out.to_str().unwrap();
        let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--batch", "16"];
        owt(&[&base[..], &["--out", o_, "--devices", "2", "--wire", wire], extra].concat())
    };
    let (full_dir, half_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (wire, out) in [("f32", &full_dir), ("bf16", &half_dir)] {
        let o = run(wire, out.path(), &["--epochs", "1"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (full, half) = (metrics_json(full_dir.path()), metrics_json(half_dir.path()));
    assert_eq!(half[0]["layout"], "2 ranks, plan weird-trick, scheme a, wire bf16");
    let by_phase = |m: &serde_json::Value| m[0]["communication"]["by_phase"].as_object().unwrap().clone();
    let (f, h) = (by_phase(&full), by_phase(&half));
    assert_eq!(f.keys().collect::<Vec<_>>(), h.keys().collect::<Vec<_>>());
    for (phase, t) in &f {
        let (a, b) = (t["bytes"].as_f64().unwrap(), h[phase]["bytes"].as_f64().unwrap());
        // The loss's labels (ints) and the step's readouts (after it: "-") keep their precision.
        if phase.starts_with("loss") || phase == "-" {
            assert!(b <= a, "{phase}: {b} against {a}");
        } else {
            assert_eq!(b * 2.0, a, "{phase}");
        }
    }
    // Another precision is another run; an unknown one is named with the choices.
    let o = run("f32", half_dir.path(), &["--epochs", "2", "--resume"]);
    assert_one_line_error(&o, &["cannot resume", "--wire f32", "--wire bf16"]);
    let o = run("fp8", tempfile::tempdir().unwrap().path(), &["--epochs", "1"]);
    assert!(!o.status.success() && stderr(&o).contains("fp8") && stderr(&o).contains("bf16"), "{}", stderr(&o));
}

/// `owt train --mesh 2,2`: two nodes of two ranks (threads of one process) train exactly as
/// the flat mesh of 4 (same losses and accuracies), record the sums across nodes per
/// dimension, and the run resumes on one device; per-chunk updates and a --devices beside it
/// are refused.
#[test]
fn a_two_dimensional_mesh_trains_like_the_flat_mesh_and_resumes_on_one_device() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 48, 20);
    let d = data.path().to_str().unwrap();
    let run = |extra: &[&str]| -> (tempfile::TempDir, serde_json::Value) {
        let out = tempfile::tempdir().unwrap();
        let o_ = out.path().to_str().unwrap();
        let base =
            ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--batch", "16", "--out", o_];
        let o = owt(&[&base[..], extra].concat());
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let metrics = metrics_json(out.path());
        (out, metrics)
    };
    // f32 sums in another order (the nodes' gradients are summed weighted, on the host, in
    // f64) move the losses by about 1e-5 after a few steps: wiring faults (a node's rows
    // dropped, weights drawn apart, the test counts of one node only) move them by percents.
    // The exact equality is the f64 test's (tests/parallel_training).
    let close = |a: &serde_json::Value, b: &serde_json::Value, what: &str| {
        for (x, y) in a.as_array().unwrap().iter().zip(b.as_array().unwrap()) {
            for key in ["train_loss", "test_loss"] {
                let (p, q) = (x[key].as_f64().unwrap(), y[key].as_f64().unwrap());
                assert!((p - q).abs() <= 1e-3 * q.abs(), "{what}: epoch {} {key} {p} vs {q}", x["epoch"]);
            }
            for (key, images) in [("train_accuracy", 48.0), ("test_accuracy", 20.0)] {
                let (p, q) = (x[key].as_f64().unwrap(), y[key].as_f64().unwrap());
                assert!((p - q).abs() <= 1.0 / images + 1e-9, "{what}: epoch {} {key} {p} vs {q}", x["epoch"]);
            }
        }
    };
    for plan in ["weird-trick", "data-parallel"] {
        let (_g, grid) = run(&["--epochs", "2", "--mesh", "2,2", "--plan", plan]);
        let (_f, flat) = run(&["--epochs", "2", "--devices", "4", "--plan", plan]);
        close(&grid, &flat, plan);
        let layout = grid[0]["layout"].as_str().unwrap();
        assert!(layout.starts_with("2-D mesh (node 2 x local 2)") && layout.contains(plan), "{layout}");
        let by = &grid[0]["communication"]["by_collective"];
        assert!(by["all_reduce[node]"]["bytes"].as_f64().unwrap() > 0.0, "{by}");
        if plan == "weird-trick" {
            // Resumed on one device after the first epoch, the run ends as the 2-D one did.
            let (out, _) = run(&["--epochs", "1", "--mesh", "2,2", "--plan", plan]);
            let o_ = out.path().to_str().unwrap();
            let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--batch", "16"];
            let o = owt(&[&base[..], &["--out", o_, "--epochs", "2", "--plan", plan, "--resume"]].concat());
            assert!(o.status.success(), "{}", stderr(&o));
            let resumed = metrics_json(out.path());
            close(&resumed, &grid, "resumed on one device");
        }
    }
    let train = |extra: &[&str]| {
        owt(&[&["train", "--model", "alexnet-small", "--dataset", "synthetic", "--epochs", "1"][..], extra].concat())
    };
    assert_one_line_error(&train(&["--mesh", "2,2", "--fc-update", "per-chunk"]), &["per-chunk", "2-D mesh"]);
    assert_one_line_error(
        &train(&["--mesh", "2,2", "--batch", "2"]),
        &["--mesh 2,2", "--batch must be at least 4, got 2"],
    );
    let o = train(&["--mesh", "2,2", "--devices", "4"]);
    assert!(!o.status.success() && stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    let o = train(&["--mesh", "2,0"]);
    assert!(!o.status.success() && stderr(&o).contains("expected N,L"), "{}", stderr(&o));
}

/// `owt train --mesh 2,2 --plan-file` with FC weights stored by rows over the nodes
/// (FSDP-style) inside the weird trick's column split: it trains as the flat mesh does, a
/// run stopped after an epoch resumes to the uninterrupted run's figures (each node takes
/// its slices of the whole momentum back), and its checkpoint holds the whole model, which
/// resumes on one device; `owt plan` prints the placements and the bytes across nodes.
#[test]
fn a_two_dimensional_plan_sharded_over_the_nodes_trains_resumes_and_checkpoints_whole() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 48, 20);
    let d = data.path().to_str().unwrap();
    let fsdp = data.path().join("fsdp.json");
    std::fs::write(
        &fsdp,
        r#"{"name": "fsdp-weird-trick", "rules": [
            {"pattern": "fc*.weight", "placement": [{"Shard": 0}, {"Shard": 1}]},
            {"pattern": "fc*.bias", "placement": ["Replicate", {"Shard": 0}]}],
          "default": [{"Shard": 0}, "Replicate"], "input": [{"Shard": 0}, {"Shard": 0}]}"#,
    )
    .unwrap();
    let plan_file = fsdp.to_str().unwrap();
    let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--data", d, "--batch", "16"];
    let run = |out: &std::path::Path, extra: &[&str]| {
        let o = owt(&[&base[..], &["--out", out.to_str().unwrap()], extra].concat());
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
    };
    let dirs = tempfile::tempdir().unwrap();
    let (whole, flat, part, single) =
        (dirs.path().join("whole"), dirs.path().join("flat"), dirs.path().join("part"), dirs.path().join("single"));
    run(&whole, &["--epochs", "2", "--mesh", "2,2", "--plan-file", plan_file]);
    run(&flat, &["--epochs", "2", "--devices", "4", "--plan", "weird-trick"]);
    let (grid, flat) = (metrics_json(&whole), metrics_json(&flat));
    let layout = grid[0]["layout"].as_str().unwrap();
    assert!(layout.contains("parameters sharded over the nodes (FSDP-style)"), "{layout}");
    let by = &grid[0]["communication"]["by_collective"];
    for c in ["all_gather[node]", "reduce_scatter[node]", "all_reduce[node]"] {
        assert!(by[c]["bytes"].as_f64().unwrap() > 0.0, "{c}: {by}");
    }
    // As in the data-parallel 2-D test: f32 sums in another order, within 1e-3.
    for (x, y) in grid.as_array().unwrap().iter().zip(flat.as_array().unwrap()) {
        for key in ["train_loss", "test_loss"] {
            let (p, q) = (x[key].as_f64().unwrap(), y[key].as_f64().unwrap());
            assert!((p - q).abs() <= 1e-3 * q.abs(), "epoch {} {key} {p} vs {q}", x["epoch"]);
        }
    }
    // Stopped after one epoch and resumed on the same mesh: the uninterrupted run's figures.
    run(&part, &["--epochs", "1", "--mesh", "2,2", "--plan-file", plan_file]);
    std::fs::create_dir_all(&single).unwrap();
    for f in std::fs::read_dir(&part).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() && f.file_name().unwrap() != ".lock" {
            std::fs::copy(&f, single.join(f.file_name().unwrap())).unwrap();
        }
    }
    run(&part, &["--epochs", "2", "--mesh", "2,2", "--plan-file", plan_file, "--resume"]);
    let resumed = metrics_json(&part);
    for key in ["train_loss", "test_loss", "train_accuracy", "test_accuracy"] {
        assert_eq!(resumed[1][key], grid[1][key], "resumed 2-D run, {key}");
    }
    // Its momentum read back laid out as each parameter is stored (a bias whole on every node,
    // an FC weight's slice): the same bytes as the uninterrupted epoch. One laid out otherwise
    // gives the same numbers, redistributed at the update, in bytes that run did not move.
    assert_eq!(resumed[1]["communication"], grid[1]["communication"], "resumed 2-D run's traffic");
    // The checkpoint is the whole model: one device resumes it.
    run(&single, &["--epochs", "2", "--resume"]);
    let one = metrics_json(&single);
    for key in ["train_loss", "test_loss"] {
        let (p, q) = (one[1][key].as_f64().unwrap(), grid[1][key].as_f64().unwrap());
        assert!((p - q).abs() <= 1e-3 * q.abs(), "resumed on one device: {key} {p} vs {q}");
    }
    // owt plan: placements per dimension, and what crosses the nodes.
    let o = owt(&["plan", "--model", "alexnet-small", "--mesh", "2,2", "--batch", "16", "--plan-file", plan_file]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("FSDP-style"), "{out}{}", stderr(&o));
    let row = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_string();
    assert!(row("fc6.weight").contains("[Shard(0), Shard(1)]"), "{out}");
    assert!(row("conv1.weight").contains("[Shard(0), Replicate]") && row("fc6.bias").contains("[Replicate, Shard(0)]"));
    assert!(out.lines().any(|l| l.starts_with("fc6") && l.contains("reduce_scatter[node]")), "{out}");
}

/// A 2-D plan that slices one layer over the nodes by a trailing star (`fc6.*`) and keeps
/// every other parameter whole: a run resumed after an epoch reads each momentum back laid out
/// as its own parameter is (fc6's sliced, fc7's and fc8's whole), so its second epoch moves
/// the uninterrupted run's bytes. The pattern names fc6 alone: a momentum placed by a path
/// that kept the names of the layers before it (`fc6.weight.bias.fc7.weight`) would match it.
#[test]
fn a_plan_naming_one_layer_resumes_each_momentum_where_its_layer_lives() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 48, 20);
    let plan = data.path().join("fc6-over-nodes.json");
    std::fs::write(
        &plan,
        r#"{"name": "fc6-over-nodes", "rules": [
            {"pattern": "fc6.*", "placement": [{"Shard": 0}, "Replicate"]}],
          "default": ["Replicate", "Replicate"], "input": [{"Shard": 0}, {"Shard": 0}]}"#,
    )
    .unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let (whole, part) = (dirs.path().join("whole"), dirs.path().join("part"));
    let run = |out: &std::path::Path, extra: &[&str]| -> serde_json::Value {
        let base = ["train", "--model", "alexnet-small", "--dataset", "mnist", "--batch", "16", "--mesh", "2,2"];
        let (d, p, o) = (data.path().to_str().unwrap(), plan.to_str().unwrap(), out.to_str().unwrap());
        let o = owt(&[&base[..], &["--data", d, "--plan-file", p, "--out", o], extra].concat());
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        metrics_json(out)
    };
    let uninterrupted = run(&whole, &["--epochs", "2"]);
    run(&part, &["--epochs", "1"]);
    let resumed = run(&part, &["--epochs", "2", "--resume"]);
    for key in ["train_loss", "test_loss", "train_accuracy", "test_accuracy"] {
        assert_eq!(resumed[1][key], uninterrupted[1][key], "resumed run, {key}");
    }
    assert_eq!(resumed[1]["communication"], uninterrupted[1]["communication"], "resumed run's traffic");
}

/// `owt bench --mesh 2,2` measures the 2-D step: its ledger per step is exactly what
/// `owt plan --mesh 2,2` predicts (bytes, messages, bytes across nodes), and its losses are
/// the flat mesh's.
#[test]
fn bench_on_a_two_dimensional_mesh_moves_what_the_plan_says() {
    let bench = bench_json(&["--batch", "16", "--mesh", "2,2", "--warmup", "1", "--steps", "2"]);
    assert_eq!(bench["devices"], 4);
    assert!(bench["layout"].as_str().unwrap().starts_with("2-D mesh (node 2 x local 2)"), "{bench}");
    let o = owt(&["plan", "--model", "alexnet-small", "--mesh", "2,2", "--batch", "16", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let traffic = &plan["traffic"];
    assert_eq!(bench["bytes_per_step"].as_f64().unwrap(), traffic["total_bytes"].as_f64().unwrap(), "{bench}");
    assert_eq!(bench["messages_per_step"].as_f64().unwrap(), traffic["total_messages"].as_f64().unwrap());
    assert_eq!(
        bench["cross_process_bytes_per_step"].as_f64().unwrap(),
        traffic["total_cross_process_bytes"].as_f64().unwrap()
    );
    let flat = bench_json(&["--batch", "16", "--devices", "4", "--warmup", "1", "--steps", "2"]);
    let losses = |r: &serde_json::Value| -> Vec<f64> {
        r["losses"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
    };
    for (a, b) in losses(&bench).iter().zip(losses(&flat)) {
        assert!((a - b).abs() <= 1e-5 * b.abs(), "{:?} vs {:?}", losses(&bench), losses(&flat));
    }
}

/// `--lighting`: the principal components are computed once and stored with the run
/// (`lighting.json`), read back on resume; the level is part of the run; grey models refuse it.
#[test]
fn lighting_noise_is_stored_with_the_run_and_part_of_it() {
    let out = tempfile::tempdir().unwrap();
    let o_ = out.path().to_str().unwrap();
    let base = ["train", "--model", "alexnet-small", "--channels", "3", "--dataset", "synthetic", "--limit", "64"];
    let run = |extra: &[&str]| owt(&[&base[..], &["--batch", "16", "--out", o_], extra].concat());
    let o = run(&["--epochs", "1", "--lighting", "0.1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stored = std::fs::read(out.path().join("lighting.json")).unwrap();
    let lighting: owt::data::Lighting = serde_json::from_slice(&stored).unwrap();
    assert_eq!((lighting.std, lighting.images), (0.1, 64));
    assert!(lighting.eigenvalues[0] >= lighting.eigenvalues[1] && lighting.eigenvalues[2] >= 0.0, "{lighting:?}");
    let o = run(&["--epochs", "2", "--lighting", "0.1", "--resume"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(out.path().join("lighting.json")).unwrap(), stored, "read back, not refitted");
    assert_one_line_error(&run(&["--epochs", "3", "--lighting", "0.2", "--resume"]), &["cannot resume", "--lighting"]);
    // Resumed without the flag: the noise would be dropped; refused naming both levels.
    assert_one_line_error(
        &run(&["--epochs", "3", "--resume"]),
        &["cannot resume", "this command has --lighting 0, the checkpoint was trained with --lighting 0.1"],
    );
    let grey =
        owt(&["train", "--model", "alexnet-small", "--dataset", "synthetic", "--epochs", "1", "--lighting", "0.1"]);
    assert_one_line_error(&grey, &["--lighting 0.1", "1 channel"]);
    assert_one_line_error(&run(&["--epochs", "1", "--lighting=-1", "--overwrite"]), &["--lighting must be in [0, 10]"]);
    // 1e308 trained on saturated pixels: past 100x the paper's level it is refused.
    assert_one_line_error(
        &run(&["--epochs", "1", "--lighting=1e308", "--overwrite"]),
        &["--lighting must be in [0, 10]", "got 1e308"],
    );
}

/// `owt report RUN --filters` on a checkpoint whose conv1 filters are made grey in tower 1
/// (R = G = B) and red-only in tower 2: the figures are 0 and sqrt(2/3), and the picture's
/// first block is grey, its second red on mid-grey.
#[test]
fn filters_are_drawn_per_tower_with_their_colour_specificity() {
    use burn::backend::Flex;
    use burn::prelude::*;
    let out = tempfile::tempdir().unwrap();
    let o_ = out.path().to_str().unwrap();
    let train = ["train", "--model", "alexnet-small", "--towers", "2", "--channels", "3", "--dataset", "synthetic"];
    let o = owt(&[&train[..], &["--limit", "32", "--batch", "16", "--epochs", "1", "--out", o_]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let ckpt = owt::train::Checkpoint::load(out.path()).unwrap();
    let (mut model, state) = owt::train::load_model::<Flex>(out.path(), &Default::default()).unwrap();
    let w = model.conv(1).weight.val();
    let [n, c, k, _] = w.dims();
    let mut v: Vec<f32> = w.into_data().to_vec().unwrap();
    let plane = k * k;
    for f in 0..n {
        for p in 0..plane {
            let red = v[(f * c) * plane + p];
            let (g, b) = if f < n / 2 { (red, red) } else { (0.0, 0.0) };
            v[(f * c + 1) * plane + p] = g;
            v[(f * c + 2) * plane + p] = b;
        }
    }
    let device = Default::default();
    model.conv1.as_mut().expect("an AlexNet has conv1").weight =
        burn::module::Param::from_tensor(Tensor::<Flex, 4>::from_data(TensorData::new(v, [n, c, k, k]), &device));
    let bytes = owt::train::checkpoint::record_to_bytes::<Flex, _>(model.into_record()).unwrap();
    owt::train::Checkpoint::save(out.path(), &state, &bytes, ckpt.optimizer_bytes()).unwrap();
    let o = owt(&["report", o_, "--filters"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let half = n / 2;
    assert!(stdout.contains(&format!("tower 1: {half} filters, colour specificity 0.000")), "{stdout}");
    assert!(stdout.contains(&format!("tower 2: {half} filters, colour specificity 0.816")), "{stdout}");
    let img = image::open(out.path().join("filters.png")).unwrap().to_rgb8();
    let (left, right) = img.enumerate_pixels().partition::<Vec<_>, _>(|(x, _, _)| *x < img.width() / 2);
    let drawn = |px: &&(u32, u32, &image::Rgb<u8>)| px.2 .0 != [255, 255, 255];
    assert!(left.iter().filter(drawn).all(|(_, _, p)| p.0[0] == p.0[1] && p.0[1] == p.0[2]), "tower 1 is grey");
    let reds: Vec<_> = right.iter().filter(drawn).collect();
    assert!(!reds.is_empty() && reds.iter().all(|(_, _, p)| p.0[1] == 128 && p.0[2] == 128), "tower 2: red on grey");
    assert!(reds.iter().any(|(_, _, p)| p.0[0] != 128), "tower 2 has red in it");
    assert_one_line_error(&owt(&["report", o_, "--filters", "--out", "f.svg"]), &["--filters draws a PNG", "f.svg"]);
}

/// `--plan-file`: a user's plan as JSON, 1-D on a mesh or per dimension on a 2-D mesh; what
/// does not parse, or asks for what has no meaning along the nodes, is one line naming the
/// file.
#[test]
fn plan_files_give_the_ranks_a_users_plan() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, json: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, json).unwrap();
        path.to_str().unwrap().to_string()
    };
    let flat = write(
        "fc6.json",
        r#"{"name": "fc6-split", "rules": [{"pattern": "fc6.weight", "placement": {"Shard": 1}},
            {"pattern": "fc6.bias", "placement": {"Shard": 0}}],
            "default": "Replicate", "input": {"Shard": 0}, "ranks": null, "towers": null}"#,
    );
    let grid = write(
        "grid.json",
        r#"{"name": "fc6-only-2d", "rules": [{"pattern": "fc6.weight", "placement": ["Replicate", {"Shard": 1}]}],
            "default": ["Replicate", "Replicate"], "input": [{"Shard": 0}, {"Shard": 0}]}"#,
    );
    let across = write(
        "across.json",
        r#"{"name": "fc-across", "rules": [{"pattern": "fc6.weight", "placement": ["Partial", {"Shard": 1}]}],
            "default": ["Replicate", "Replicate"], "input": [{"Shard": 0}, {"Shard": 0}]}"#,
    );
    let broken = write("broken.json", "{\"name\": ");
    let train = |extra: &[&str]| {
        let out = dir.path().join(format!("run-{}", extra.join("-").replace(['/', '.'], "_")));
        let base = ["train", "--model", "alexnet-small", "--dataset", "synthetic", "--limit", "32", "--batch", "16"];
        owt(&[&base[..], &["--epochs", "1", "--out", out.to_str().unwrap()], extra].concat())
    };
    let layout_of = |o: &Output| stderr(o).lines().next().unwrap_or_default().to_string();
    let o = train(&["--devices", "2", "--plan-file", &flat]);
    assert!(o.status.success() && layout_of(&o).contains("plan fc6-split"), "{}", stderr(&o));
    let o = train(&["--mesh", "2,2", "--plan-file", &grid]);
    assert!(o.status.success() && layout_of(&o).contains("plan fc6-only-2d"), "{}", stderr(&o));
    let o = train(&["--mesh", "2,2", "--plan-file", &flat]);
    assert!(
        o.status.success() && layout_of(&o).contains("plan fc6-split, scheme a inside each node"),
        "{}",
        stderr(&o)
    );
    assert_one_line_error(
        &train(&["--mesh", "2,2", "--plan-file", &across]),
        &["across.json", "fc6.weight", "along \"node\"", "not a pending sum"],
    );
    assert_one_line_error(&train(&["--devices", "2", "--plan-file", &grid]), &["grid.json", "needs --mesh"]);
    assert_one_line_error(&train(&["--devices", "2", "--plan-file", &broken]), &["broken.json", "not JSON"]);
    // A misspelt key is refused naming it and the known ones, in either form, a rule's too.
    let typo = write("typo.json", &std::fs::read_to_string(&flat).unwrap().replace("\"ranks\"", "\"rank\""));
    assert_one_line_error(
        &train(&["--devices", "2", "--plan-file", &typo]),
        &["typo.json", "unknown field `rank`", "`ranks`"],
    );
    let typo = write("typo2.json", &std::fs::read_to_string(&grid).unwrap().replace("\"pattern\"", "\"patern\""));
    assert_one_line_error(
        &train(&["--mesh", "2,2", "--plan-file", &typo]),
        &["typo2.json", "unknown field `patern`", "`pattern`"],
    );
    // owt plan reads the same files and prints the placements per dimension.
    let o = owt(&["plan", "--model", "alexnet-small", "--mesh", "2,2", "--batch", "16", "--plan-file", &grid]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("plan fc6-only-2d"), "{out}{}", stderr(&o));
    let row = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_string();
    assert!(
        row("fc6.weight").contains("[Replicate, Shard(1)]") && row("fc7.weight").contains("[Replicate, Replicate]"),
        "{out}"
    );
    let o = train(&["--devices", "2", "--plan-file", &flat, "--plan", "data-parallel"]);
    assert!(!o.status.success() && stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn impossible_plans_are_one_line() {
    let train = |extra: &[&str]| {
        owt(&[&["train", "--model", "alexnet-small", "--dataset", "synthetic", "--epochs", "1"][..], extra].concat())
    };
    assert_one_line_error(&train(&["--devices", "3", "--plan", "two-tower"]), &["two-tower", "exactly 2", "3"]);
    assert_one_line_error(
        &train(&["--devices", "2", "--plan", "two-tower", "--towers", "1"]),
        &["2 towers", "alexnet-small has 1"],
    );
    assert_one_line_error(&train(&["--devices", "4", "--plan", "model-parallel"]), &["conv2", "2 groups", "4 devices"]);
    assert_one_line_error(&train(&["--devices", "8", "--batch", "4"]), &["--batch", "at least", "8", "got 4"]);
    assert_one_line_error(&train(&["--devices", "0"]), &["--devices", "at least 1", "got 0"]);
    let o = train(&["--devices", "2", "--scheme", "d"]);
    assert!(!o.status.success() && stderr(&o).contains("expected a, b or c"), "{}", stderr(&o));
}

#[test]
fn plan_prints_json_whose_totals_add_up() {
    let o =
        owt(&["plan", "--model", "alexnet-small", "--devices", "2", "--batch", "8", "--plan", "two-tower", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let layers = plan["layers"].as_array().unwrap();
    // By hand, K = 2, 8 images, f32: conv3's input (pool2: 64x6x6 = 2304 per image, 18,432 in
    // all) is all-gathered forward and again for the weight gradient, and its gradient
    // reduce-scattered: 3 x 1 x 18,432 x 4 = 221,184 bytes. Each FC layer's input (256 per
    // image) crosses once each way: all-gathered forward (kept for the weight gradient) and
    // its gradient reduce-scattered, 2 x 8192; the dropout masks of fc7 and fc8 are drawn
    // where their pieces are: 3 x 16,384 = 49,152. The loss: 2 x 2 x 1 x 8 x 4 = 128 bytes of
    // argmax candidates, two all-reduces of 8 numbers forward (128) and none backward (the
    // backward pass reads the forward's pending sum, reduced once and kept with it).
    // Total 270,592 bytes. Messages: conv3 3 x 2, fc6..fc8 2 x 2 each, loss 4 + 8: 30.
    assert_eq!(plan["total_bytes"].as_u64(), Some(270_592));
    assert_eq!(plan["total_messages"].as_u64(), Some(30));
    let names: std::collections::BTreeSet<&str> = layers.iter().map(|l| l["layer"].as_str().unwrap()).collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["conv3", "fc6", "fc7", "fc8", "loss"]);
    let o = owt(&["plan", "--model", "alexnet-small", "--devices", "4", "--batch", "8", "--plan", "weird-trick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("total"));
}

fn bench_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["bench", "--model", "alexnet-small", "--json"];
    all.extend_from_slice(args);
    let o = owt(&all);
    assert!(o.status.success(), "owt {all:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `--batch-stats`: the dry run prices what each form moves (the synchronised form's two
/// all-reduces of C values per batch normalisation backward are the difference: 2 rings of
/// 2 (K - 1) C f32 values each over VGG-11's 2,752 channels at K = 2), and a 2-D mesh or an
/// unknown form is refused in one line naming what it got.
#[test]
fn batch_statistics_are_priced_and_refused_where_they_do_not_run() {
    let bytes = |extra: &[&str]| -> u64 {
        let mut all = vec!["plan", "--model", "vgg11-bn", "--input", "32", "--devices", "2", "--batch", "8"];
        all.extend_from_slice(&["--plan", "data-parallel", "--json"]);
        all.extend_from_slice(extra);
        let o = owt(&all);
        assert!(o.status.success(), "owt {all:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["total_bytes"].as_u64().unwrap()
    };
    let (sync, local) = (bytes(&[]), bytes(&["--batch-stats", "local"]));
    assert_eq!(bytes(&["--batch-stats", "sync"]), sync, "sync is the default");
    let channels: u64 = [64, 128, 256, 256, 512, 512, 512, 512].iter().sum();
    assert_eq!(sync - local, 2 * 2 * channels * 4, "sync {sync}, local {local}");
    for args in [
        &["plan", "--model", "vgg11-bn", "--input", "32", "--mesh", "2,2", "--batch", "8", "--batch-stats", "local"][..],
        &["bench", "--model", "vgg11-bn", "--input", "32", "--mesh", "2,2", "--batch", "8", "--batch-stats", "local"][..],
    ] {
        let o = owt(args);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains("local") && e.contains("1-D mesh") && e.trim().lines().count() == 1, "{e}");
    }
    let o = owt(&["bench", "--model", "vgg11-bn", "--batch-stats", "ranks"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("\"ranks\"") && e.contains("sync or local"), "{e}");
}

/// `--adaptive-pool none`: a VGG's fc6 reads the last maps as they are (512 values an image
/// at 32x32 instead of torchvision's 7x7 copies), in the profile, the plan's traffic and the
/// trained network; the choice is part of the run, and refused where it means nothing.
#[test]
fn adaptive_pool_none_feeds_fc6_the_maps_as_they_are_and_is_part_of_the_run() {
    let info = |extra: &[&str]| -> serde_json::Value {
        let mut all = vec!["info", "--model", "vgg11-bn", "--input", "32", "--hidden", "64", "--json"];
        all.extend_from_slice(extra);
        let o = owt(&all);
        assert!(o.status.success(), "owt {all:?}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let fc6 = |v: &serde_json::Value| {
        let layers = v["layers"].as_array().unwrap();
        layers.iter().find(|l| l["name"] == "fc6").unwrap()["params"].as_u64().unwrap()
    };
    let (pooled, bare) = (info(&[]), info(&["--adaptive-pool", "none"]));
    assert_eq!(info(&["--adaptive-pool", "7"]), pooled, "7 is the default");
    assert_eq!((fc6(&pooled), fc6(&bare)), (512 * 49 * 64 + 64, 512 * 64 + 64));
    let total = |v: &serde_json::Value| v["total_params"].as_u64().unwrap();
    assert_eq!(total(&pooled) - total(&bare), 512 * 48 * 64);
    // Pooled to 1x1 the maps are what they are already: the same network.
    assert_eq!(fc6(&info(&["--adaptive-pool", "1"])), fc6(&bare));
    // The weird trick's fc6 forward all-gathers its input: 49 times fewer values without the pool.
    let gathered = |extra: &[&str]| -> u64 {
        let mut all = vec!["plan", "--model", "vgg11-bn", "--input", "32", "--hidden", "64", "--devices", "2"];
        all.extend_from_slice(&["--batch", "8", "--plan", "weird-trick", "--scheme", "a", "--json"]);
        all.extend_from_slice(extra);
        let o = owt(&all);
        assert!(o.status.success(), "owt {all:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let rows = v["layers"].as_array().unwrap_or_else(|| panic!("no rows: {v}"));
        rows.iter()
            .filter(|r| r["layer"] == "fc6" && r["phase"] == "forward")
            .map(|r| r["bytes"].as_u64().unwrap())
            .sum()
    };
    // Scheme a: each of the 2 ranks sends its 4 images' fc6 input to the other, 4 bytes a value.
    assert_eq!(gathered(&[]), 2 * 4 * 512 * 49 * 4);
    assert_eq!(gathered(&["--adaptive-pool", "none"]), 2 * 4 * 512 * 4);

    // Trained without the pool, resumed with it: refused, naming both.
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 16, 8);
    let out = tempfile::tempdir().unwrap();
    let (d, o_) = (data.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base =
        ["train", "--model", "vgg11-bn", "--input", "32", "--channels", "1", "--hidden", "16", "--classes", "10"];
    let run = ["--dataset", "mnist", "--data", d, "--batch", "8", "--out", o_];
    let o = owt(&[&base[..], &run[..], &["--epochs", "1", "--adaptive-pool", "none"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let o = owt(&[&base[..], &run[..], &["--epochs", "2", "--resume"]].concat());
    assert_one_line_error(&o, &["cannot resume", "--adaptive-pool none", "--adaptive-pool 7"]);
    let o = owt(&[&base[..], &run[..], &["--epochs", "2", "--adaptive-pool", "none", "--resume"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let o = owt(&["eval", "--checkpoint", o_, "--dataset", "mnist", "--data", d]);
    assert!(o.status.success(), "{}", stderr(&o));

    assert_one_line_error(
        &owt(&["info", "--model", "alexnet-owt", "--adaptive-pool", "none"]),
        &["alexnet-owt", "--adaptive-pool none", "VGG"],
    );
    for (bad, needle) in [("0", "at least 1"), ("seven", "or none")] {
        let o = owt(&["info", "--model", "vgg11", "--adaptive-pool", bad]);
        let e = stderr(&o);
        assert!(!o.status.success() && e.contains(needle) && e.contains(&format!("'{bad}'")), "{e}");
    }
}

/// A plan file in `dir` that is data parallelism with each rank's own batch statistics.
fn local_statistics_plan(dir: &Path) -> std::path::PathBuf {
    let plan = dir.join("local.json");
    std::fs::write(
        &plan,
        r#"{"name": "dp-local", "rules": [], "default": "Replicate", "input": {"Shard": 0},
            "ranks": null, "towers": null, "batch_stats": "local"}"#,
    )
    .unwrap();
    plan
}

/// A setting that cannot change a run's numbers is handled one way for every such setting:
/// given as a flag, it is refused up front (`flag_modes`: `--batch-stats` of a network without
/// batch normalisation, `--base-batch` without a rate scaling); arriving otherwise (a plan
/// file's `batch_stats`), it never blocks a resume nor must be repeated. Where the setting
/// does change the numbers (a rate scaled to a base batch), a resume without it is refused.
#[test]
fn settings_that_change_nothing_are_refused_as_flags_and_never_block_a_resume() {
    let base = ["train", "--model", "alexnet-small", "--dataset", "synthetic", "--limit", "32", "--batch", "16"];
    for flags in [&["--devices", "2", "--batch-stats", "local"][..], &["--base-batch", "64"][..]] {
        let out = tempfile::tempdir().unwrap();
        let o = owt(&[&base[..], flags, &["--epochs", "1", "--out", out.path().to_str().unwrap()]].concat());
        assert_one_line_error(&o, &[flags[flags.len() - 2], "would be ignored"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = local_statistics_plan(dir.path());
    let with_file = ["--devices", "2", "--plan-file", plan.to_str().unwrap()];
    let without = ["--devices", "2", "--plan", "data-parallel"];
    for (first, then) in [(&with_file, &without), (&without, &with_file)] {
        let out = tempfile::tempdir().unwrap();
        let run = [&base[..], &["--out", out.path().to_str().unwrap()]].concat();
        let o = owt(&[&run[..], &first[..], &["--epochs", "1"]].concat());
        assert!(o.status.success(), "{first:?}: {}", stderr(&o));
        let o = owt(&[&run[..], &then[..], &["--epochs", "2", "--resume"]].concat());
        assert!(o.status.success(), "trained with {first:?}, resumed with {then:?}: {}", stderr(&o));
        assert_eq!(metrics_json(out.path()).as_array().unwrap().len(), 2);
    }
    let out = tempfile::tempdir().unwrap();
    let run = [&base[..], &["--out", out.path().to_str().unwrap(), "--lr-scaling", "linear"]].concat();
    let o = owt(&[&run[..], &["--base-batch", "64", "--epochs", "1"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let o = owt(&[&run[..], &["--epochs", "2", "--resume"]].concat());
    assert_one_line_error(&o, &["cannot resume", "--base-batch"]);
}

/// `--batch-stats` is part of a run (each rank's own statistics change the numbers): a run
/// trained with local statistics resumes with them, from the flag or a plan file's
/// `batch_stats`, and is refused in one line naming both when resumed with the default.
#[test]
fn batch_statistics_are_part_of_the_run() {
    let data = tempfile::tempdir().unwrap();
    write_fixture(data.path(), 16, 8);
    let out = tempfile::tempdir().unwrap();
    let (d, o_) = (data.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = ["train", "--model", "vgg11-bn", "--input", "32", "--channels", "1", "--hidden", "16", "--devices", "2"];
    let run = ["--dataset", "mnist", "--data", d, "--batch", "8", "--out", o_];
    let o = owt(&[&base[..], &run[..], &["--epochs", "1", "--batch-stats", "local"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let o = owt(&[&base[..], &run[..], &["--epochs", "2", "--resume"]].concat());
    assert_one_line_error(&o, &["cannot resume", "--batch-stats local", "--batch-stats sync"]);
    // The same statistics from a plan file: the run goes on.
    let plan = local_statistics_plan(data.path());
    let p = plan.to_str().unwrap();
    let o = owt(&[&base[..], &run[..], &["--epochs", "2", "--plan-file", p, "--resume"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The plan `owt plan ARGS --auto` printed (`plan_json`), given back to `owt plan ARGS` as a
/// plan file with the scheme the search `report` chose, is priced at the step it reported.
fn assert_auto_plan_prices_the_same(args: &[&str], report: &serde_json::Value, plan_json: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auto.json");
    std::fs::write(&path, plan_json).unwrap();
    let scheme = match report["scheme"].as_str().unwrap() {
        "AllGather" => "a",
        "Broadcast" => "b",
        _ => "c",
    };
    let again = owt(&[args, &["--plan-file", path.to_str().unwrap(), "--scheme", scheme, "--json"]].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let serial = again["cost"]["prediction"]["serial_s"].as_f64().unwrap();
    let step = report["step_s"].as_f64().unwrap();
    assert!((serial - step).abs() <= 1e-12 * step, "{serial} vs {step}");
}

/// `owt plan --auto` on AlexNetOwt, 8 devices of the 2014 paper's kind (gtx580-pcie), 128
/// images each: the heuristic finds the weird trick or a plan predicted faster, and faster
/// than data parallelism; the plan it prints is a plan file that, priced again through
/// `--plan-file` and the scheme it names, predicts the same step.
#[test]
fn plan_auto_finds_the_weird_trick_or_better_for_alexnet_owt_on_eight_gtx580s() {
    let args = ["plan", "--model", "alexnet-owt", "--devices", "8", "--batch", "1024", "--profile", "gtx580-pcie"];
    let o = owt(&[&args[..], &["--auto", "--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ratio = |key: &str| report[key].as_f64().unwrap();
    assert!(ratio("speedup_vs_weird_trick") >= 1.0 - 1e-12, "{report}");
    assert!(ratio("speedup_vs_data_parallel") > 1.0, "{report}");
    assert_eq!(report["exhaustive"], false, "8 layers and 3 schemes: 704 candidates, the heuristic");
    assert!(report["evaluated"].as_u64().unwrap() > 3 && report["seconds"].as_f64().unwrap() >= 0.0);
    // The plan alone on stdout, the words on stderr.
    let o = owt(&[&args[..], &["--auto"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let words = stderr(&o);
    assert!(words.contains("--plan-file") && words.contains("faster than data parallelism"), "{words}");
    let plan: owt_hybrid::Plan = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(serde_json::to_value(&plan).unwrap(), report["plan"]);
    assert_auto_plan_prices_the_same(&args, &report, &o.stdout);
    // Without a profile there is nothing to price: one line.
    let o = owt(&["plan", "--model", "alexnet-owt", "--devices", "8", "--batch", "1024", "--auto"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("--profile") && e.trim().lines().count() == 1, "{e}");
}

/// `--auto` on a 2-D mesh: the candidates are the plan inside each node, data-parallel across
/// the nodes; the plan it prints, given back with the same `--mesh`, is priced the same.
#[test]
fn plan_auto_on_a_two_dimensional_mesh_prints_a_plan_that_prices_the_same() {
    let args = ["plan", "--model", "alexnet-small", "--mesh", "2,2", "--batch", "32", "--profile", "h200-nvlink-ib"];
    let o = owt(&[&args[..], &["--auto", "--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(report["speedup_vs_data_parallel"].as_f64().unwrap() >= 1.0 - 1e-12, "{report}");
    assert!(report["speedup_vs_weird_trick"].as_f64().unwrap() >= 1.0 - 1e-12, "{report}");
    let o = owt(&[&args[..], &["--auto"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2x2 mesh"), "{}", stderr(&o));
    assert_auto_plan_prices_the_same(&args, &report, &o.stdout);
}

/// `--resident`: the same batches in the same order, uploaded once, so the same losses on one
/// device and on a mesh; the report says so.
#[test]
fn bench_resident_batches_give_the_same_losses_as_uploading_each_step() {
    for mesh in [&[][..], &["--devices", "2"][..]] {
        let args = [&["--batch", "8", "--warmup", "1", "--steps", "5", "--seed", "2"][..], mesh].concat();
        let uploaded = bench_json(&args);
        let resident = bench_json(&[&args[..], &["--resident"]].concat());
        assert_eq!(
            (&uploaded["resident"], &resident["resident"]),
            (&serde_json::json!(false), &serde_json::json!(true))
        );
        assert_eq!(resident["losses"].as_array().unwrap().len(), 6, "6 steps cycle through 4 batches");
        assert_eq!(uploaded["losses"], resident["losses"], "{mesh:?}");
    }
}

/// `--gradient-norms`: every parameter's norm by its path, the same on a mesh under either plan
/// as on one device (where they part is where a mesh's losses part from one device's).
#[test]
fn bench_gradient_norms_name_every_parameter_and_agree_on_a_mesh() {
    let common = ["--batch", "8", "--warmup", "0", "--steps", "1", "--seed", "3", "--gradient-norms"];
    let norms = |extra: &[&str]| -> std::collections::BTreeMap<String, f64> {
        let report = bench_json(&[&common[..], extra].concat());
        serde_json::from_value(report["gradient_norms"].clone()).unwrap()
    };
    let one = norms(&[]);
    let expected: Vec<String> = ["conv1", "conv2", "conv3", "conv4", "conv5", "fc6", "fc7", "fc8"]
        .iter()
        .flat_map(|l| [format!("{l}.bias"), format!("{l}.weight")])
        .collect();
    let mut names: Vec<String> = one.keys().cloned().collect();
    names.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(names, want);
    assert!(one.values().all(|n| n.is_finite() && *n > 0.0), "{one:?}");
    for plan in ["data-parallel", "weird-trick"] {
        let mesh = norms(&["--devices", "2", "--plan", plan]);
        for (name, n) in &one {
            let m = mesh[name];
            assert!((m - n).abs() <= 1e-5 * n, "{plan}: {name} {m} on 2 ranks, {n} on one device");
        }
    }
    // Reported only when asked for.
    let plain = bench_json(&["--batch", "4", "--warmup", "0", "--steps", "1"]);
    assert!(plain.get("gradient_norms").is_none(), "{plain}");
}

#[test]
fn bench_reports_steady_state_speed_traffic_and_losses() {
    let single = bench_json(&["--batch", "8", "--warmup", "1", "--steps", "3", "--seed", "4"]);
    for field in ["images_per_s", "median_step_ms", "first_step_ms", "bytes_per_step"] {
        assert!(single[field].as_f64().unwrap() >= 0.0, "{field}: {single}");
    }
    assert!(single["images_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(single["fallbacks"], 0);
    assert_eq!(single["empty_ops"], 0);
    assert_eq!(single["bytes_per_step"], 0.0, "one device moves nothing");
    assert_eq!((&single["devices"], &single["mesh"]), (&serde_json::json!(1), &serde_json::json!(false)));
    let losses: Vec<f64> = single["losses"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(losses.len(), 4, "warmup and timed steps");
    assert!(losses.iter().all(|l| l.is_finite() && *l > 0.0), "{losses:?}");
    // The same steps on a 3-rank mesh (uneven shards of 8): the same losses, the traffic
    // `owt plan` computes, nothing gathered for want of a rule, no empty piece.
    let mesh = bench_json(&[
        "--batch",
        "8",
        "--warmup",
        "1",
        "--steps",
        "3",
        "--seed",
        "4",
        "--devices",
        "3",
        "--scheme",
        "b",
    ]);
    assert_eq!((&mesh["devices"], &mesh["mesh"]), (&serde_json::json!(3), &serde_json::json!(true)));
    assert_eq!(mesh["fallbacks"], 0);
    assert_eq!(mesh["empty_ops"], 0);
    let mesh_losses: Vec<f64> = mesh["losses"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(mesh_losses.len(), losses.len());
    for (a, b) in mesh_losses.iter().zip(&losses) {
        assert!((a - b).abs() <= 1e-4 * b, "mesh {mesh_losses:?} vs one device {losses:?}");
    }
    let o = owt(&["plan", "--model", "alexnet-small", "--devices", "3", "--batch", "8", "--scheme", "b", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(mesh["bytes_per_step"].as_f64().unwrap(), plan["total_bytes"].as_f64().unwrap(), "{mesh}");
    assert_eq!(mesh["messages_per_step"].as_f64().unwrap(), plan["total_messages"].as_f64().unwrap());
    // Text output is one line.
    let o = owt(&["bench", "--model", "alexnet-small", "--batch", "4", "--warmup", "0", "--steps", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("images/s") && text.contains("median step"), "{text}");
}

#[test]
fn bench_refuses_bad_input_in_one_line() {
    let o = owt(&["bench", "--model", "alexnet-small", "--batch", "0"]);
    assert_one_line_error(&o, &["--batch", "got 0"]);
    let o = owt(&["bench", "--model", "alexnet-small", "--batch", "2", "--devices", "4"]);
    assert_one_line_error(&o, &["4"]);
    let o = owt(&["bench", "--model", "alexnet-small", "--steps", "0"]);
    assert!(!o.status.success() && stderr(&o).contains("--steps"), "{}", stderr(&o));
}

#[test]
fn bench_profile_lists_every_layer_with_the_shapes_info_gives() {
    let profile = bench_json(&["--batch", "4", "--steps", "1", "--profile", "--towers", "2"]);
    let o = owt(&["info", "--model", "alexnet-small", "--towers", "2", "--json"]);
    let info: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = profile["rows"].as_array().unwrap();
    // The profile's rows that `owt info` also lists (conv, lrn, pool, fc), in the same order
    // and with the same output shapes; ReLU, dropout and flatten rows come between them.
    let listed: Vec<(&str, &serde_json::Value)> = rows
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), &r["shape"]))
        .filter(|(n, _)| info["layers"].as_array().unwrap().iter().any(|l| l["name"] == *n))
        .collect();
    let layers = info["layers"].as_array().unwrap();
    assert_eq!(listed.len(), layers.len(), "{profile}");
    for ((name, shape), layer) in listed.iter().zip(layers) {
        assert_eq!(*name, layer["name"].as_str().unwrap());
        assert_eq!(*shape, &layer["output_shape"], "{name}");
    }
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for relu in ["relu1", "relu2", "relu3", "relu4", "relu5", "relu6", "relu7"] {
        assert!(names.contains(&relu), "{names:?}");
    }
    assert_eq!(&names[names.len() - 3..], ["loss (softmax)", "optimizer", "upload"]);
    let optimizer = &rows[rows.len() - 2];
    assert_eq!(optimizer["shape"][0], info["total_params"], "the optimizer row counts the parameters");
    let sum: f64 = rows.iter().map(|r| r["forward_ms"].as_f64().unwrap() + r["backward_ms"].as_f64().unwrap()).sum();
    assert!((sum - profile["parts_ms"].as_f64().unwrap()).abs() <= 1e-9 * sum.max(1.0), "{profile}");
    assert!(profile["step_ms"].as_f64().unwrap() > 0.0);
    // A mesh is refused in one line: the profile times one device.
    assert_one_line_error(&owt(&["bench", "--model", "alexnet-small", "--profile", "--devices", "2"]), &["--profile"]);
}

/// An image folder of `classes` classes with `per_class` RGB images each in train/ and val/.
fn write_rgb_folder(dir: &Path, classes: usize, per_class: usize, side: u32) {
    for split in ["train", "val"] {
        for c in 0..classes {
            let class_dir = dir.join(split).join(format!("class{c}"));
            std::fs::create_dir_all(&class_dir).unwrap();
            for i in 0..per_class {
                let shade = (40 * c + 7 * i) as u8;
                let img =
                    image::RgbImage::from_fn(side, side, |x, y| image::Rgb([shade, (x * 3) as u8, (y * 3) as u8]));
                img.save(class_dir.join(format!("{i}.png"))).unwrap();
            }
        }
    }
}

/// torchvision weights through the binary: a full-size torchvision-layout state dict (1000
/// classes) imported with --classes 4 (fresh fc8), evaluated, fine-tuned with `train --resume`
/// on another dataset and rate, and exported again with the fine-tuned conv weights.
#[test]
fn torchvision_weights_import_evaluate_fine_tune_and_export() {
    use burn::backend::Flex;
    use owt_models::torchvision::export_safetensors;
    let dir = tempfile::tempdir().unwrap();
    let side = 67;
    let pretrained = dir.path().join("alexnet.safetensors");
    let model = owt_models::AlexNetOwtConfig::new().with_input(side).init::<Flex>(&Default::default());
    std::fs::write(&pretrained, export_safetensors(&model).unwrap()).unwrap();
    let data = dir.path().join("data");
    write_rgb_folder(&data, 4, 3, side as u32 + 10);
    let run = dir.path().join("run");
    let (p, d, r) = (pretrained.to_str().unwrap(), data.to_str().unwrap(), run.to_str().unwrap());
    let net = ["--model", "alexnet-owt", "--input", "67", "--classes", "4"];
    let o = owt(&[&["import", "--from", "torchvision", p, "--out", r][..], &net].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fc8 left freshly initialised: the file has 1000 classes, the network 4"),
        "{}",
        stderr(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("imported 14 tensors"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = owt(&["eval", "--checkpoint", r, "--dataset", "folder", "--data", d]);
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("(12 images)"), "{}", stderr(&o));
    // Ten-crop testing: the printed figures are the library's on the same ten patches.
    let o = owt(&["eval", "--checkpoint", r, "--dataset", "folder", "--data", d, "--ten-crop"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (imported, state) = owt::train::load_model::<Flex>(&run, &Default::default()).unwrap();
    // The import records what torchvision's weights expect of their input.
    let spec = &state.config.model;
    assert_eq!(spec.pixel_norm, owt_models::PixelNorm::IMAGENET);
    assert_eq!((spec.resize, spec.resize_filter), (Some(76), owt_models::ResizeFilter::Bilinear));
    let request = owt::data::DataRequest {
        dir: Some(data.clone()),
        ..owt::data::DataRequest::new(owt::data::DatasetKind::Folder, [3, side, side])
    }
    .resized_as(spec);
    let crops = std::sync::Arc::new(owt::data::open_ten_crop_split(&request).unwrap());
    let e = owt::train::ten_crop::evaluate_ten_crop(
        &imported,
        state.config.head,
        &state.config.model.pixel_norm,
        crops,
        &Default::default(),
        owt::train::input::Preparation::all_cores(2),
    )
    .unwrap();
    let want =
        format!("test accuracy {:.2}% (12 images, ten patches each), test loss {:.4}", 100.0 * e.accuracy, e.loss);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&want), "{} vs {want}", String::from_utf8_lossy(&o.stdout));
    let fashion = owt(&["eval", "--checkpoint", r, "--dataset", "fashion-mnist", "--ten-crop"]);
    assert_one_line_error(&fashion, &["--ten-crop", "--dataset folder"]);
    // Fine-tuning: any dataset, batch and rate may start from the import; the network must match.
    let train = ["train", "--dataset", "folder", "--data", d, "--batch", "4", "--lr", "0.001", "--out", r, "--resume"];
    let o =
        owt(&[&train[..], &["--model", "alexnet-owt", "--input", "67", "--classes", "5", "--epochs", "1"]].concat());
    assert_one_line_error(&o, &["--classes 5", "--classes 4"]);
    // Another input side over the import's stored --resize 76: the network does not build, and
    // the refusal names the flag and both values (it said "model unset").
    let o =
        owt(&[&train[..], &["--model", "alexnet-owt", "--input", "99", "--classes", "4", "--epochs", "1"]].concat());
    assert_one_line_error(&o, &["cannot resume", "--input 99", "--input 67"]);
    assert!(!stderr(&o).contains("unset"), "{}", stderr(&o));
    let o = owt(&[&train[..], &net, &["--resize", "70", "--epochs", "1"]].concat());
    assert_one_line_error(&o, &["cannot resume", "--resize 70", "--resize 76"]);
    let o = owt(&[&train[..], &net, &["--epochs", "1"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("starting from the weights imported from torchvision"), "{}", stderr(&o));
    // Exported, the fine-tuned conv1 is what the checkpoint holds, in PyTorch's layout.
    let back = dir.path().join("back.safetensors");
    let o = owt(&["export", "--checkpoint", r, "--to", "torchvision", "--out", back.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The fine-tuned network kept the import's input and says what PyTorch must feed it.
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("mean [0.485, 0.456, 0.406]")
            && said.contains("Resize(76, interpolation=InterpolationMode.BILINEAR)"),
        "{said}"
    );
    let (tuned, _) = owt::train::load_model::<Flex>(&run, &Default::default()).unwrap();
    let mut store = burn_store::SafetensorsStore::from_file(&back);
    use burn_store::ModuleStore;
    let conv1 = store.get_snapshot("features.0.weight").unwrap().unwrap().to_data().unwrap();
    assert_eq!(conv1, tuned.conv(1).weight.val().into_data());
    assert_ne!(conv1, model.conv(1).weight.val().into_data(), "fine-tuning changed nothing");
    let fc6 = store.get_snapshot("classifier.1.weight").unwrap().unwrap();
    assert_eq!(fc6.shape.to_vec(), [4096, 9216]);
    let o = owt(&["export", "--checkpoint", r, "--to", "torchvision", "--out", "x.pth"]);
    assert_one_line_error(&o, &["x.pth", ".safetensors"]);
}

#[test]
fn plan_predicts_times_on_a_profile_and_refuses_half_a_profile() {
    let o = owt(&["plan", "--model", "alexnet-small", "--devices", "2", "--batch", "16", "--profile", "cpu"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("predicted on cpu"), "{out}");
    // One speedup row per K, K = 1 being 1.00x by definition.
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.split_whitespace().next().is_some_and(|k| ["1", "2", "4", "8"].contains(&k)))
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    assert!(rows[0].contains("1.00x"), "{}", rows[0]);
    assert_one_line_error(
        &owt(&[
            "plan",
            "--model",
            "alexnet-small",
            "--devices",
            "2",
            "--batch",
            "16",
            "--tflops",
            "1",
            "--link-gbps",
            "1",
        ]),
        &["--mem-gbps is missing"],
    );
    assert_one_line_error(
        &owt(&["plan", "--model", "alexnet-small", "--devices", "2", "--batch", "16", "--profile", "tpu"]),
        &["unknown --profile", "h200-nvlink"],
    );
}

/// `owt plan --profile --json` carries the cost model's figures: the profile, the step's
/// prediction (equal to the library's on the same dry run), the 1, 2, 4, 8 devices table and
/// the 1..8 nodes table; on a 2-D mesh too.
#[test]
fn plan_json_carries_the_cost_models_figures() {
    let json = |args: &[&str]| -> serde_json::Value {
        let o = owt(args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let base = ["plan", "--model", "alexnet-small", "--batch", "16", "--profile", "h200-nvlink-ib", "--json"];
    let flat = json(&[&base[..], &["--devices", "2"]].concat());
    let cost = &flat["cost"];
    assert_eq!(cost["profile"]["name"], "h200-nvlink-ib");
    assert_eq!(cost["profile"]["uplinks"][0]["span"], 8, "{cost}");
    let arch = ModelSpec::new(ModelKind::AlexNetSmall).architecture().unwrap();
    let plan = owt_hybrid::PlanKind::WeirdTrick.plan();
    let dry = owt::parallel::PlanDryRun {
        arch: &arch,
        plan: &plan,
        ranks: 2,
        batch: 16,
        scheme: owt_hybrid::Exchange::AllGather,
        head: owt_models::Head::Softmax,
        fc_update: owt::train::FcUpdate::PerStep,
        wire: owt_hybrid::WirePrecision::Native,
    };
    let want = dry.run().unwrap().predict(&owt_hybrid::DeviceProfile::preset("h200-nvlink-ib").unwrap());
    let serial = cost["prediction"]["serial_s"].as_f64().unwrap();
    assert!((serial - want.serial_s).abs() <= 1e-12 * want.serial_s, "{serial} vs {}", want.serial_s);
    assert_eq!(cost["prediction"]["phases"].as_array().unwrap().len(), want.phases.len());
    let ks: Vec<u64> = cost["speedups"].as_array().unwrap().iter().map(|r| r["devices"].as_u64().unwrap()).collect();
    assert_eq!(ks, [1, 2, 4, 8]);
    assert!((cost["speedups"][0]["speedup"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    let nodes = cost["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 8);
    assert_eq!(nodes[7]["grid_weird_trick"]["devices"], 64);
    // On one node the 2-D mesh is the flat one.
    assert_eq!(nodes[0]["grid_weird_trick"]["step_ms"], nodes[0]["flat_weird_trick"]["step_ms"]);
    // bf16 on the wire moves half the bytes: every step with traffic is predicted shorter.
    for row in nodes {
        for (f32, bf16) in [("data_parallel", "data_parallel_bf16"), ("grid_weird_trick", "grid_weird_trick_bf16")] {
            let (a, b) = (row[f32]["step_ms"].as_f64().unwrap(), row[bf16]["step_ms"].as_f64().unwrap());
            assert!(b < a, "{} nodes, {bf16}: {b} ms against {a}", row["nodes"]);
        }
    }
    let halved = json(&[&base[..], &["--devices", "2", "--wire", "bf16"]].concat());
    let total = |v: &serde_json::Value| v["total_bytes"].as_u64().unwrap();
    // Half, but for the loss's labels (ints) and readouts, which keep their precision.
    assert!(total(&halved) * 2 >= total(&flat) && total(&halved) * 200 < total(&flat) * 101, "{halved}");
    assert_eq!(halved["cost"]["nodes"][3]["data_parallel"]["step_ms"], nodes[3]["data_parallel_bf16"]["step_ms"]);
    let grid = json(&[&base[..], &["--mesh", "2,2"]].concat());
    assert!(grid["cost"]["prediction"]["comm_s"].as_f64().unwrap() > 0.0, "{grid}");
    assert!(grid["traffic"]["total_bytes"].as_u64().unwrap() > 0);
    // A node per process is the same mesh; any other process count is refused.
    let per_node = json(&[&base[..], &["--mesh", "2,2", "--processes", "2"]].concat());
    assert_eq!(per_node["traffic"], grid["traffic"]);
    assert_one_line_error(
        &owt(&[&base[..], &["--mesh", "2,2", "--processes", "3"]].concat()),
        &["--mesh 2,2 over 3 processes"],
    );
}

#[test]
fn bench_compares_the_three_schemes_side_by_side() {
    let args = ["--batch", "8", "--devices", "2", "--warmup", "1", "--steps", "2", "--compare-schemes"];
    let reports = bench_json(&args);
    let reports = reports.as_array().expect("one report per scheme");
    let layouts: Vec<&str> = reports.iter().map(|r| r["layout"].as_str().unwrap()).collect();
    assert_eq!(
        layouts,
        [
            "2 ranks, plan weird-trick, scheme a",
            "2 ranks, plan weird-trick, scheme b",
            "2 ranks, plan weird-trick, scheme c"
        ]
    );
    // The schemes move the same bytes and compute the same steps; only messages and timing differ.
    let bytes: Vec<f64> = reports.iter().map(|r| r["bytes_per_step"].as_f64().unwrap()).collect();
    assert!(bytes[0] > 0.0 && bytes.iter().all(|b| *b == bytes[0]), "{bytes:?}");
    let losses = |r: &serde_json::Value| -> Vec<f64> {
        r["losses"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
    };
    for r in &reports[1..] {
        for (a, b) in losses(r).iter().zip(losses(&reports[0])) {
            assert!((a - b).abs() <= 1e-5 * b.abs(), "{}: {:?} vs {:?}", r["layout"], losses(r), losses(&reports[0]));
        }
        assert!(r["median_step_ms"].as_f64().unwrap() > 0.0);
    }
    let o = owt(&["bench", "--model", "alexnet-small", "--batch", "8", "--compare-schemes"]);
    assert_one_line_error(&o, &["--compare-schemes", "--devices 2 or more", "got --devices 1"]);
    let text = owt(&[
        "bench",
        "--model",
        "alexnet-small",
        "--batch",
        "8",
        "--devices",
        "2",
        "--warmup",
        "0",
        "--steps",
        "1",
        "--compare-schemes",
    ]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.lines().filter(|l| l.contains("plan weird-trick, scheme")).count(), 3, "{text}");
}

#[test]
fn a_mesh_whose_rank_count_overflows_is_refused_in_words() {
    for extra in [&["plan"][..], &["train", "--dataset", "synthetic"][..]] {
        let o = owt(&[extra, &["--model", "alexnet-small", "--mesh", "4294967296,4294967296"][..]].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "a usage error: {err}");
        assert!(
            err.contains("4294967296 x 4294967296 ranks: expected at most 4294967295") && !err.contains("internal"),
            "{err}"
        );
    }
}

#[test]
fn a_plan_that_splits_the_input_along_another_dim_than_the_batch_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, json: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, json).unwrap();
        path.to_str().unwrap().to_string()
    };
    for d in [1, 2, 4] {
        let flat = write(
            &format!("flat{d}.json"),
            &format!(r#"{{"name": "odd", "rules": [], "default": "Replicate", "input": {{"Shard": {d}}}}}"#),
        );
        let grid = write(
            &format!("grid{d}.json"),
            &format!(
                r#"{{"name": "odd-2d", "rules": [], "default": ["Replicate", "Replicate"], "input": [{{"Shard": 0}}, {{"Shard": {d}}}]}}"#
            ),
        );
        for (mesh, file) in [(["--devices", "2"], &flat), (["--mesh", "2,2"], &grid)] {
            for cmd in [&["train", "--dataset", "synthetic", "--limit", "32"][..], &["plan"][..]] {
                let o = owt(
                    &[cmd, &["--model", "alexnet-small", "--batch", "16", "--plan-file", file], &mesh[..]].concat()
                );
                assert_one_line_error(&o, &[&format!("places the input Shard({d})"), "expected Replicate"]);
            }
        }
    }
}
