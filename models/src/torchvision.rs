//! torchvision's AlexNet and VGG weights in and out: the state dict PyTorch users already
//! have (`torchvision.models.alexnet`, `vgg16_bn`, ..., saved as `.pth` or safetensors) read
//! into a [`ConvNet`] of the same layout (`alexnet-owt`, a VGG, or a narrower network of that
//! shape), and a [`ConvNet`] written back as a safetensors state dict PyTorch loads with
//! `load_state_dict`.
//!
//! Both go through Burn's `burn-store`: the keys are remapped (`features.N` / `classifier.N`
//! to `conv1`..`fc8`) and Linear weights transposed (PyTorch keeps them `[out, in]`, Burn
//! `[in, out]`) by its PyTorch adapters.
//!
//! ```
//! use burn::backend::Flex;
//! use owt_models::torchvision::{export_safetensors, import};
//! use owt_models::AlexNetOwtConfig;
//!
//! let device = Default::default();
//! let config = AlexNetOwtConfig::new().with_input(67).with_classes(10);
//! let trained = config.init::<Flex>(&device);
//! let file = std::env::temp_dir().join(format!("owt-doc-{}.safetensors", std::process::id()));
//! std::fs::write(&file, export_safetensors(&trained).unwrap()).unwrap(); // for PyTorch
//! let (back, report) = import(config.init::<Flex>(&device), &file).unwrap();
//! std::fs::remove_file(&file).unwrap();
//! assert_eq!(report.loaded, 16); // 8 weights, 8 biases
//! assert_eq!(back.fc8.weight.val().into_data(), trained.fc8.weight.val().into_data());
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use burn::prelude::*;
use burn_store::{
    BurnToPyTorchAdapter, KeyRemapper, ModuleSnapshot, ModuleStore, PyTorchToBurnAdapter, PytorchStore,
    SafetensorsStore,
};

use crate::architecture::Family;
use crate::stage::Stage;
use crate::{Architecture, ConvNet};

/// Each owt layer of `arch` (`conv1`, `bn1_1`, `fc6`) and the torchvision state-dict prefix
/// of the same layer (`features.0`, `features.1`, `classifier.0`): torchvision numbers the
/// modules of its `features` and `classifier` sequences, ReLUs, poolings and dropouts
/// included, which is the order of the architecture's stages.
///
/// ```
/// use owt_models::torchvision::keys;
/// use owt_models::{AlexNetOwtConfig, VggConfig};
///
/// let alexnet = keys(&AlexNetOwtConfig::new().architecture());
/// assert_eq!(alexnet[1], ("conv2".to_string(), "features.3".to_string()));
/// assert_eq!(alexnet[5], ("fc6".to_string(), "classifier.1".to_string()));
/// let vgg = keys(&VggConfig::new(11).with_batch_norm(true).architecture());
/// assert_eq!(vgg[2], ("conv2_1".to_string(), "features.4".to_string()));
/// assert_eq!(vgg[3], ("bn2_1".to_string(), "features.5".to_string()));
/// assert!(vgg.contains(&("fc7".to_string(), "classifier.3".to_string())));
/// ```
pub fn keys(arch: &Architecture) -> Vec<(String, String)> {
    let (mut features, mut classifier) = (0, 0);
    let mut keys = Vec::new();
    for stage in arch.stages() {
        let (sequence, index) = match stage {
            Stage::AvgPool | Stage::Flatten => continue,
            s if s.on_features() => ("classifier", &mut classifier),
            _ => ("features", &mut features),
        };
        if matches!(stage, Stage::Conv(_) | Stage::BatchNorm(_) | Stage::Fc(_)) {
            keys.push((arch.stage_name(stage), format!("{sequence}.{index}")));
        }
        *index += 1;
    }
    keys
}

/// Why weights cannot be moved between torchvision's layout and a network, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchvisionError(pub String);

impl std::fmt::Display for TorchvisionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TorchvisionError {}

fn error(message: impl Into<String>) -> TorchvisionError {
    TorchvisionError(message.into())
}

/// The torchvision key of a parameter or buffer path of `arch` (`fc6.weight` ->
/// `classifier.1.weight`, `bn1_1.gamma` -> `features.1.weight`).
pub fn torch_key(arch: &Architecture, owt_path: &str) -> Option<String> {
    let (layer, param) = owt_path.split_once('.')?;
    let param = match param {
        "gamma" => "weight",
        "beta" => "bias",
        p => p,
    };
    keys(arch).into_iter().find(|(owt, _)| owt == layer).map(|(_, torch)| format!("{torch}.{param}"))
}

/// Refuses an architecture whose layers are not laid out as torchvision's AlexNet (one
/// tower, no response normalisation, pooling after conv1, conv2, conv5, a 6x6 adaptive pool,
/// dropout in front of fc6 and fc7) or VGG (a 7x7 adaptive pool, dropout in front of fc7 and
/// fc8); widths may differ. The error names every setting that differs and torchvision's.
pub fn check_layout(arch: &Architecture) -> Result<(), TorchvisionError> {
    let differences = layout_differences(arch);
    if differences.is_empty() {
        return Ok(());
    }
    let family = match arch.family {
        Family::AlexNet => "AlexNet",
        Family::Vgg => "VGG",
    };
    Err(error(format!("{} differs from torchvision's {family} in {}", arch.name, differences.join("; "))))
}

/// Each way `arch` differs from torchvision's layout of its family: the setting, its value,
/// torchvision's, and the flag that gives torchvision's where one does.
fn layout_differences(arch: &Architecture) -> Vec<String> {
    // The layers named `name` numbered from `first` whose flag is on: "conv1, conv2", or "none".
    let layers = |on: &[bool], name: &str, first: usize| -> String {
        let named: Vec<String> =
            on.iter().enumerate().filter(|(_, &b)| b).map(|(i, _)| format!("{name}{}", first + i)).collect();
        if named.is_empty() {
            "none".into()
        } else {
            named.join(", ")
        }
    };
    let (side, dropout, pools, fix) = match arch.family {
        Family::AlexNet => (6, [true, true, false], Some([true, true, false, false, true]), "--model alexnet-owt"),
        Family::Vgg => (7, [false, true, true], None, "--adaptive-pool 7"),
    };
    let mut differences = Vec::new();
    let grouped: Vec<String> = arch
        .convs
        .iter()
        .enumerate()
        .filter(|(_, c)| c.groups != 1)
        .map(|(i, c)| format!("convolution {} in {} groups", i + 1, c.groups))
        .collect();
    if arch.towers != 1 {
        differences.push(format!(
            "its towers: {} (grouped convolutions, --towers {}), where torchvision's has one (--towers 1, or --model alexnet-owt)",
            arch.towers, arch.towers
        ));
    } else if !grouped.is_empty() {
        differences.push(format!("its {}, where torchvision's are ungrouped", grouped.join(", ")));
    }
    if arch.lrn_after.iter().any(|&l| l) {
        differences.push(format!(
            "its response normalisation after {}, where torchvision's has none (--model alexnet-owt)",
            layers(&arch.lrn_after, "conv", 1)
        ));
    }
    if let Some(pools) = pools.filter(|p| arch.pool_after.as_slice() != p.as_slice()) {
        differences.push(format!(
            "its max pools after {}, where torchvision's pools after {} (--model alexnet-owt)",
            layers(&arch.pool_after, "conv", 1),
            layers(&pools, "conv", 1)
        ));
    }
    if arch.adaptive_pool != Some(side) {
        // --adaptive-pool sets a VGG's; an AlexNet's is its model's own.
        let flag = |value: String| {
            if arch.family == Family::Vgg {
                format!(" (--adaptive-pool {value})")
            } else {
                String::new()
            }
        };
        let has = match arch.adaptive_pool {
            None => format!("none{}", flag("none".into())),
            Some(s) => format!("{s}x{s}{}", flag(s.to_string())),
        };
        differences
            .push(format!("its adaptive pool: {has}, where torchvision's averages the maps to {side}x{side} ({fix})"));
    }
    if arch.dropout_before_fc != dropout {
        differences.push(format!(
            "its dropout before {}, where torchvision's is before {}",
            layers(&arch.dropout_before_fc, "fc", 6),
            layers(&dropout, "fc", 6)
        ));
    }
    differences
}

/// The setting that decides the first dimension where a file's tensor for `owt` (`found`)
/// differs from the network's (`needed`), where one does: the input channels, fc6's input
/// (the adaptive pool), the FC width; the convolutions' widths are the model's own.
fn shape_setting(owt: &str, found: &[usize], needed: &[usize]) -> Option<String> {
    if found.len() != needed.len() {
        return None;
    }
    let dim = found.iter().zip(needed).position(|(f, n)| f != n)?;
    let setting = match (owt, dim) {
        ("conv1.weight" | "conv1_1.weight", 1) => "--channels",
        ("fc6.weight", 1) => "--adaptive-pool (fc6 reads the last maps, averaged to its side)",
        ("fc6.weight" | "fc6.bias" | "fc7.weight" | "fc7.bias", 0) | ("fc7.weight" | "fc8.weight", 1) => "--hidden",
        _ => return None,
    };
    Some(format!("dimension {dim} ({} here, {} in the file) follows {setting}", needed[dim], found[dim]))
}

/// Each parameter as a torchvision state dict holds it: (owt path, torchvision key, shape in
/// PyTorch's layout, Linear weights `[out, in]`).
/// Batch normalisation's running statistics are listed too: torchvision's state dict holds
/// them (`features.1.running_mean`), and evaluation needs them.
pub fn torch_parameters(arch: &Architecture) -> Result<Vec<(String, String, Vec<usize>)>, TorchvisionError> {
    let mut params = arch.parameters().map_err(|e| error(e.0))?;
    params.extend(arch.buffers());
    Ok(params
        .into_iter()
        .map(|(path, mut shape)| {
            if path.starts_with("fc") && path.ends_with(".weight") {
                shape.reverse();
            }
            let key = torch_key(arch, &path).expect("every layer has a torchvision key");
            (path, key, shape)
        })
        .collect())
}

/// What an import did besides loading the weights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// Tensors loaded.
    pub loaded: usize,
    /// fc8 was left as initialised: the file has another class count (fine-tuning).
    pub fresh_fc8: Option<usize>,
    /// Keys in the file no layer reads.
    pub unused: Vec<String>,
}

/// Keys as PyTorch's ImageNet example saves them, reduced to a plain state dict's: its
/// checkpoints nest the state dict under `state_dict` and wrap `features` (or the whole model)
/// in `DataParallel`, which adds `module.` (`state_dict.features.module.0.weight`).
const WRAPPED: (&str, &str) = (
    r"^(?:state_dict\.)?(?:module\.)?(features|classifier)\.(?:module\.)?(\d+)\.(weight|bias|running_mean|running_var|num_batches_tracked)$",
    "$1.$2.$3",
);

/// The file's keys as a plain torchvision state dict's ([`WRAPPED`]).
fn unwrapped() -> KeyRemapper {
    KeyRemapper::from_patterns(vec![WRAPPED]).expect("the key pattern is a valid regex")
}

/// The remapping of torchvision keys (plain or [`WRAPPED`]) to owt paths (`^features\.0\.`
/// -> `conv1.`); fc8 goes to a name no layer has when it is to stay fresh.
fn torch_to_owt(arch: &Architecture, skip_fc8: bool) -> KeyRemapper {
    let patterns = keys(arch).into_iter().map(|(owt, torch)| {
        let target = if skip_fc8 && owt == "fc8" { "unused_fc8".to_string() } else { owt };
        (format!(r"^{}\.(weight|bias|running_mean|running_var)$", regex_escape(&torch)), format!("{target}.$1"))
    });
    let all = std::iter::once((WRAPPED.0.to_string(), WRAPPED.1.to_string())).chain(patterns);
    KeyRemapper::from_pattern_iter(all).expect("the key patterns are valid regexes")
}

/// The remapping of owt paths to torchvision keys.
fn owt_to_torch(arch: &Architecture) -> KeyRemapper {
    let patterns = keys(arch)
        .into_iter()
        .map(|(owt, torch)| (format!(r"^{owt}\.(weight|bias|running_mean|running_var)$"), format!("{torch}.$1")));
    KeyRemapper::from_pattern_iter(patterns).expect("the key patterns are valid regexes")
}

fn regex_escape(s: &str) -> String {
    s.replace('.', r"\.")
}

/// The file formats read: a PyTorch pickle (`.pth`, `.pt`) or safetensors.
enum Format {
    Pickle,
    Safetensors,
}

fn format_of(path: &Path) -> Result<Format, TorchvisionError> {
    match path.extension().and_then(|e| e.to_str()) {
        // `.pth.tar`: PyTorch's ImageNet example's checkpoints.
        Some("pth" | "pt" | "tar") => Ok(Format::Pickle),
        Some("safetensors") => Ok(Format::Safetensors),
        _ => Err(error(format!(
            "cannot tell the format of {}: expected a .pth, .pt, .pth.tar or .safetensors file",
            path.display()
        ))),
    }
}

/// Loads the torchvision state dict at `path` (`.pth`/`.pt` or `.safetensors`, or a checkpoint
/// of PyTorch's ImageNet example, `.pth.tar`, with its `module.` prefixes) into `model`,
/// which must have torchvision's layout ([`check_layout`]) and the file's widths. When only
/// the class count differs, fc8 keeps its initial weights (reported in [`ImportReport`]), so a
/// network can be fine-tuned to other classes. A missing key or a wrong shape is an error
/// naming the key and both shapes; nothing is loaded then.
pub fn import<B: Backend>(mut model: ConvNet<B>, path: &Path) -> Result<(ConvNet<B>, ImportReport), TorchvisionError> {
    let arch = model.architecture.clone();
    check_layout(&arch)?;
    let format = format_of(path)?;
    let read_error = |e: String| error(format!("cannot read {}: {e}", path.display()));
    let tensors: BTreeMap<String, (Vec<usize>, burn::tensor::DType)> = match format {
        Format::Pickle => {
            tensors_in(&mut PytorchStore::from_file(path).map_indices_contiguous(false).remap(unwrapped()))
        }
        Format::Safetensors => {
            tensors_in(&mut SafetensorsStore::from_file(path).map_indices_contiguous(false).remap(unwrapped()))
        }
    }
    .map_err(read_error)?;
    let expected = torch_parameters(&arch)?;
    let mut fresh_fc8 = None;
    for (owt, key, shape) in &expected {
        if let Some((_, dtype)) = tensors.get(key).filter(|(_, dtype)| !dtype.is_float()) {
            return Err(error(format!(
                "{key} (for {owt}) in {} holds {dtype:?} values: a weight must be floating point (f16, bf16, f32 or f64)",
                path.display()
            )));
        }
        let (found, _) = tensors.get(key).ok_or_else(|| {
            error(format!(
                "{} has no {key} (for {owt}): expected a torchvision {} state dict ({}, each with weight and bias); its first keys are {}",
                path.display(),
                arch.name,
                keys(&arch).iter().map(|(_, k)| k.as_str()).collect::<Vec<_>>().join(", "),
                tensors.keys().take(4).cloned().collect::<Vec<_>>().join(", ")
            ))
        })?;
        if found == shape {
            continue;
        }
        // Another class count: fc8 is [classes, in] and [classes]; only its first dim differs.
        let other_classes = owt.starts_with("fc8.") && found.len() == shape.len() && found[1..] == shape[1..];
        if other_classes {
            fresh_fc8 = Some(found[0]);
            continue;
        }
        let because = shape_setting(owt, found, shape).map(|s| format!(": {s}")).unwrap_or_default();
        return Err(error(format!(
            "{key} (for {owt}) in {} has shape {found:?}, {} needs {shape:?}{because}",
            path.display(),
            arch.name
        )));
    }
    let skip_fc8 = fresh_fc8.is_some();
    let result = match format {
        Format::Pickle => model
            .load_from(
                &mut PytorchStore::from_file(path)
                    .map_indices_contiguous(false)
                    .remap(torch_to_owt(&arch, skip_fc8))
                    .allow_partial(skip_fc8),
            )
            .map_err(|e| e.to_string()),
        Format::Safetensors => model
            .load_from(
                &mut SafetensorsStore::from_file(path)
                    .map_indices_contiguous(false)
                    .with_from_adapter(PyTorchToBurnAdapter)
                    .remap(torch_to_owt(&arch, skip_fc8))
                    .allow_partial(skip_fc8),
            )
            .map_err(|e| e.to_string()),
    };
    let result = result.map_err(read_error)?;
    if let Some(e) = result.errors.first() {
        return Err(error(format!("cannot load {}: {e}", path.display())));
    }
    let not_loaded: Vec<&str> =
        result.missing.iter().map(|(p, _)| p.as_str()).filter(|p| !(skip_fc8 && p.starts_with("fc8."))).collect();
    if !not_loaded.is_empty() {
        return Err(error(format!("cannot load {}: nothing loaded into {}", path.display(), not_loaded.join(", "))));
    }
    let non_finite = crate::non_finite_parameters(&model);
    if !non_finite.is_empty() {
        let named: Vec<String> =
            non_finite.iter().map(|p| format!("{} ({p})", torch_key(&arch, p).unwrap_or_else(|| p.clone()))).collect();
        return Err(error(format!(
            "{} holds NaN or infinite values in {}: refusing weights that cannot train or predict",
            path.display(),
            named.join(", ")
        )));
    }
    let known: Vec<&String> = expected.iter().map(|(_, k, _)| k).collect();
    // num_batches_tracked counts PyTorch's steps (for a momentum of None); owt's statistics
    // use a fixed momentum, so the count has no reader and is not worth a warning.
    let unused =
        tensors.keys().filter(|k| !known.contains(k) && !k.ends_with(".num_batches_tracked")).cloned().collect();
    Ok((model, ImportReport { loaded: result.applied.len(), fresh_fc8, unused }))
}

/// Every tensor's name, shape and element type in a store, as the file has them; refuses
/// running statistics no batch normalisation can hold (read here: they are small, and a
/// weight's own check after loading does not see them), naming the key.
fn tensors_in<S: ModuleStore>(store: &mut S) -> Result<BTreeMap<String, (Vec<usize>, burn::tensor::DType)>, String> {
    let snapshots = store.get_all_snapshots().map_err(|e| e.to_string())?;
    for (key, snapshot) in snapshots.iter() {
        let variance = key.ends_with(".running_var");
        if !(variance || key.ends_with(".running_mean")) || !snapshot.dtype.is_float() {
            continue;
        }
        let values = snapshot.to_data().map_err(|e| format!("{key}: {e}"))?;
        let values: Vec<f64> = values.iter::<f64>().collect();
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(format!("{key} holds {v}: a running statistic must be finite"));
        }
        if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| variance && **v < 0.0) {
            return Err(format!("{key}[{i}] is {v}: a running variance cannot be negative"));
        }
    }
    Ok(snapshots.iter().map(|(k, s)| (k.clone(), (s.shape.to_vec(), s.dtype))).collect())
}

/// `model` as a torchvision state dict in safetensors format (keys `features.N.weight`, ...,
/// Linear weights `[out, in]`): PyTorch reads it with `safetensors.torch.load_file` and
/// `AlexNet.load_state_dict`.
pub fn export_safetensors<B: Backend>(model: &ConvNet<B>) -> Result<Vec<u8>, TorchvisionError> {
    check_layout(&model.architecture)?;
    let mut store = SafetensorsStore::from_bytes(None)
        .with_to_adapter(BurnToPyTorchAdapter)
        .remap(owt_to_torch(&model.architecture));
    model.save_into(&mut store).map_err(|e| error(format!("cannot encode the weights: {e}")))?;
    store.get_bytes().map_err(|e| error(format!("cannot encode the weights: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AlexNetOwtConfig;

    #[test]
    fn a_refused_layout_names_each_setting_that_differs_and_torchvisions() {
        use crate::{AdaptivePool, ModelKind, ModelSpec};
        let arch = |spec: ModelSpec| spec.architecture().unwrap();
        // torchvision's own layouts, at any width or class count, pass.
        for kind in [ModelKind::AlexNetOwt, ModelKind::Vgg11, ModelKind::Vgg11Bn, ModelKind::Vgg16, ModelKind::Vgg16Bn]
        {
            assert!(check_layout(&arch(ModelSpec::new(kind))).is_ok(), "{kind:?}");
        }
        let vgg = |pool| ModelSpec { adaptive_pool: Some(pool), ..ModelSpec::new(ModelKind::Vgg11) };
        let small = |towers| ModelSpec { towers: Some(towers), ..ModelSpec::new(ModelKind::AlexNetSmall) };
        for (spec, said, not_said) in [
            (
                vgg(AdaptivePool::Off),
                &[
                    "vgg11",
                    "torchvision's VGG",
                    "adaptive pool: none (--adaptive-pool none)",
                    "7x7 (--adaptive-pool 7)",
                ][..],
                &["alexnet-owt", "towers", "dropout"][..],
            ),
            (
                vgg(AdaptivePool::To(3)),
                &["3x3 (--adaptive-pool 3)", "7x7 (--adaptive-pool 7)"][..],
                &["alexnet-owt"][..],
            ),
            (
                ModelSpec::new(ModelKind::AlexNet2012),
                &[
                    "torchvision's AlexNet",
                    "towers: 2",
                    "response normalisation after conv1, conv2",
                    "--model alexnet-owt",
                ][..],
                &["--adaptive-pool 7"][..],
            ),
            (
                small(1),
                &[
                    "alexnet-small",
                    "response normalisation after conv1, conv2",
                    "adaptive pool: none, where torchvision's averages the maps to 6x6 (--model alexnet-owt)",
                    "dropout before fc7, fc8, where torchvision's is before fc6, fc7",
                ][..],
                &["towers", "--adaptive-pool", "max pools"][..],
            ),
            (small(2), &["towers: 2 (grouped convolutions, --towers 2)", "--towers 1"][..], &[][..]),
        ] {
            let a = arch(spec);
            let err = check_layout(&a).unwrap_err().0;
            for s in said {
                assert!(err.contains(s), "{}: {s:?} not in {err}", a.name);
            }
            for s in not_said {
                assert!(!err.contains(s), "{}: {s:?} in {err}", a.name);
            }
            assert_eq!(layout_differences(&a).len(), err.matches("where torchvision's").count(), "{err}");
        }
    }

    #[test]
    fn a_shape_that_differs_names_the_setting_behind_it() {
        use crate::{AdaptivePool, ModelKind, ModelSpec};
        // A VGG for 32x32 images (no pool, 512 wide) against torchvision's file, and back.
        let cifar = ModelSpec {
            adaptive_pool: Some(AdaptivePool::Off),
            hidden: Some(512),
            channels: Some(1),
            input: Some(32),
            ..ModelSpec::new(ModelKind::Vgg11)
        };
        let ours = torch_parameters(&cifar.architecture().unwrap()).unwrap();
        let theirs = torch_parameters(&ModelSpec::new(ModelKind::Vgg11).architecture().unwrap()).unwrap();
        let mut named = std::collections::BTreeMap::new();
        for ((owt, _, needed), (_, _, found)) in ours.iter().zip(&theirs) {
            if needed != found {
                named.insert(owt.clone(), shape_setting(owt, found, needed));
            }
        }
        let said =
            |p: &str| named.get(p).cloned().flatten().unwrap_or_else(|| panic!("{p}: nothing said in {named:?}"));
        assert!(
            said("conv1_1.weight").contains("--channels") && said("conv1_1.weight").contains("(1 here, 3 in the file)")
        );
        assert!(said("fc6.weight").contains("dimension 0") && said("fc6.weight").contains("--hidden"));
        assert!(said("fc7.weight").contains("--hidden") && said("fc8.weight").contains("--hidden"));
        assert!(said("fc6.bias").contains("--hidden"));
        // fc6's input alone: the pool.
        assert!(shape_setting("fc6.weight", &[4096, 25088], &[4096, 512]).unwrap().contains("--adaptive-pool"));
        // Another conv width is the model's own: nothing to name.
        assert_eq!(shape_setting("conv2.weight", &[128, 64, 3, 3], &[64, 64, 3, 3]), None);
    }

    #[test]
    fn every_parameter_has_a_torchvision_key_in_pytorch_layout() {
        let arch = AlexNetOwtConfig::new().architecture();
        let params = torch_parameters(&arch).unwrap();
        assert_eq!(params.len(), 16);
        let find = |k: &str| params.iter().find(|p| p.1 == k).unwrap().2.clone();
        assert_eq!(find("features.0.weight"), [64, 3, 11, 11]);
        assert_eq!(find("features.10.bias"), [256]);
        assert_eq!(find("classifier.1.weight"), [4096, 9216]);
        assert_eq!(find("classifier.6.weight"), [1000, 4096]);
        // torchvision's AlexNet: 61,100,840 parameters.
        assert_eq!(params.iter().map(|p| p.2.iter().product::<usize>()).sum::<usize>(), 61_100_840);
        let small = crate::AlexNetSmallConfig::new().architecture();
        assert!(check_layout(&small).unwrap_err().0.contains("--model alexnet-owt"));
    }
}
