//! This process among the processes of one job: alone (the usual case), or one of the P
//! processes that `mpirun -np P` or `srun --mpi=pmix` started (a Slurm batch shell alone is one
//! process: Slurm's processes are a job step's), which together run one mesh of
//! P x L ranks (`--devices L` each). Joined once, at the start of a command, before any
//! backend starts; process 0 is the one that prints progress and writes the run directory.

use std::sync::{Arc, OnceLock};

use owt_hybrid::{Launch, ProcessGroup, Solo};

use crate::error::OwtError;

/// Seconds a collective waits for the other processes before this one gives up (a peer that
/// hangs): `OWT_COLLECTIVE_TIMEOUT` overrides it.
pub const DEFAULT_TIMEOUT_S: u64 = 600;

/// The processes of this job.
#[derive(Clone)]
pub struct Processes {
    group: Arc<dyn ProcessGroup>,
    launch: Option<Launch>,
}

impl std::fmt::Debug for Processes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Processes({})", self.group.describe())
    }
}

static JOINED: OnceLock<Processes> = OnceLock::new();

#[cfg(feature = "mpi")]
static MPI: OnceLock<Arc<owt_hybrid::MpiGroup>> = OnceLock::new();

#[cfg(feature = "mpi")]
fn timeout() -> Result<std::time::Duration, OwtError> {
    match std::env::var("OWT_COLLECTIVE_TIMEOUT") {
        Err(_) => Ok(std::time::Duration::from_secs(DEFAULT_TIMEOUT_S)),
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| *s > 0.0 && s.is_finite())
            .map(std::time::Duration::from_secs_f64)
            .ok_or_else(|| {
                OwtError::input(format!("OWT_COLLECTIVE_TIMEOUT={v:?}: expected a number of seconds above 0"))
            }),
    }
}

impl Processes {
    /// The processes of this job, joined on first call (the same afterwards): one process
    /// unless a launcher started several, which then meet through MPI. Errors name what is
    /// wrong with the launch (a build without the `mpi` feature, torchrun, an MPI that sees a
    /// different job than the launcher's variables).
    pub fn join() -> Result<Processes, OwtError> {
        if let Some(p) = JOINED.get() {
            return Ok(p.clone());
        }
        let launch = Launch::from_env().map_err(OwtError::input)?;
        if launch.is_none() {
            if let Some(line) = Launch::slurm_outside_a_step(|name| std::env::var(name).ok()) {
                crate::err_line!("owt: {line}");
            }
        }
        let group: Arc<dyn ProcessGroup> = match &launch {
            None => Arc::new(Solo),
            Some(l) if l.size == 1 => Arc::new(Solo),
            Some(l) if l.launcher == "torchrun" => {
                return Err(OwtError::input(format!(
                    "started by torchrun as process {} of {}: owt joins processes through MPI; launch with `mpirun -np {} owt ...` or `srun --mpi=pmix -n {} owt ...`",
                    l.rank, l.size, l.size, l.size
                )))
            }
            Some(l) => join_mpi(l)?,
        };
        let joined = Processes { group, launch };
        Ok(JOINED.get_or_init(|| joined).clone())
    }

    /// One process only (what library callers and tests without a launcher get).
    pub fn solo() -> Processes {
        Processes { group: Arc::new(Solo), launch: None }
    }

    /// The group the mesh's collectives cross.
    pub fn group(&self) -> Arc<dyn ProcessGroup> {
        self.group.clone()
    }

    /// Processes in the job (P).
    pub fn count(&self) -> usize {
        self.group.size()
    }

    /// This process's index, 0..P.
    pub fn index(&self) -> usize {
        self.group.rank()
    }

    /// Whether this process prints progress and writes the run directory (process 0).
    pub fn primary(&self) -> bool {
        self.index() == 0
    }

    /// This process's rank among the job's processes on its node (which GPUs it takes).
    pub fn local_rank(&self) -> usize {
        if self.count() == 1 {
            return 0;
        }
        self.launch.as_ref().map_or(0, |l| l.local_rank)
    }

    /// Refuses to go on unless every process was started with the same `settings` (the
    /// command's flags that shape the run): the first difference from process 0's is named,
    /// on every process. Nothing to compare in a job of one.
    pub fn check_same(&self, settings: &serde_json::Value) -> Result<(), OwtError> {
        let p = self.count();
        if p == 1 {
            return Ok(());
        }
        let mine = serde_json::to_vec(settings).map_err(|e| OwtError::io(e.to_string()))?;
        let all = self.group.all_to_all(vec![mine; p]).map_err(|e| OwtError::backend(e.to_string()))?;
        let first: serde_json::Value = serde_json::from_slice(&all[0]).map_err(|e| OwtError::io(e.to_string()))?;
        for (q, bytes) in all.iter().enumerate().skip(1) {
            let theirs: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| OwtError::io(e.to_string()))?;
            if let Some((key, a, b)) = first_difference(&first, &theirs, "") {
                return Err(OwtError::input(format!(
                    "process {q} was started with {key} = {b}, process 0 with {key} = {a}: every process of a job must run the same command"
                )));
            }
        }
        Ok(())
    }
}

/// The first field (a dotted path) where `a` and `b` differ, with both values.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let path = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
                let (va, vb) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                first_difference(va, vb, &path)
            })
        }
        _ if a == b => None,
        _ => Some((at.to_string(), a.to_string(), b.to_string())),
    }
}

#[cfg(feature = "mpi")]
fn join_mpi(launch: &Launch) -> Result<Arc<dyn ProcessGroup>, OwtError> {
    let group =
        Arc::new(owt_hybrid::MpiGroup::join(timeout()?).map_err(|e| OwtError::backend(format!("starting MPI: {e}")))?);
    if group.size() != launch.size || group.rank() != launch.rank {
        return Err(OwtError::backend(format!(
            "{} says this is process {} of {}, but MPI sees process {} of {}: the MPI owt was built with is not the launcher's (check that mpirun and libmpi come from one installation)",
            launch.launcher,
            launch.rank,
            launch.size,
            group.rank(),
            group.size()
        )));
    }
    let _ = MPI.set(group.clone());
    Ok(group)
}

#[cfg(not(feature = "mpi"))]
fn join_mpi(launch: &Launch) -> Result<Arc<dyn ProcessGroup>, OwtError> {
    Err(OwtError::input(format!(
        "started by {} as process {} of {}, but this owt was built without the `mpi` feature: rebuild with `cargo build --release --features mpi` (needs libopenmpi-dev and libclang-dev)",
        launch.launcher, launch.rank, launch.size
    )))
}

/// Ends the job's MPI, if it was joined: a barrier, then `MPI_Finalize`. Called once, on
/// success, right before the process exits (which skips destructors).
pub fn finish() {
    #[cfg(feature = "mpi")]
    if let Some(group) = MPI.get() {
        group.finish();
    }
}

/// Bytes this process has handed MPI so far, in a job joined through MPI (`None` otherwise).
pub fn mpi_bytes_sent() -> Option<u64> {
    #[cfg(feature = "mpi")]
    if let Some(group) = MPI.get() {
        return Some(group.bytes_sent());
    }
    None
}

/// "process i of P: " in a job of several processes (prefixing their messages), else "".
pub fn prefix() -> String {
    match JOINED.get() {
        Some(p) if p.count() > 1 => format!("process {} of {}: ", p.index(), p.count()),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_is_named_by_its_path() {
        let a = json!({"config": {"lr": 0.01, "batch": 64}, "plan": "weird-trick"});
        let b = json!({"config": {"lr": 0.02, "batch": 64}, "plan": "weird-trick"});
        assert_eq!(first_difference(&a, &b, ""), Some(("config.lr".into(), "0.01".into(), "0.02".into())));
        assert_eq!(first_difference(&a, &a, ""), None);
        let c = json!({"config": {"lr": 0.01, "batch": 64}});
        assert_eq!(first_difference(&a, &c, "").map(|d| d.0), Some("plan".into()));
    }

    #[test]
    fn different_settings_are_refused_on_every_process_naming_the_field() {
        let outcomes = owt_hybrid::ThreadedGroup::run(3, |g| {
            let me = g.rank();
            let processes = Processes { group: Arc::new(g), launch: None };
            let lr = if me == 2 { 0.02 } else { 0.01 };
            processes.check_same(&json!({"config": {"lr": lr}, "model": "alexnet-small"}))
        });
        for outcome in outcomes {
            let err = outcome.expect_err("process 2 differs").to_string();
            assert!(
                err.contains("process 2 was started with config.lr = 0.02, process 0 with config.lr = 0.01"),
                "{err}"
            );
        }
        let same = owt_hybrid::ThreadedGroup::run(2, |g| {
            Processes { group: Arc::new(g), launch: None }.check_same(&json!({"lr": 0.01}))
        });
        assert!(same.iter().all(Result::is_ok));
    }
}
