//! torchvision's AlexNet weights: a state dict PyTorch made (`scripts/make_torchvision_fixture.py`,
//! a torchvision-layout AlexNet with narrower layers at 99x99) imported into owt gives the
//! logits PyTorch computed, from `.pth` and from safetensors, on Flex and on the wgpu test
//! device; an export writes the same state dict back; bad files are one-line errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::backend::Flex;
use burn::prelude::*;
use burn_store::{ModuleStore, SafetensorsStore};
use owt_models::torchvision::{export_safetensors, import};
use owt_models::{AlexNet, AlexNetOwtConfig, Architecture};

pub(crate) fn fixture(name: &str) -> PathBuf {
    crate::repository().join("tests/fixtures/torchvision").join(name)
}

/// The narrow torchvision-layout network the fixture was made with (architecture.json).
fn architecture() -> Architecture {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("architecture.json")).unwrap()).unwrap();
    let n = |v: &serde_json::Value| v.as_u64().unwrap() as usize;
    let mut arch =
        AlexNetOwtConfig::new().with_classes(n(&json["classes"])).with_input(n(&json["side"])).architecture();
    for (conv, f) in arch.convs.iter_mut().zip(json["filters"].as_array().unwrap()) {
        conv.filters = n(f);
    }
    arch.hidden = [n(&json["hidden"][0]), n(&json["hidden"][1])];
    arch
}

/// Every tensor of a safetensors file, as stored.
pub(crate) fn tensors(path: &Path) -> BTreeMap<String, TensorData> {
    let mut store = SafetensorsStore::from_file(path);
    store.get_all_snapshots().unwrap().iter().map(|(k, s)| (k.clone(), s.to_data().unwrap())).collect()
}

/// Imports `file` into the fixture's architecture on `device` and returns the largest
/// difference between owt's logits and PyTorch's, relative to the largest logit.
fn logits_gap<B: Backend>(file: &str, device: &B::Device) -> f32 {
    let model: AlexNet<B> = architecture().try_init(device).unwrap();
    let (model, report) = import(model, &fixture(file)).unwrap();
    assert_eq!((report.loaded, report.fresh_fc8), (16, None), "{report:?}");
    // A plain state dict has nothing else; the ImageNet example's checkpoint also has the
    // optimizer's momentum buffers and the best accuracy.
    let extra = report.unused.iter().filter(|k| k.starts_with("optimizer.") || *k == "best_acc1").count();
    assert_eq!(report.unused.len(), extra, "{report:?}");
    assert_eq!(extra > 0, file.ends_with(".tar"), "{report:?}");
    let batch = tensors(&fixture("batch.safetensors"));
    let images = Tensor::<B, 4>::from_data(batch["images"].clone(), device);
    let got = model.forward(images).into_data().to_vec::<f32>().unwrap();
    let want = batch["logits"].to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(0f32, |m, x| m.max(x.abs()));
    got.iter().zip(&want).fold(0f32, |m, (a, b)| m.max((a - b).abs())) / scale
}

#[test]
fn imported_weights_give_pytorchs_logits_on_flex() {
    for file in [
        "alexnet.pth",
        "alexnet.safetensors",
        "checkpoint.pth.tar",
        "alexnet_transposed.pth",
        "alexnet_channels_last.pth",
    ] {
        let gap = logits_gap::<Flex>(file, &Default::default());
        // Measured 4.2e-7 (Flex, 2026-12-01): float rounding in another summation order. The
        // bound is 20x that: a wrong layer (a transposed weight, a missing bias, another
        // normalisation) is off by far more.
        eprintln!("{file}: {gap:e} of the logit scale");
        assert!(gap <= 8.4e-6, "{file}: logits differ from PyTorch's by {gap:e} of their scale");
    }
}

#[cfg(feature = "wgpu")]
#[test]
fn imported_weights_give_pytorchs_logits_on_wgpu() {
    use burn::backend::wgpu::WgpuDevice;
    use owt::backends::WgpuSingle;
    assert!(
        !owt::kernel_cache::wgpu_adapters().is_empty(),
        "no Vulkan adapter found: install mesa-vulkan-drivers to run the wgpu tests on the CPU"
    );
    for file in ["alexnet.pth", "alexnet.safetensors"] {
        let gap = logits_gap::<WgpuSingle>(file, &WgpuDevice::Cpu);
        // Measured 3.0e-7 (lavapipe, 2026-12-01); the bound is 20x that.
        eprintln!("{file}: {gap:e} of the logit scale");
        assert!(gap <= 6e-6, "{file}: logits differ from PyTorch's by {gap:e} of their scale");
    }
}

/// A state dict saved with other memory layouts (`scripts/make_strided_weights_fixture.py`:
/// Linear weights transposed in their storage, biases at an offset into a larger storage, conv
/// weights channels-last) is read to the same values: the same network, byte for byte.
#[test]
fn weights_saved_transposed_offset_or_channels_last_import_to_the_same_network() {
    let device = Default::default();
    let exported = |file: &str| {
        let model: AlexNet<Flex> = architecture().try_init(&device).unwrap();
        let (model, _) = import(model, &fixture(file)).unwrap();
        export_safetensors(&model).unwrap()
    };
    // Compared tensor by tensor (every key, shape, dtype and bit): the header's metadata
    // comes in hash order, so two exports of one network need not be equal bytes.
    let dir = tempfile::tempdir().unwrap();
    let exported = |file: &str| {
        let path = dir.path().join(format!("{file}.safetensors"));
        std::fs::write(&path, exported(file)).unwrap();
        tensors(&path)
    };
    let want = exported("alexnet.pth");
    for file in ["alexnet_transposed.pth", "alexnet_channels_last.pth"] {
        let got = exported(file);
        assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{file}");
        for (key, value) in &want {
            assert!(got[key] == *value, "{file}: {key} imports to other values than alexnet.pth's");
        }
    }
}

/// An import exported again is PyTorch's file: the same keys, shapes and bits.
#[test]
fn an_export_is_the_state_dict_pytorch_wrote() {
    let device = Default::default();
    let model: AlexNet<Flex> = architecture().try_init(&device).unwrap();
    let (model, _) = import(model, &fixture("alexnet.pth")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("back.safetensors");
    std::fs::write(&out, export_safetensors(&model).unwrap()).unwrap();
    let (ours, theirs) = (tensors(&out), tensors(&fixture("alexnet.safetensors")));
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, want) in &theirs {
        assert_eq!(ours[key].shape, want.shape, "{key}");
        assert_eq!(ours[key].to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "{key}");
    }
}

/// Another class count leaves fc8 as initialised (fine-tuning) and loads the rest.
#[test]
fn another_class_count_keeps_a_fresh_fc8() {
    let device = Default::default();
    let mut arch = architecture();
    arch.classes = 3;
    let fresh: AlexNet<Flex> = arch.try_init(&device).unwrap();
    let fc8_before = fresh.fc8.weight.val().into_data();
    let (model, report) = import(fresh, &fixture("alexnet.safetensors")).unwrap();
    assert_eq!((report.loaded, report.fresh_fc8), (14, Some(10)), "{report:?}");
    assert_eq!(model.fc8.weight.val().into_data(), fc8_before);
    let whole: AlexNet<Flex> = architecture().try_init(&device).unwrap();
    let (whole, _) = import(whole, &fixture("alexnet.safetensors")).unwrap();
    assert_eq!(model.fc7.weight.val().into_data(), whole.fc7.weight.val().into_data());
}

#[test]
fn wrong_shapes_and_missing_keys_name_the_key() {
    let device = Default::default();
    // The fixture is narrower than alexnet-owt: the first layer that differs is named.
    let full: AlexNet<Flex> = AlexNetOwtConfig::new().with_input(99).architecture().try_init(&device).unwrap();
    let e = import(full, &fixture("alexnet.pth")).unwrap_err().0;
    assert!(e.contains("features.0.weight") && e.contains("[16, 3, 11, 11]") && e.contains("[64, 3, 11, 11]"), "{e}");
    // A file of Burn's own names (conv1.weight, ...) is not a torchvision state dict.
    let dir = tempfile::tempdir().unwrap();
    let burn_names = dir.path().join("burn.safetensors");
    let model: AlexNet<Flex> = architecture().try_init(&device).unwrap();
    burn_store::ModuleSnapshot::save_into(&model, &mut SafetensorsStore::from_file(&burn_names)).unwrap();
    let e = import(architecture().try_init::<Flex>(&device).unwrap(), &burn_names).unwrap_err().0;
    assert!(e.contains("has no features.0.weight") && e.contains("conv1.bias"), "{e}");
    let e = import(architecture().try_init::<Flex>(&device).unwrap(), &dir.path().join("w.h5")).unwrap_err().0;
    assert!(e.contains(".pth, .pt, .pth.tar or .safetensors"), "{e}");
    let e = import(architecture().try_init::<Flex>(&device).unwrap(), &dir.path().join("none.pth")).unwrap_err().0;
    assert!(e.contains("cannot read") && e.contains("none.pth"), "{e}");
    for e in [&e] {
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// `src` with the tensor `key`'s first element set to `value` (safetensors: an 8-byte header
/// length, the JSON header with each tensor's byte range, then the data).
pub(crate) fn with_first_element(src: &Path, key: &str, value: f32, dst: &Path) {
    let mut bytes = std::fs::read(src).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    assert_eq!(header[key]["dtype"], "F32", "{key}");
    let at = 8 + n + header[key]["data_offsets"][0].as_u64().unwrap() as usize;
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    std::fs::write(dst, bytes).unwrap();
}

/// A safetensors file of one tensor: `key`, of `dtype` ("I64", "U8", ...), `shape`, `data`.
pub(crate) fn one_tensor_file(path: &Path, key: &str, dtype: &str, shape: &[usize], data: &[u8]) {
    let mut header =
        serde_json::json!({ key: { "dtype": dtype, "shape": shape, "data_offsets": [0, data.len()] } }).to_string();
    while (header.len() + 8) % 8 != 0 {
        header.push(' ');
    }
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn non_finite_weights_are_refused_naming_the_tensors() {
    let dir = tempfile::tempdir().unwrap();
    for (key, value) in [("classifier.6.bias", f32::NAN), ("features.3.weight", f32::INFINITY)] {
        let file = dir.path().join("bad.safetensors");
        with_first_element(&fixture("alexnet.safetensors"), key, value, &file);
        let e = import(architecture().try_init::<Flex>(&Default::default()).unwrap(), &file).unwrap_err().0;
        assert!(e.contains(key) && e.contains("NaN or infinite"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // The untouched file imports: the check sees only what is wrong.
    assert!(
        import(architecture().try_init::<Flex>(&Default::default()).unwrap(), &fixture("alexnet.safetensors")).is_ok()
    );
}

#[test]
fn integer_weights_are_one_line_naming_the_key_and_the_type() {
    let dir = tempfile::tempdir().unwrap();
    for (dtype, size) in [("I64", 8), ("U8", 1)] {
        let file = dir.path().join(format!("{dtype}.safetensors"));
        one_tensor_file(&file, "features.0.weight", dtype, &[2], &vec![1u8; 2 * size]);
        let e = import(architecture().try_init::<Flex>(&Default::default()).unwrap(), &file).unwrap_err().0;
        assert!(e.contains("features.0.weight") && e.contains(dtype) && e.contains("floating point"), "{e}");
    }
}
