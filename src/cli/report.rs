//! `owt report`: draw a run directory's metrics as one picture.

use std::path::PathBuf;

use clap::Args;

use crate::error::OwtError;
use crate::train::{Checkpoint, EpochMetrics};

/// Arguments of `owt report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory (the --out of `owt train`), holding metrics.json.
    pub run: PathBuf,
    /// The picture to write, .png or .svg (default: RUN/report.png).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The title of a run's picture: what was trained, how, and where, from its checkpoint when it
/// has one (a run's metrics alone do not say which model it was).
fn title(args: &ReportArgs, epochs: &[EpochMetrics]) -> String {
    let place = epochs.last().and_then(|m| m.layout.clone()).unwrap_or_default();
    match Checkpoint::read_state(&args.run) {
        Ok(state) => {
            let c = &state.config;
            format!("{} on {:?}, batch {}, lr {}, {place}", c.model.kind.name(), c.dataset, c.batch, c.describe_lr())
        }
        Err(_) => format!("{} ({place})", args.run.display()),
    }
}

/// Reads the run's metrics and writes the picture.
pub fn run(args: &ReportArgs) -> Result<(), OwtError> {
    let path = args.run.join("metrics.json");
    let bytes = std::fs::read(&path).map_err(|e| {
        OwtError::input(format!(
            "cannot read {}: {e} (expected the --out directory of an `owt train` run)",
            path.display()
        ))
    })?;
    let epochs: Vec<EpochMetrics> = serde_json::from_slice(&bytes)
        .map_err(|e| OwtError::input(format!("{} is not owt metrics: {e}", path.display())))?;
    let out = args.out.clone().unwrap_or_else(|| args.run.join("report.png"));
    crate::report::render(&title(args, &epochs), &epochs, &out)?;
    println!("report of {} epochs written to {}", epochs.len(), out.display());
    Ok(())
}
