//! `owt import` and `owt export`: torchvision's AlexNet and VGG state dicts to and from owt
//! checkpoints, so PyTorch users start from the weights they have and take owt's back.

use std::path::PathBuf;

use burn::backend::Flex;
use burn::module::Module;
use clap::{Args, ValueEnum};

use owt_models::{torchvision, PixelNorm, ResizeFilter};

use crate::cli::ModelArgs;
use crate::data::DatasetKind;
use crate::error::OwtError;
use crate::train::atomic::write_atomic;
use crate::train::checkpoint::record_to_bytes;
use crate::train::run_dir::{self, Existing};
use crate::train::writer_lock::WriterLock;
use crate::train::{load_model, Checkpoint, CheckpointState, TrainConfig, METRICS_FILE};

/// Where weights come from or go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Foreign {
    /// torchvision's `alexnet` state dict (`features.N`, `classifier.N`).
    Torchvision,
}

/// Arguments of `owt import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The layout of the file.
    #[arg(long, value_enum)]
    pub from: Foreign,
    /// The state dict: .pth / .pt (torch.save of the state dict), .safetensors, or a
    /// checkpoint of PyTorch's ImageNet example (.pth.tar, the state dict under `state_dict`).
    pub file: PathBuf,
    /// The network to load it into (alexnet-owt: torchvision's layout); --classes other than
    /// the file's keeps a freshly initialised fc8 for fine-tuning.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Run directory to write checkpoint.owt into; `owt train --resume --out DIR` then
    /// fine-tunes from it, `owt eval --checkpoint DIR` evaluates it.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace a checkpoint --out holds.
    #[arg(long)]
    pub overwrite: bool,
}

/// Arguments of `owt export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Run directory (or checkpoint file) to export.
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// The layout to write.
    #[arg(long, value_enum)]
    pub to: Foreign,
    /// The file to write: .safetensors (PyTorch: `model.load_state_dict(safetensors.torch.load_file(FILE))`).
    #[arg(long)]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    pub overwrite: bool,
}

/// Imports the file into a checkpoint.
pub fn import(args: &ImportArgs) -> Result<(), OwtError> {
    let mut spec = args.model.spec();
    // torchvision's weights were trained on ImageNet's mean and std and are evaluated after
    // its Resize(256) and CenterCrop(224): the checkpoint says so, unless told otherwise.
    if args.model.input_norm.is_none() {
        spec.pixel_norm = PixelNorm::IMAGENET;
    }
    if args.model.resize_filter.is_none() {
        spec.resize_filter = ResizeFilter::Bilinear;
    }
    let arch = spec.architecture()?;
    spec.resize = Some(spec.resize_side(arch.input[1]));
    torchvision::check_layout(&arch).map_err(|e| OwtError::input(e.0))?;
    let existing = if args.overwrite { Existing::Overwrite } else { Existing::Refuse };
    let _run_dir = run_dir::prepare(&args.out, existing, "import")?;
    check_import_file(&args.file, &arch)?;
    let model = arch.try_init::<Flex>(&Default::default())?;
    let (model, report) = torchvision::import(model, &args.file).map_err(|e| OwtError::checkpoint(e.0))?;
    let origin = format!("torchvision {}", args.file.display());
    // The run settings are placeholders: a fresh import is resumed by any run of this network.
    let state = CheckpointState {
        config: TrainConfig::new(spec.clone(), DatasetKind::Folder),
        epochs_done: 0,
        metrics: Vec::new(),
        imported_from: Some(origin),
        dataset: None,
    };
    let model_bytes = record_to_bytes::<Flex, _>(model.into_record())?;
    // The metrics of a run this import replaces belong to that run's model, not this one.
    remove_if_present(&args.out.join(METRICS_FILE))?;
    Checkpoint::save(&args.out, &state, &model_bytes, &[])?;
    if let Some(classes) = report.fresh_fc8 {
        crate::err_line!("fc8 left freshly initialised: the file has {classes} classes, the network {}", arch.classes);
    }
    if !report.unused.is_empty() {
        let shown: Vec<&str> = report.unused.iter().take(3).map(String::as_str).collect();
        crate::err_line!(
            "{} keys of the file not used by the network (such as {})",
            report.unused.len(),
            shown.join(", ")
        );
    }
    crate::out_line!(
        "imported {} tensors of {} into {} in {}; its input: {}, images resized ({}) to a shorter side of {} and the centre {} x {} cut",
        report.loaded,
        args.file.display(),
        arch.name,
        args.out.display(),
        spec.pixel_norm.formula(),
        spec.resize_filter.name(),
        spec.resize_side(arch.input[1]),
        arch.input[1],
        arch.input[1]
    );
    Ok(())
}

/// Writes a checkpoint's network as a torchvision state dict.
pub fn export(args: &ExportArgs) -> Result<(), OwtError> {
    if args.out.extension().and_then(|e| e.to_str()) != Some("safetensors") {
        return Err(OwtError::input(format!(
            "--out {}: owt exports safetensors, expected a name ending in .safetensors (PyTorch reads it with safetensors.torch.load_file)",
            args.out.display()
        )));
    }
    if args.out.is_dir() {
        return Err(OwtError::input(format!("--out {}: a directory, expected a file name", args.out.display())));
    }
    // Held to the end: a second export to the same file is refused while this one writes.
    let _lock = WriterLock::file(&args.out, "export", &format!("--out {}", args.out.display()))?;
    if args.out.exists() && !args.overwrite {
        return Err(OwtError::input(format!("--out {} exists; pass --overwrite to replace it", args.out.display())));
    }
    let (model, state) = load_model::<Flex>(&args.checkpoint, &Default::default())?;
    let bytes = torchvision::export_safetensors(&model).map_err(|e| OwtError::input(e.0))?;
    write_atomic(&args.out, &bytes)?;
    let spec = &state.config.model;
    let side = model.architecture.input[1];
    crate::out_line!(
        "exported {} as a torchvision state dict to {}; in PyTorch feed it {}, after Resize({}, interpolation={}) and CenterCrop({side})",
        model.architecture.name,
        args.out.display(),
        spec.pixel_norm.formula(),
        spec.resize_side(side),
        spec.resize_filter.torchvision()
    );
    Ok(())
}

/// Bytes a state dict may hold beyond its values: pickle or safetensors framing, key names,
/// and what PyTorch's ImageNet example saves beside the weights (epoch, accuracy, arch).
const STATE_DICT_OVERHEAD: u64 = 64 << 20;

/// Refuses an import file that is not a regular file (a directory said "No such device"), or
/// that is larger than a state dict of `arch` can be: its weights and, in a training
/// checkpoint, up to two optimizer buffers per weight, at 8 bytes a value.
fn check_import_file(path: &std::path::Path, arch: &owt_models::Architecture) -> Result<(), OwtError> {
    let params = arch.profile()?.total_params as u64;
    let limit = 3 * 8 * params + STATE_DICT_OVERHEAD;
    let what = format!("a torchvision state dict of {} ({params} parameters, optimizer state included)", arch.name);
    crate::host::bounded_read::open_regular(path)
        .and_then(|file| crate::host::bounded_read::check_size(&file, limit, &what))
        .map(|_| ())
        .map_err(|e| OwtError::checkpoint(format!("cannot read {}: {e}", path.display())))
}

/// Removes `path` if it is there.
fn remove_if_present(path: &std::path::Path) -> Result<(), OwtError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(OwtError::io(format!("cannot remove {}: {e}", path.display())))
        }
        _ => Ok(()),
    }
}
