//! Jobs of several processes under `mpirun` (loopback only, `--oversubscribe`): built with
//! `--features mpi`, run by `.ci/run` (`cargo test --locked --features mpi --test mpi`), not
//! by the README's test command (a default build needs no MPI).
//!
//! Every built-in plan (weird trick with schemes a, b and c, data-parallel, model-parallel,
//! two-tower) and per-chunk FC updates end a few steps of `owt train` under `mpirun -np P`
//! with `--devices K/P` with the same weights, bit for bit, as `owt train --devices K` in one
//! process, and the job's ledger (every process's summed) equals the one process's entry by
//! entry; runs resume across process counts; a killed process ends the job naming it, with
//! the last checkpoint intact; processes started with different flags refuse to start; and
//! `srun --mpi=pmix` from a one-node Slurm does what mpirun does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use owt::train::metrics::EpochMetrics;

const OWT: &str = env!("CARGO_BIN_EXE_owt");

/// `mpirun` on loopback, as root, over more processes than cores.
fn mpirun(processes: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "-np", &processes.to_string()]);
    c.args(["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]);
    // One Flex thread per process: the processes share two cores.
    c.args(["-x", "RAYON_NUM_THREADS=1"]);
    c
}

fn train_args(out: &Path, devices: usize, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "synthetic",
        "--limit",
        "96",
        "--batch",
        "32",
        "--seed",
        "5",
        "--devices",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(devices.to_string());
    args.extend(["--out".to_string(), out.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn check(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `owt train` in one process on `k` ranks.
fn in_process(out: &Path, k: usize, extra: &[&str]) -> Output {
    let out = Command::new(OWT).args(train_args(out, k, extra)).env("RAYON_NUM_THREADS", "1").output().unwrap();
    check(out, "owt train in one process")
}

/// `owt train` as `p` processes of `k / p` ranks.
fn across(out: &Path, p: usize, k: usize, extra: &[&str]) -> Output {
    let out = mpirun(p).arg(OWT).args(train_args(out, k / p, extra)).output().unwrap();
    check(out, &format!("mpirun -np {p} owt train"))
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("owt-mpi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn metrics(out: &Path) -> Vec<EpochMetrics> {
    serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap()
}

/// The trained weights (every parameter's path and values, read from the checkpoint) and the
/// epochs done.
fn weights(out: &Path) -> (Vec<(String, Vec<f64>)>, usize) {
    let (model, state) = owt::train::load_model::<burn::backend::Flex>(out, &Default::default()).unwrap();
    (owt_hybrid::parameter_values(&model), state.epochs_done)
}

/// The largest relative difference between two runs' weights, tensor by tensor (the norm of
/// the difference over the norm of the tensor); panics unless the same parameters.
fn weight_gap(a: &Path, b: &Path) -> f64 {
    let ((wa, ea), (wb, eb)) = (weights(a), weights(b));
    assert_eq!(ea, eb, "epochs done");
    assert_eq!(wa.len(), wb.len(), "parameter count");
    wa.iter()
        .zip(&wb)
        .map(|((pa, va), (pb, vb))| {
            assert_eq!(pa, pb, "parameter order");
            let diff: f64 = va.iter().zip(vb).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt();
            let norm: f64 = va.iter().map(|x| x * x).sum::<f64>().sqrt();
            diff / norm.max(f64::MIN_POSITIVE)
        })
        .fold(0.0, f64::max)
}

fn same_traffic(one: &Path, many: &Path, what: &str) {
    let (a, b) = (metrics(one), metrics(many));
    for (x, y) in a.iter().zip(&b) {
        let (cx, cy) = (x.communication.as_ref().unwrap(), y.communication.as_ref().unwrap());
        assert_eq!(cx.bytes_per_step, cy.bytes_per_step, "{what}: bytes per step");
        assert_eq!(cx.messages_per_step, cy.messages_per_step, "{what}: messages per step");
        assert_eq!(cx.by_phase, cy.by_phase, "{what}: traffic by layer and phase");
        assert_eq!(cx.by_collective, cy.by_collective, "{what}: traffic by collective");
        assert_eq!(cx.cross_process_bytes_per_step, None, "{what}: nothing crosses inside one process");
        assert!(cy.cross_process_bytes_per_step.unwrap() > 0.0, "{what}: bytes crossed processes");
        assert_eq!((x.train_loss, x.test_accuracy), (y.train_loss, y.test_accuracy), "{what}: the epoch's figures");
    }
}

#[test]
fn every_plan_across_processes_ends_with_the_weights_of_one_process() {
    let cases: [(&str, &[&str]); 7] = [
        ("weird-trick-a", &["--plan", "weird-trick", "--scheme", "a"]),
        ("weird-trick-b", &["--plan", "weird-trick", "--scheme", "b"]),
        ("weird-trick-c", &["--plan", "weird-trick", "--scheme", "c"]),
        ("per-chunk", &["--plan", "weird-trick", "--scheme", "b", "--fc-update", "per-chunk"]),
        ("data-parallel", &["--plan", "data-parallel"]),
        ("model-parallel", &["--plan", "model-parallel", "--towers", "1"]),
        ("two-tower", &["--plan", "two-tower"]),
    ];
    for (name, flags) in cases {
        for (p, k) in [(2, 2), (4, 4), (2, 4)] {
            if name == "two-tower" && k != 2 {
                continue; // two towers: two ranks
            }
            let mut extra = flags.to_vec();
            extra.extend(["--epochs", "1"]);
            let (one, many) = (dir(&format!("{name}-{k}-one")), dir(&format!("{name}-{p}x{}", k / p)));
            in_process(&one, k, &extra);
            across(&many, p, k, &extra);
            let what = format!("{name}, {p} processes x {} ranks against 1 x {k}", k / p);
            let gap = weight_gap(&one, &many);
            assert_eq!(gap, 0.0, "{what}: the weights after 3 steps differ by {gap:e} (relative)");
            same_traffic(&one, &many, &what);
            eprintln!("{what}: the same weights bit for bit, the same ledger");
        }
    }
}

/// Whether a Slurm controller answers here (`scripts/slurm-localhost.sh` starts one).
fn slurm_answers() -> bool {
    Command::new("sinfo").args(["-h", "-o", "%T"]).output().is_ok_and(|o| {
        let states = String::from_utf8_lossy(&o.stdout);
        o.status.success() && ["idle", "mix", "alloc"].iter().any(|s| states.contains(s))
    })
}

/// `srun --mpi=pmix -n P owt train --devices K/P` from Slurm (a one-node cluster on this
/// machine: `scripts/slurm-localhost.sh`, which `.ci/run` starts and then requires with
/// `OWT_REQUIRE_SLURM=1`): the processes Slurm starts meet through PMIx and MPI, their ranks
/// checked against Slurm's own variables (`SLURM_PROCID`, `SLURM_NTASKS`), and the job ends
/// with the weights of one process of K ranks bit for bit, the same ledger, and only process
/// 0 printing. Without a Slurm controller and without the requirement it says so and ends.
#[test]
fn srun_with_pmix_runs_the_job_as_one_process_does() {
    if !slurm_answers() {
        assert!(
            std::env::var_os("OWT_REQUIRE_SLURM").is_none(),
            "OWT_REQUIRE_SLURM is set but no Slurm controller answers: run scripts/slurm-localhost.sh first"
        );
        eprintln!("no Slurm controller answers here (scripts/slurm-localhost.sh starts one): srun not tried");
        return;
    }
    let flags = ["--plan", "weird-trick", "--scheme", "b", "--epochs", "1"];
    for (p, k) in [(2, 4), (4, 4)] {
        let (one, many) = (dir(&format!("srun-{k}-one")), dir(&format!("srun-{p}x{}", k / p)));
        in_process(&one, k, &flags);
        let run = Command::new("srun")
            .args(["--mpi=pmix", "-n", &p.to_string(), "-O", "--kill-on-bad-exit=1", OWT])
            .args(train_args(&many, k / p, &flags))
            .env("RAYON_NUM_THREADS", "1")
            .env("OMPI_MCA_btl", "self,tcp")
            .env("OMPI_MCA_btl_tcp_if_include", "lo")
            .env("OMPI_MCA_oob_tcp_if_include", "lo")
            .output()
            .unwrap();
        let run = check(run, &format!("srun --mpi=pmix -n {p} owt train"));
        let what = format!("srun, {p} processes x {} ranks against 1 x {k}", k / p);
        let gap = weight_gap(&one, &many);
        assert_eq!(gap, 0.0, "{what}: the weights differ by {gap:e} (relative)");
        same_traffic(&one, &many, &what);
        let stdout = String::from_utf8_lossy(&run.stdout);
        let finals = stdout.lines().filter(|l| l.starts_with("final test accuracy")).count();
        assert_eq!(finals, 1, "{what}: only process 0 prints:\n{stdout}");
        eprintln!("{what}: the same weights bit for bit, the same ledger");
    }
}

#[test]
fn a_run_resumes_on_another_number_of_processes_as_if_uninterrupted() {
    let flags = ["--plan", "weird-trick", "--scheme", "c"];
    let whole = dir("resume-whole");
    in_process(&whole, 2, &[&flags[..], &["--epochs", "2"]].concat());
    // Two processes for the first epoch, one process (two ranks) for the second.
    let a = dir("resume-2-then-1");
    across(&a, 2, 2, &[&flags[..], &["--epochs", "1"]].concat());
    in_process(&a, 2, &[&flags[..], &["--epochs", "2", "--resume"]].concat());
    assert_eq!(weight_gap(&a, &whole), 0.0, "2 processes, then resumed on 1");
    // And the reverse.
    let b = dir("resume-1-then-2");
    in_process(&b, 2, &[&flags[..], &["--epochs", "1"]].concat());
    across(&b, 2, 2, &[&flags[..], &["--epochs", "2", "--resume"]].concat());
    assert_eq!(weight_gap(&b, &whole), 0.0, "1 process, then resumed on 2");
}

#[test]
fn a_killed_process_ends_the_job_naming_it_and_the_last_checkpoint_stays() {
    let out = dir("killed");
    let started = Instant::now();
    let run = mpirun(2)
        .args(["-x", "OWT_FAULT=sigkill:1:2:1"])
        .arg(OWT)
        .args(train_args(&out, 1, &["--plan", "data-parallel", "--epochs", "3"]))
        .env("OWT_COLLECTIVE_TIMEOUT", "60")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the job must fail when a process is killed");
    assert!(took < Duration::from_secs(90), "the job ended in {took:?}");
    assert!(stderr.contains("rank 1") && stderr.contains("signal 9"), "mpirun names the lost rank:\n{stderr}");
    assert_eq!(weights(&out).1, 1, "the checkpoint of epoch 1 is intact");
    eprintln!("a killed process ended the job in {:.1} s", took.as_secs_f64());
}

#[test]
fn processes_started_with_different_flags_refuse_to_start_naming_the_difference() {
    let out = dir("different");
    let run = mpirun(1)
        .arg(OWT)
        .args(train_args(&out, 1, &["--plan", "data-parallel", "--lr", "0.01"]))
        .arg(":")
        .args(["-np", "1"])
        .arg(OWT)
        .args(train_args(&out, 1, &["--plan", "data-parallel", "--lr", "0.02"]))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("process 1 was started with config.lr = 0.02, process 0 with config.lr = 0.01"),
        "{stderr}"
    );
    assert!(!out.join("checkpoint.owt").exists(), "nothing was trained");
}

#[test]
fn a_plan_the_whole_mesh_cannot_take_is_the_one_line_error_of_one_process() {
    let out = dir("two-tower-4");
    let run = mpirun(2).arg(OWT).args(train_args(&out, 2, &["--plan", "two-tower"])).output().unwrap();
    let one =
        Command::new(OWT).args(train_args(&dir("two-tower-4-one"), 4, &["--plan", "two-tower"])).output().unwrap();
    assert!(!run.status.success() && !one.status.success());
    let line = |o: &Output| {
        String::from_utf8_lossy(&o.stderr).lines().find(|l| l.starts_with("error:")).unwrap_or_default().to_string()
    };
    let (many, single) = (line(&run), line(&one));
    assert!(!single.is_empty(), "one process names the problem");
    assert!(
        many.ends_with(single.trim_start_matches("error: ")),
        "the job's error ({many}) is one process's ({single})"
    );
}

/// `owt train --mesh 2,2` (flags as [`train_args`], with `--mesh` instead of `--devices`).
fn grid_args(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = train_args(out, 1, extra);
    let at = args.iter().position(|a| a == "--devices").expect("--devices");
    args.splice(at..at + 2, ["--mesh".to_string(), "2,2".to_string()]);
    args
}

/// A 2-D mesh across processes, one node per process (`mpirun -np 2 owt train --mesh 2,2`):
/// the nodes' group is MPI instead of threads, and nothing else changes: the same weights bit
/// for bit as the two nodes run as threads of one process (whose f64 equality to one device
/// is `tests/parallel_training`'s), the same ledger entry by entry, the same bytes across
/// nodes. Any other process count is refused in one line.
#[test]
fn a_two_dimensional_mesh_across_processes_trains_as_its_nodes_in_one_process() {
    let fsdp = dir("grid-fsdp-plan").join("fsdp.json");
    std::fs::create_dir_all(fsdp.parent().unwrap()).unwrap();
    std::fs::write(&fsdp, FSDP_PLAN).unwrap();
    let fsdp = fsdp.to_str().unwrap();
    for (name, flags) in [
        ("grid-wt-b", &["--plan", "weird-trick", "--scheme", "b"][..]),
        ("grid-dp", &["--plan", "data-parallel"]),
        ("grid-fsdp", &["--plan-file", fsdp]),
    ] {
        let extra = [flags, &["--epochs", "1"]].concat();
        let (one, many) = (dir(&format!("{name}-threads")), dir(&format!("{name}-processes")));
        let threads = Command::new(OWT).args(grid_args(&one, &extra)).env("RAYON_NUM_THREADS", "1").output().unwrap();
        check(threads, "owt train --mesh 2,2 in one process");
        check(mpirun(2).arg(OWT).args(grid_args(&many, &extra)).output().unwrap(), "mpirun -np 2 owt train --mesh 2,2");
        let gap = weight_gap(&one, &many);
        assert_eq!(gap, 0.0, "{name}: the weights differ by {gap:e} (relative)");
        for (x, y) in metrics(&one).iter().zip(&metrics(&many)) {
            let (cx, cy) = (x.communication.as_ref().unwrap(), y.communication.as_ref().unwrap());
            assert_eq!(cx.by_collective, cy.by_collective, "{name}: traffic by collective");
            assert_eq!(cx.by_phase, cy.by_phase, "{name}: traffic by layer and phase");
            assert_eq!(cx.cross_process_bytes_per_step, cy.cross_process_bytes_per_step, "{name}: bytes across nodes");
            assert!(cx.by_collective["all_reduce[node]"].bytes > 0.0);
            assert_eq!((x.train_loss, x.test_accuracy), (y.train_loss, y.test_accuracy), "{name}");
            assert!(x.layout.as_deref().unwrap().starts_with("2-D mesh (node 2 x local 2)"));
        }
        eprintln!("{name}: 2 processes as nodes of a (2, 2) mesh, the same weights bit for bit as threads");
    }
    let run = mpirun(4).arg(OWT).args(grid_args(&dir("grid-4"), &["--epochs", "1"])).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains("--mesh 2,2 over 4 processes"), "{stderr}");
}

#[path = "../common/f64_steps.rs"]
mod f64_steps;
#[path = "../common/relative_gap.rs"]
mod relative_gap;

/// A plan per dimension that stores parameters as each node's slice (FSDP-style): FC weights
/// by rows over the nodes and by columns inside them, every conv parameter by its first dim
/// over the nodes, FC biases replicated over them.
const FSDP_PLAN: &str = r#"{"name": "fsdp-weird-trick", "rules": [
    {"pattern": "fc*.weight", "placement": [{"Shard": 0}, {"Shard": 1}]},
    {"pattern": "fc*.bias", "placement": ["Replicate", {"Shard": 0}]}],
  "default": [{"Shard": 0}, "Replicate"], "input": [{"Shard": 0}, {"Shard": 0}]}"#;

/// The child of [`a_two_dimensional_mesh_across_processes_is_exact_in_f64`]: run by it under
/// `mpirun -np 2` (this test binary itself, with `OWT_F64_GRID_CHILD` set), each process one
/// node of a (2, 2) mesh of f64 Flex ranks joined by MPI, 4 SGD steps of the weird trick
/// inside each node, data-parallel and then FSDP-style across; prints its weights' gap to
/// one device's, which it also trains.
#[test]
#[ignore = "a child process: run under mpirun by a_two_dimensional_mesh_across_processes_is_exact_in_f64"]
fn f64_grid_child() {
    use burn::backend::Flex;
    use f64_steps::*;
    use owt_hybrid::{Exchange, GridLayout, GridMesh, MeshDevice, PlanKind, SingleDevice};
    use relative_gap::relative_gap;
    if std::env::var_os("OWT_F64_GRID_CHILD").is_none() {
        return;
    }
    let processes = owt::processes::Processes::join().unwrap();
    let spec = small(2);
    let config = config(spec.clone(), 16, owt::train::FcUpdate::PerStep);
    let weights = initial_weights(&spec);
    let (want, want_losses) = run::<Ref, _>(&SingleDevice::<Ref>::new(Default::default()), &config, &weights, 4);
    let local = MeshDevice::virtual_ranks(Default::default(), 2);
    use_f64::<H>(&local);
    // The weird trick inside the nodes, data-parallel across; and FSDP-style across (FC
    // weights and every conv parameter stored as each node's slice).
    let fsdp: owt_hybrid::GridPlan = serde_json::from_str(FSDP_PLAN).unwrap();
    for plan in [owt_hybrid::GridPlan::data_parallel_across(&PlanKind::WeirdTrick.plan()), fsdp] {
        let grid = GridMesh::new(processes.group(), local.clone()).unwrap();
        let node = grid.node();
        let layout = GridLayout::<Flex>::with_plan(grid, &plan, Exchange::Broadcast).unwrap();
        let (got, losses) = run::<H, _>(&layout, &config, &weights, 4);
        let (gap, worst) = relative_gap(&got, &want);
        let loss_gap = losses.iter().zip(&want_losses).map(|(a, b)| (a - b).abs() / b.abs()).fold(0.0, f64::max);
        println!("OWT_GRID_GAP node={node} plan={} gap={gap:e} worst={worst} loss_gap={loss_gap:e}", plan.name);
    }
    // Both processes end MPI together, as the owt binary does on success.
    owt::processes::finish();
}

/// A (2, 2) mesh across 2 processes, one node each, joined by MPI: the weights after 4 f64
/// SGD steps under the weird trick (scheme b inside the nodes; data-parallel across, and
/// with parameters sharded over the nodes) are within 1e-12 of one device's on both processes (tests/parallel_training does the same for nodes as threads).
#[test]
fn a_two_dimensional_mesh_across_processes_is_exact_in_f64() {
    let exe = std::env::current_exe().unwrap();
    let out = mpirun(2)
        .args(["-x", "OWT_F64_GRID_CHILD=1"])
        .arg(exe)
        .args(["--exact", "f64_grid_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .output()
        .unwrap();
    let out = check(out, "mpirun -np 2 (the f64 child)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let gaps: Vec<(String, f64, f64)> = stdout
        .lines()
        .filter_map(|l| l.split_once("OWT_GRID_GAP ").map(|(_, rest)| rest.to_string()))
        .map(|l| {
            let field = |k: &str| l.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap().to_string();
            let node = format!("{} ({})", field("node="), field("plan="));
            (node, field("gap=").parse().unwrap(), field("loss_gap=").parse().unwrap())
        })
        .collect();
    assert_eq!(gaps.len(), 4, "one line per process and plan:\n{stdout}");
    for (node, gap, loss_gap) in &gaps {
        assert!(*gap <= 1e-12 && *loss_gap <= 1e-12, "node {node}: weights {gap:e}, losses {loss_gap:e}\n{stdout}");
        eprintln!("node {node} of a (2, 2) mesh across 2 processes: weight gap {gap:.2e} to one device (f64)");
    }
}
