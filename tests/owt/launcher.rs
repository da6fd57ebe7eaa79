//! Which launcher started owt, read as Open MPI and PyTorch Lightning read it: Slurm's task
//! variables make a job of several processes only within a job step (`srun`); the shell of
//! `sbatch -n 4` or `salloc -n 4` has them too, and an owt started there plainly is one process.

use std::process::{Command, Output};

/// `owt train` on a few synthetic images with exactly the launcher variables `vars`.
fn train_under(vars: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_owt"));
    cmd.args(["train", "--model", "alexnet-small", "--dataset", "synthetic", "--limit", "32", "--batch", "32"])
        .args(["--epochs", "1", "--out", out.to_str().unwrap()])
        .current_dir(dir.path());
    for (name, _) in std::env::vars() {
        if ["SLURM_", "OMPI_", "PMIX_", "PMI_"].iter().any(|p| name.starts_with(p))
            || ["RANK", "WORLD_SIZE", "LOCAL_RANK"].contains(&name.as_str())
        {
            cmd.env_remove(name);
        }
    }
    cmd.envs(vars.iter().copied()).output().expect("run owt")
}

/// What `sbatch -n 4` gives its batch shell (and `salloc -n 4` its shell): no step.
const BATCH_SHELL: [(&str, &str); 5] = [
    ("SLURM_JOB_ID", "4711"),
    ("SLURM_PROCID", "0"),
    ("SLURM_NTASKS", "4"),
    ("SLURM_LOCALID", "0"),
    ("SLURM_NNODES", "1"),
];

#[test]
fn a_slurm_batch_shell_runs_one_process_and_says_what_it_read() {
    let o = train_under(&BATCH_SHELL);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "a batch shell is one process, not process 0 of 4: {err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("SLURM_NTASKS")).collect();
    assert_eq!(said.len(), 1, "one line on what was read: {err}");
    for part in ["SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_STEP_ID", "one process", "srun"] {
        assert!(said[0].contains(part), "{part:?} not in {:?}", said[0]);
    }
    assert!(!err.contains("process 0 of 4"), "{err}");
}

#[test]
fn within_a_srun_step_the_same_variables_are_a_job_of_four() {
    if cfg!(feature = "mpi") {
        return; // joining MPI alone would wait for 3 processes a test cannot start
    }
    for step in ["SLURM_STEP_ID", "SLURM_STEPID"] {
        let mut vars = BATCH_SHELL.to_vec();
        vars.push((step, "0"));
        let o = train_under(&vars);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{step}: {err}");
        assert!(err.contains("process 0 of 4") && err.contains("`mpi` feature"), "{step}: {err}");
        assert!(!err.contains("SLURM_STEP_ID (a batch"), "{step}: nothing said of a batch shell: {err}");
    }
}
