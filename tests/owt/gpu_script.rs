//! scripts/gpu-run.sh fits a GPU lent for 15 minutes: a dry run of its two calls, with a stub
//! `owt` and `python3` that sleep for what each case took on the H200 run of 2026-12-04
//! (scripts/gpu-run-durations.tsv), runs every case of each call to the end within the device
//! tool's 8 minutes a call; and the same dry run fails, naming the case, where a case takes
//! longer than its limit.

use std::process::Command;

fn dry_run(args: &[&str]) -> (bool, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let o = Command::new("bash").arg(format!("{root}/scripts/gpu-run-dry.sh")).args(args).output().expect("run bash");
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr))
}

/// The seconds a call took at 2026-12-04's durations, from the dry run's line for it.
fn seconds(said: &str, call: u32) -> f64 {
    let line = said.lines().find(|l| l.starts_with(&format!("call {call}: ")) && l.contains("as measured"));
    let line = line.unwrap_or_else(|| panic!("no line for call {call}: {said}"));
    let before = line.split(" s as measured").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn both_calls_of_the_gpu_script_run_every_case_within_eight_minutes_at_measured_durations() {
    let (ok, said) = dry_run(&["20"]);
    assert!(ok, "{said}");
    for call in [1, 2] {
        let s = seconds(&said, call);
        assert!(s > 300.0 && s <= 480.0, "call {call}: {s} s\n{said}");
    }
    assert!(
        said.contains("call 1: 5 cases (torch, owt_resident, owt_strict_resident, mesh_one_device, mesh_2ranks)"),
        "{said}"
    );
}

#[test]
fn a_case_slower_than_its_limit_fails_the_dry_run_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let durations =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/gpu-run-durations.tsv")).unwrap();
    let slow = durations.replace("owt_resident\t295.73", "owt_resident\t400");
    assert_ne!(slow, durations);
    let path = dir.path().join("slow.tsv");
    std::fs::write(&path, slow).unwrap();
    let (ok, said) = dry_run(&["20", path.to_str().unwrap(), "1"]);
    assert!(!ok, "{said}");
    assert!(said.contains("call 1: owt_resident: rc 124 (timed out at its limit)"), "{said}");
}
