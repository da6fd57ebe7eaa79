//! What the launcher that started this process says about it: its rank among the job's
//! processes, their number, and its rank among the processes of its node (which picks its
//! GPUs). Read from the variables the usual launchers set, so a program can tell before
//! starting MPI whether it is one of many.

/// A launcher's description of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The launcher, by the variables it set: `"Open MPI"`, `"Slurm"`, `"PMIx"` or `"torchrun"`.
    pub launcher: &'static str,
    /// This process's rank in the job, 0..size.
    pub rank: usize,
    /// Processes in the job.
    pub size: usize,
    /// This process's rank among the job's processes on its node (0 when not given).
    pub local_rank: usize,
}

/// (launcher, rank variable, size variable, local rank variable), in the order they are
/// looked for: mpirun's own first, then Slurm's (`srun`, only within a job step: see
/// [`SLURM_STEP`]), PMIx's, torchrun's.
const LAUNCHERS: [(&str, &str, &str, &str); 4] = [
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    ("PMIx", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK"),
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
];

/// The variables only a Slurm job step has (`srun` sets both spellings). `sbatch` and `salloc`
/// set `SLURM_PROCID` and `SLURM_NTASKS` in the batch shell too, where one process runs: a
/// job's processes are Slurm's only within a step, as Open MPI and PyTorch Lightning read it.
pub const SLURM_STEP: [&str; 2] = ["SLURM_STEP_ID", "SLURM_STEPID"];

impl Launch {
    /// From this process's environment; `None` when no launcher set its variables.
    pub fn from_env() -> Result<Option<Launch>, String> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// From the variables `var` gives: the first launcher whose rank and size are both set.
    /// Unparsable or inconsistent values are an error naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Launch>, String> {
        for (launcher, rank, size, local) in LAUNCHERS {
            let (Some(r), Some(s)) = (var(rank), var(size)) else { continue };
            if launcher == "Slurm" && SLURM_STEP.iter().all(|v| var(v).is_none()) {
                continue;
            }
            let number = |name: &str, value: &str| {
                value.trim().parse::<usize>().map_err(|_| format!("{name}={value:?} is not a whole number"))
            };
            let (r, s) = (number(rank, &r)?, number(size, &s)?);
            let l = match var(local) {
                Some(v) => number(local, &v)?,
                None => 0,
            };
            if s == 0 || r >= s {
                return Err(format!("{rank}={r} is not a rank of {size}={s} processes"));
            }
            return Ok(Some(Launch { launcher, rank: r, size: s, local_rank: l }));
        }
        Ok(None)
    }

    /// One line saying what was read when Slurm's task variables are set outside a job step
    /// (a batch shell of `sbatch -n 4` or `salloc -n 4`), where this runs as one process:
    /// `None` otherwise, and `None` where another launcher's variables decided.
    pub fn slurm_outside_a_step(var: impl Fn(&str) -> Option<String>) -> Option<String> {
        let (Some(rank), Some(tasks)) = (var("SLURM_PROCID"), var("SLURM_NTASKS")) else { return None };
        if SLURM_STEP.iter().any(|v| var(v).is_some()) || Self::from_vars(&var).ok().flatten().is_some() {
            return None;
        }
        Some(format!(
            "Slurm's SLURM_PROCID={rank} and SLURM_NTASKS={tasks} are set but not SLURM_STEP_ID (a batch or salloc shell, not a step that srun started): running as one process; start the job's processes with `srun owt ...`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn each_launchers_variables_are_read_mpirun_first() {
        let mpirun =
            [("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_LOCAL_RANK", "1")];
        assert_eq!(
            Launch::from_vars(vars(&mpirun)).unwrap(),
            Some(Launch { launcher: "Open MPI", rank: 1, size: 4, local_rank: 1 })
        );
        let srun = [("SLURM_PROCID", "5"), ("SLURM_NTASKS", "8"), ("SLURM_LOCALID", "1"), ("SLURM_STEP_ID", "0")];
        assert_eq!(
            Launch::from_vars(vars(&srun)).unwrap().map(|l| (l.launcher, l.rank, l.size)),
            Some(("Slurm", 5, 8))
        );
        let torchrun = [("RANK", "0"), ("WORLD_SIZE", "2")];
        assert_eq!(
            Launch::from_vars(vars(&torchrun)).unwrap(),
            Some(Launch { launcher: "torchrun", rank: 0, size: 2, local_rank: 0 })
        );
        let both = [
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_STEP_ID", "0"),
        ];
        assert_eq!(Launch::from_vars(vars(&both)).unwrap().map(|l| l.launcher), Some("Open MPI"));
        assert_eq!(Launch::from_vars(vars(&[])).unwrap(), None);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = Launch::from_vars(vars(&[("RANK", "x"), ("WORLD_SIZE", "2")])).unwrap_err();
        assert!(err.contains("RANK=\"x\""), "{err}");
        let err = Launch::from_vars(vars(&[("SLURM_PROCID", "4"), ("SLURM_NTASKS", "4"), ("SLURM_STEPID", "2")]))
            .unwrap_err();
        assert!(err.contains("SLURM_PROCID=4") && err.contains("SLURM_NTASKS=4"), "{err}");
    }

    #[test]
    fn slurms_variables_start_processes_only_within_a_step() {
        // What `sbatch -n 4` and `salloc -n 4` give their shell: the job's task count, no step.
        let batch = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4"), ("SLURM_LOCALID", "0"), ("SLURM_JOB_ID", "17")];
        assert_eq!(Launch::from_vars(vars(&batch)).unwrap(), None);
        let line = Launch::slurm_outside_a_step(vars(&batch)).unwrap();
        for said in ["SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_STEP_ID", "one process", "srun"] {
            assert!(line.contains(said), "{said:?} missing from {line:?}");
        }
        assert!(!line.contains('\n'), "one line: {line:?}");
        // Within a step, either spelling (srun sets both; older Slurm only SLURM_STEPID).
        for step in SLURM_STEP {
            let mut within = batch.to_vec();
            within.push((step, "0"));
            assert_eq!(
                Launch::from_vars(vars(&within)).unwrap(),
                Some(Launch { launcher: "Slurm", rank: 0, size: 4, local_rank: 0 }),
                "{step}"
            );
            assert_eq!(Launch::slurm_outside_a_step(vars(&within)), None, "{step}");
        }
        // mpirun inside an allocation: Open MPI's variables decide, and nothing is said of Slurm's.
        let mut mpirun = batch.to_vec();
        mpirun.extend([("OMPI_COMM_WORLD_RANK", "2"), ("OMPI_COMM_WORLD_SIZE", "4")]);
        assert_eq!(Launch::from_vars(vars(&mpirun)).unwrap().map(|l| (l.launcher, l.rank)), Some(("Open MPI", 2)));
        assert_eq!(Launch::slurm_outside_a_step(vars(&mpirun)), None);
        // No Slurm at all: nothing to say.
        assert_eq!(Launch::slurm_outside_a_step(vars(&[])), None);
    }
}
