//! Refusals that name their real cause: a plan rule that can never apply (first match wins),
//! and `owt import`/`owt export` naming each setting that differs from torchvision's layout.

use crate::cli::{owt, stderr};

fn one_line_refusal(o: &std::process::Output) -> String {
    let err = stderr(o);
    assert!(!o.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!err.contains("internal") && !err.contains("panicked"), "{err}");
    err
}

#[test]
fn a_plan_files_rule_that_can_never_apply_is_refused_on_every_mesh() {
    let dir = tempfile::tempdir().unwrap();
    let flat = dir.path().join("flat.json");
    std::fs::write(
        &flat,
        r#"{"name": "mine", "rules": [{"pattern": "fc*.weight", "placement": {"Shard": 1}},
            {"pattern": "fc6.weight", "placement": "Replicate"}], "default": "Replicate",
            "input": {"Shard": 0}, "ranks": null, "towers": null}"#,
    )
    .unwrap();
    let grid = dir.path().join("grid.json");
    std::fs::write(
        &grid,
        r#"{"name": "mine2d", "rules": [{"pattern": "fc6.bias", "placement": ["Replicate", {"Shard": 0}]},
            {"pattern": "fc6.bias", "placement": [{"Shard": 0}, "Replicate"]}], "default": ["Replicate", "Replicate"],
            "input": [{"Shard": 0}, {"Shard": 0}]}"#,
    )
    .unwrap();
    let flat_file = flat.to_str().unwrap();
    let base = ["--model", "alexnet-small", "--batch", "16"];
    for (what, extra, needles) in [
        (
            "plan, 1-D",
            vec!["plan", "--devices", "2", "--plan-file", flat_file],
            vec![
                "rule 2 \"fc6.weight\" (Replicate, matching fc6.weight)",
                "rule 1 \"fc*.weight\" (Shard(1)",
                "first matching rule wins",
            ],
        ),
        (
            "train, 1-D",
            vec!["train", "--dataset", "synthetic", "--devices", "2", "--plan-file", flat_file],
            vec!["rule 2 \"fc6.weight\"", "rule 1 \"fc*.weight\""],
        ),
        (
            "plan, 2-D",
            vec!["plan", "--mesh", "2,2", "--plan-file", grid.to_str().unwrap()],
            vec![
                "rule 2 \"fc6.bias\" ([Shard(0), Replicate]",
                "repeats the pattern of rule 1",
                "rule 1 \"fc6.bias\" ([Replicate, Shard(0)]",
            ],
        ),
    ] {
        let o = owt(&[&extra[..1], &base[..], &extra[1..]].concat());
        let err = one_line_refusal(&o);
        for n in needles {
            assert!(err.contains(n), "{what}: {n:?} not in {err}");
        }
    }
}

#[test]
fn import_and_export_name_each_setting_that_differs_from_torchvisions_layout() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("weights.safetensors");
    std::fs::write(&file, b"not read: the layout is refused first").unwrap();
    let out = dir.path().join("imported");
    for (flags, needles) in [
        (
            &["--model", "vgg11", "--adaptive-pool", "none"][..],
            &["adaptive pool: none (--adaptive-pool none)", "7x7 (--adaptive-pool 7)"][..],
        ),
        (&["--model", "vgg16-bn", "--adaptive-pool", "2"][..], &["2x2 (--adaptive-pool 2)"][..]),
        (&["--model", "alexnet-2012"][..], &["towers: 2", "response normalisation after conv1, conv2"][..]),
        (&["--model", "alexnet-small", "--towers", "1"][..], &["alexnet-small", "dropout before fc7, fc8"][..]),
    ] {
        let args =
            [&["import", "--from", "torchvision", file.to_str().unwrap(), "--out", out.to_str().unwrap()][..], flags]
                .concat();
        let err = one_line_refusal(&owt(&args));
        for n in needles {
            assert!(err.contains(n), "{flags:?}: {n:?} not in {err}");
        }
        assert!(!err.contains("or a vgg"), "{flags:?}: {err}");
    }
    assert!(!out.exists(), "nothing written");
    // Export of a trained network of another layout: its settings, from its checkpoint.
    let run = dir.path().join("run");
    let o = owt(&[
        "train",
        "--model",
        "alexnet-small",
        "--dataset",
        "synthetic",
        "--limit",
        "16",
        "--batch",
        "16",
        "--epochs",
        "1",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let exported = dir.path().join("small.safetensors");
    let o = owt(&[
        "export",
        "--checkpoint",
        run.to_str().unwrap(),
        "--to",
        "torchvision",
        "--out",
        exported.to_str().unwrap(),
    ]);
    let err = one_line_refusal(&o);
    assert!(err.contains("towers: 2 (grouped convolutions, --towers 2)") && err.contains("--towers 1"), "{err}");
    assert!(!exported.exists());
}

/// A flag its mode would ignore is refused in clap's one line (exit 2) naming the flag and the
/// mode: `owt bench --loader` with a mesh, a plan, a wire or a backend (cuda on a build without
/// it included), a run on one device with a mesh's flags. `owt::cli::flag_modes` holds the
/// table, and its test walks every flag of each subcommand against each mode.
#[test]
fn flags_a_mode_would_ignore_are_refused_in_one_line() {
    let loader = ["bench", "--loader", "--steps", "1", "--warmup", "0", "--batch", "4"];
    for extra in [
        &["--devices", "2"][..],
        &["--mesh", "2,2"][..],
        &["--plan", "weird-trick"][..],
        &["--wire", "bf16"][..],
        &["--backend", "cuda"][..],
    ] {
        let o = owt(&[&loader[..], extra].concat());
        let err = one_line_refusal(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(&format!("'{}'", extra[0])) && err.contains("with --loader"), "{extra:?}: {err}");
    }
    // The loader alone runs.
    let o = owt(&loader);
    assert!(o.status.success(), "{}", stderr(&o));
    let train = ["train", "--model", "alexnet-small", "--dataset", "synthetic", "--out", "run"];
    for extra in [&["--scheme", "b"][..], &["--wire", "bf16"][..], &["--overlap-sync"][..], &["--base-batch", "64"][..]]
    {
        let err = one_line_refusal(&owt(&[&train[..], extra].concat()));
        assert!(err.contains(&format!("'{}'", extra[0])) && err.contains("it would be ignored"), "{extra:?}: {err}");
    }
}
