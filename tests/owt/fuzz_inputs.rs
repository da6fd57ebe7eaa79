//! Random plan files and flag combinations, fed to `owt plan` and `owt train` (issue 39 point
//! 7): whatever they say, owt answers with a result or a refusal in words, never a panic (exit
//! 101), an abort (134) or an "internal" error. The draws are seeded, so a failure repeats;
//! each case is printed before it runs.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

fn pick<'a, T>(rng: &mut StdRng, from: &'a [T]) -> &'a T {
    &from[rng.random_range(0..from.len())]
}

/// A placement as a plan file may spell it, valid or not.
fn placement(rng: &mut StdRng) -> Value {
    match rng.random_range(0..20) {
        0..=7 => json!("Replicate"),
        8..=13 => json!({ "Shard": rng.random_range(0..2) }),
        14 => json!({ "Shard": rng.random_range(2..5) }),
        15 => json!({ "Partial": "Sum" }),
        16 => json!({ "Shard": -1 }),
        17 => json!({ "Shard": u64::MAX }),
        _ => json!(pick(rng, &["Shard", "replicate", "", "Partial"])),
    }
}

/// A placement of a 1-D plan, or of a 2-D plan's (outer, inner) pair.
fn placement_for(rng: &mut StdRng, grid: bool) -> Value {
    if grid {
        if rng.random_bool(0.1) {
            return json!([placement(rng)]);
        }
        json!([placement(rng), placement(rng)])
    } else {
        placement(rng)
    }
}

/// A plan file's text: mostly well-formed JSON with random rules and placements, sometimes
/// with fields missing, of the wrong type, or not JSON at all.
fn plan_file(rng: &mut StdRng, grid: bool) -> String {
    const PATTERNS: [&str; 12] = [
        "fc*.weight",
        "fc*.bias",
        "conv*.weight",
        "conv1.weight",
        "fc6.weight",
        "fc7.*",
        "fc8.*",
        "conv*",
        "*",
        "nothing",
        "",
        "**",
    ];
    let rules: Vec<Value> = (0..rng.random_range(0..4))
        .map(|_| json!({ "pattern": pick(rng, &PATTERNS), "placement": placement_for(rng, grid) }))
        .collect();
    let mut plan = json!({
        "name": pick(rng, &["fuzz", "", "weird-trick"]),
        "rules": rules,
        "default": placement_for(rng, grid),
        "input": placement_for(rng, grid),
    });
    if rng.random_bool(0.1) {
        plan["ranks"] = json!(pick(rng, &[0u64, 1, 2, 3, u64::MAX]));
    }
    if rng.random_bool(0.1) {
        plan["towers"] = json!(pick(rng, &[0u64, 1, 2, 7]));
    }
    match rng.random_range(0..20) {
        0 => "{ not json".to_string(),
        1 => json!([1, 2, 3]).to_string(),
        2 => {
            plan.as_object_mut().unwrap().remove("rules");
            plan.to_string()
        }
        3 => {
            plan["rules"] = json!("fc*");
            plan.to_string()
        }
        _ => plan.to_string(),
    }
}

/// What a command must never print or exit with; whether it succeeded.
fn check(args: &[String], o: &std::process::Output) -> bool {
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let code = o.status.code();
    assert!(code.is_some(), "owt {args:?} was killed by a signal: {err}");
    assert!(!matches!(code, Some(101) | Some(134)), "owt {args:?} exited {code:?}: {err}");
    for text in [&out, &err] {
        assert!(!text.contains("internal") && !text.contains("panicked"), "owt {args:?}: {text}");
    }
    if !o.status.success() {
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(lines.len(), 1, "owt {args:?} failed without one error line: {err}");
    }
    o.status.success()
}

fn owt(args: &[String]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_owt")).args(args).output().expect("run owt")
}

/// Flags a plan or a training run could be given, each with values valid and not.
fn model_flags(rng: &mut StdRng, args: &mut Vec<String>) {
    let mut push = |flag: &str, value: String| {
        args.push(flag.to_string());
        args.push(value);
    };
    if rng.random_bool(0.3) {
        push("--towers", pick(rng, &["1", "2", "2", "1", "0", "3"]).to_string());
    }
    if rng.random_bool(0.2) {
        push("--input", pick(rng, &["28", "33", "28", "0", "7"]).to_string());
    }
    if rng.random_bool(0.2) {
        push("--classes", pick(rng, &["10", "12", "1", "0", "4294967297"]).to_string());
    }
    if rng.random_bool(0.2) {
        push("--channels", pick(rng, &["1", "3", "1", "0", "4"]).to_string());
    }
    if rng.random_bool(0.3) {
        push("--scheme", pick(rng, &["a", "b", "c", "a", "b", "c", "d", ""]).to_string());
    }
    if rng.random_bool(0.2) {
        push("--fc-update", pick(rng, &["per-step", "per-chunk", "per-step", "sometimes"]).to_string());
    }
    if rng.random_bool(0.2) {
        push("--head", pick(rng, &["softmax", "logistic", "softmax", "svm"]).to_string());
    }
}

/// Where the ranks go: `--devices D` or `--mesh N,L` (sometimes both, sometimes odd).
fn mesh_flags(rng: &mut StdRng, args: &mut Vec<String>) {
    if rng.random_bool(0.3) {
        let mesh = pick(rng, &["2,2", "3,2", "2,1", "1,4", "2,2", "3,2", "0,2", "2,", "x", "4294967296,2"]);
        args.extend(["--mesh".to_string(), mesh.to_string()]);
        if rng.random_bool(0.1) {
            args.extend(["--devices".to_string(), "4".to_string()]);
        }
    } else {
        let devices = pick(rng, &["1", "2", "3", "4", "2", "4", "0"]);
        args.extend(["--devices".to_string(), devices.to_string()]);
    }
}

#[test]
fn random_plan_files_and_flags_are_answered_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(39);
    let (mut planned, mut trained) = (0, 0);
    // owt plan: a dry run, fast; many cases.
    for case in 0..120 {
        let mut args: Vec<String> = ["plan", "--model", "alexnet-small"].map(String::from).to_vec();
        mesh_flags(&mut rng, &mut args);
        args.extend(["--batch".to_string(), pick(&mut rng, &["16", "24", "32", "5", "8", "1", "0"]).to_string()]);
        if rng.random_bool(0.6) {
            let grid = args.iter().any(|a| a == "--mesh") != rng.random_bool(0.1);
            let file = dir.path().join(format!("plan{case}.json"));
            std::fs::write(&file, plan_file(&mut rng, grid)).unwrap();
            args.extend(["--plan-file".to_string(), file.to_str().unwrap().to_string()]);
        } else if rng.random_bool(0.5) {
            let plan = pick(&mut rng, &["weird-trick", "two-tower", "data-parallel", "model-parallel"]);
            args.extend(["--plan".to_string(), plan.to_string()]);
        }
        model_flags(&mut rng, &mut args);
        if rng.random_bool(0.3) {
            args.push("--json".to_string());
        }
        eprintln!("case {case}: owt {}", args.join(" "));
        planned += usize::from(check(&args, &owt(&args)));
    }
    // owt train: a few steps of tiny synthetic runs, on meshes of Flex ranks.
    for case in 0..30 {
        let out = dir.path().join(format!("run{case}"));
        let mut args: Vec<String> =
            ["train", "--model", "alexnet-small", "--dataset", "synthetic", "--epochs", "1"].map(String::from).to_vec();
        args.extend(["--out".to_string(), out.to_str().unwrap().to_string()]);
        args.extend(["--limit".to_string(), pick(&mut rng, &["8", "13", "16"]).to_string()]);
        args.extend(["--batch".to_string(), pick(&mut rng, &["4", "8", "3", "5", "1"]).to_string()]);
        mesh_flags(&mut rng, &mut args);
        if rng.random_bool(0.4) {
            let grid = args.iter().any(|a| a == "--mesh") != rng.random_bool(0.1);
            let file = dir.path().join(format!("train-plan{case}.json"));
            std::fs::write(&file, plan_file(&mut rng, grid)).unwrap();
            args.extend(["--plan-file".to_string(), file.to_str().unwrap().to_string()]);
        }
        model_flags(&mut rng, &mut args);
        eprintln!("train case {case}: owt {}", args.join(" "));
        trained += usize::from(check(&args, &owt(&args)));
    }
    // Not only refusals: the draws reach the dry runs and the training steps too.
    eprintln!("{planned} of 120 plans and {trained} of 30 runs succeeded");
    assert!(planned >= 12 && trained >= 3, "{planned} plans and {trained} runs succeeded");
}
