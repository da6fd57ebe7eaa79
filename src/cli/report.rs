//! `owt report`: draw a run directory's metrics as one picture.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::OwtError;
use crate::train::checkpoint::checkpoint_path;
use crate::train::metrics::MAX_METRICS_BYTES;
use crate::train::{Checkpoint, CheckpointState, EpochMetrics, METRICS_FILE};

/// Arguments of `owt report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory (the --out of `owt train`), holding metrics.json.
    pub run: PathBuf,
    /// The picture to write, .png or .svg (default: RUN/report.png, replaced on each report).
    /// An existing file there is refused unless --overwrite.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the file at --out if there is one.
    #[arg(long)]
    pub overwrite: bool,
    /// Draw the first layer's filters instead (RUN/filters.png, or --out), one block per
    /// tower, and print how colour-specific each tower's filters are.
    #[arg(long)]
    pub filters: bool,
}

/// The title of a run's picture: what was trained, how, and where (a run's metrics alone do
/// not say which model it was).
fn title(run: &Path, state: Option<&CheckpointState>, epochs: &[EpochMetrics]) -> String {
    let place = epochs.last().and_then(|m| m.layout.clone()).unwrap_or_default();
    match state {
        Some(state) => {
            let c = &state.config;
            format!("{} on {:?}, batch {}, lr {}, {place}", c.model.kind.name(), c.dataset, c.batch, c.describe_lr())
        }
        None => format!("{} ({place})", run.display()),
    }
}

/// The epochs to draw: the checkpoint's own (metrics.json is their copy, written just after
/// the checkpoint, so it may lag one epoch behind a run in progress), or metrics.json's where
/// the directory has no readable checkpoint. Metrics that are not the checkpoint's run's are
/// refused, naming both.
fn epochs_of(run: &Path, state: Option<&CheckpointState>) -> Result<Vec<EpochMetrics>, OwtError> {
    let path = run.join(METRICS_FILE);
    let json = match crate::host::bounded_read::read(&path, MAX_METRICS_BYTES, "a metrics file") {
        Ok(bytes) => Some(
            serde_json::from_slice::<Vec<EpochMetrics>>(&bytes)
                .map_err(|e| OwtError::input(format!("{} is not owt metrics: {e}", path.display())))?,
        ),
        Err(e) if state.is_some() && e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(OwtError::input(format!(
                "cannot read {}: {e} (expected the --out directory of an `owt train` run)",
                path.display()
            )))
        }
    };
    let Some(state) = state else {
        return json.ok_or_else(|| OwtError::input(format!("{} is missing", path.display())));
    };
    let Some(json) = json else { return Ok(state.metrics.clone()) };
    let copy_so_far = json.len() <= state.metrics.len() && json[..] == state.metrics[..json.len()];
    if copy_so_far {
        return Ok(state.metrics.clone());
    }
    Err(OwtError::input(format!(
        "{} does not belong to the run in {}: it has {} epochs, the checkpoint ({} after {} epochs{}) has {} others; remove it, or report the run that wrote it",
        path.display(),
        checkpoint_path(run).display(),
        json.len(),
        state.config.model.kind.name(),
        state.epochs_done,
        state.imported_from.as_deref().map(|o| format!(", imported from {o}")).unwrap_or_default(),
        state.metrics.len(),
    )))
}

/// Where the picture goes: `--out`, refused where a file is there already unless
/// `--overwrite` (it may be anything of the user's), or the run's own `default` picture, which
/// each report replaces.
fn destination(args: &ReportArgs, default: &str) -> Result<PathBuf, OwtError> {
    let Some(out) = args.out.clone() else { return Ok(args.run.join(default)) };
    if !args.overwrite && std::fs::symlink_metadata(&out).is_ok() {
        return Err(OwtError::input(format!("--out {} exists; pass --overwrite to replace it", out.display())));
    }
    Ok(out)
}

/// Reads the run's metrics and writes the picture.
pub fn run(args: &ReportArgs) -> Result<(), OwtError> {
    if args.filters {
        return filters(args);
    }
    let out = destination(args, "report.png")?;
    let state = Checkpoint::read_state(&args.run).ok();
    let epochs = epochs_of(&args.run, state.as_ref())?;
    crate::report::render(&title(&args.run, state.as_ref(), &epochs), &epochs, &out)?;
    println!("report of {} epochs written to {}", epochs.len(), out.display());
    Ok(())
}

/// `owt report RUN --filters`: conv1's filters drawn per tower, and each tower's colour
/// specificity.
fn filters(args: &ReportArgs) -> Result<(), OwtError> {
    let out = destination(args, "filters.png")?;
    if out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() != Some("png") {
        return Err(OwtError::input(format!("--filters draws a PNG: give --out a .png path, got {}", out.display())));
    }
    let (model, _) = crate::train::load_model::<burn::backend::Flex>(&args.run, &Default::default())?;
    let first = model.architecture.conv_name(1);
    let weight = model.conv(1).weight.val();
    let dims = weight.dims();
    let values: Vec<f32> = weight
        .into_data()
        .convert::<f32>()
        .to_vec()
        .map_err(|e| OwtError::checkpoint(format!("{first}'s weights do not read as floats: {e:?}")))?;
    let towers = model.architecture.towers.max(1);
    crate::report::filters::draw(&values, dims, towers, &out)?;
    println!(
        "{first}: {} filters of {} x {} x {}, in {towers} tower(s), drawn to {}",
        dims[0],
        dims[1],
        dims[2],
        dims[3],
        out.display()
    );
    for t in crate::report::filters::towers(&values, dims, towers) {
        let figure = t
            .colour_specificity
            .map(|s| format!("colour specificity {s:.3} (0: grey filters; 0.816: one channel alone, or random; 1: channels that cancel)"))
            .unwrap_or_else(|| "colour specificity n/a (one input channel)".to_string());
        println!("tower {}: {} filters, {figure}", t.tower, t.filters);
    }
    Ok(())
}
