//! The torchvision fixtures (`tests/fixtures/torchvision`, made by PyTorch with
//! `scripts/make_torchvision_fixture.py` and its VGG and strided companions) and what reads and
//! writes them: shared by owt-models' import tests and owt's (which include this file), so
//! both read the same network the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn_store::{ModuleStore, SafetensorsStore};
use owt_models::torchvision::{export_safetensors, import};
use owt_models::{AlexNet, AlexNetOwtConfig, Architecture, ConvNet};

/// The fixture `name`, found from the package being tested (the repository's root or its
/// `models` folder).
pub fn fixture(name: &str) -> PathBuf {
    let manifest: PathBuf =
        std::env::var_os("CARGO_MANIFEST_DIR").map(Into::into).unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    let dir = manifest
        .ancestors()
        .map(|d| d.join("tests/fixtures/torchvision"))
        .find(|d| d.is_dir())
        .expect("tests/fixtures/torchvision in the repository");
    dir.join(name)
}

/// The narrow torchvision-layout network the fixture was made with (architecture.json).
pub fn architecture() -> Architecture {
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
pub fn tensors(path: &Path) -> BTreeMap<String, TensorData> {
    let mut store = SafetensorsStore::from_file(path);
    store.get_all_snapshots().unwrap().iter().map(|(k, s)| (k.clone(), s.to_data().unwrap())).collect()
}

/// `model` exported as a torchvision state dict ([`export_safetensors`]), read back tensor by
/// tensor: two exports of one network compare equal this way, though the header's metadata
/// comes in hash order, so their bytes need not.
pub fn exported<B: Backend>(model: &ConvNet<B>) -> BTreeMap<String, TensorData> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exported.safetensors");
    std::fs::write(&path, export_safetensors(model).unwrap()).unwrap();
    tensors(&path)
}

/// `ours` holds `theirs`' keys and no other, each with the same shape and f32 values.
pub fn assert_same_tensors(ours: &BTreeMap<String, TensorData>, theirs: &BTreeMap<String, TensorData>) {
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, want) in theirs {
        assert_eq!(ours[key].shape, want.shape, "{key}");
        assert_eq!(ours[key].to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "{key}");
    }
}

/// Imports `file` into the fixture's architecture on `device` and returns the largest
/// difference between owt's logits and PyTorch's, relative to the largest logit.
pub fn logits_gap<B: Backend>(file: &str, device: &B::Device) -> f32 {
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

/// `src` with the tensor `key`'s first element set to `value` (safetensors: an 8-byte header
/// length, the JSON header with each tensor's byte range, then the data).
pub fn with_first_element(src: &Path, key: &str, value: f32, dst: &Path) {
    let mut bytes = std::fs::read(src).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    assert_eq!(header[key]["dtype"], "F32", "{key}");
    let at = 8 + n + header[key]["data_offsets"][0].as_u64().unwrap() as usize;
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    std::fs::write(dst, bytes).unwrap();
}

/// A safetensors file of one tensor: `key`, of `dtype` ("I64", "U8", ...), `shape`, `data`.
pub fn one_tensor_file(path: &Path, key: &str, dtype: &str, shape: &[usize], data: &[u8]) {
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
