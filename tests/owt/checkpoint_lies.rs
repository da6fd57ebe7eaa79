//! A checkpoint is checked before it is believed (issue 39 point 5): a state whose checksums
//! hold but which names another network than its records hold (another tower count, input
//! side, model or class count) is one line naming the tensor and both shapes, before any tensor
//! is built; a state no run can have is refused in words. (They ended in internal errors,
//! assertion panics, or, at 10 million classes, an allocation that aborted.)

use owt::train::{Checkpoint, CheckpointState};

use crate::faults::{ok, one_line_error, train};

fn owt(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_owt")).args(args).output().expect("run owt")
}

#[test]
fn a_state_that_names_another_network_than_its_records_is_refused_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(&train(&run, &[]));
    let good = Checkpoint::load(&run).unwrap();
    let lie = |name: &str, edit: &dyn Fn(&mut CheckpointState)| {
        let mut state = good.state.clone();
        edit(&mut state);
        let to = dir.path().join(name);
        std::fs::create_dir_all(&to).unwrap();
        Checkpoint::save(&to, &state, good.model_bytes(), good.optimizer_bytes()).unwrap();
        to
    };
    let cases: [(&str, &dyn Fn(&mut CheckpointState), &[&str]); 4] = [
        (
            "classes",
            &|s| s.config.model.classes = Some(10_000_000),
            &["fc8.weight is [256, 10] in the model record", "10000000 classes", "needs [256, 10000000]"],
        ),
        (
            "towers",
            &|s| s.config.model.towers = Some(1),
            &["conv2.weight is [64, 16, 5, 5] in the model record", "1 tower(s)", "needs [64, 32, 5, 5]"],
        ),
        (
            "input",
            &|s| s.config.model.input = Some(40),
            &["fc6.weight is [256, 256] in the model record", "input 1x40x40", "needs ["],
        ),
        (
            "model",
            &|s| {
                s.config.model.kind = owt_models::ModelKind::AlexNetOwt;
                s.config.model.towers = None;
                s.config.model.input = Some(67);
            },
            &["conv1.weight is [32, 1, 5, 5] in the model record", "alexnet-owt", "needs ["],
        ),
    ];
    for (name, edit, says) in cases {
        let at = lie(name, edit);
        let checkpoint = at.to_str().unwrap();
        let eval = owt(&["eval", "--checkpoint", checkpoint, "--dataset", "synthetic"]);
        let line = one_line_error(&eval, says);
        assert!(line.contains("checkpoint.owt"), "names the file: {line}");
        // A resume reads the same way (the flags as the lying state has them).
        let resume = train(&at, &["--resume", "--epochs", "2"]);
        one_line_error(&resume, &["checkpoint.owt"]);
    }
    // States no run can have.
    for (name, edit, says) in [
        (
            "epochs",
            &(|s: &mut CheckpointState| s.epochs_done = 7) as &dyn Fn(&mut CheckpointState),
            "7 epochs done of a run of 1",
        ),
        ("metrics", &|s: &mut CheckpointState| s.metrics.clear(), "1 epochs done, metrics for 0"),
        ("batch", &|s: &mut CheckpointState| s.config.batch = 0, "--batch must be at least 1"),
    ] {
        let at = lie(name, edit);
        let eval = owt(&["eval", "--checkpoint", at.to_str().unwrap(), "--dataset", "synthetic"]);
        one_line_error(&eval, &["its state is not a run's", says]);
    }
}
