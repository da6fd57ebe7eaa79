//! torchvision's VGG weights: a narrow VGG-11 with batch normalisation that PyTorch made
//! (`scripts/make_torchvision_vgg_fixture.py`, torchvision's `vgg11_bn` layout at 64x64)
//! imported into owt gives PyTorch's logits in evaluation mode, and in training mode the
//! features fc6 reads and the running statistics PyTorch's batch normalisation leaves; an
//! export writes the same state dict back.

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use owt_models::torchvision::{import, torch_key};
use owt_models::{Architecture, ConvNet, VggConfig};

use crate::torchvision_fixture::{assert_same_tensors, exported, fixture, tensors};

/// The narrow VGG-11-BN the fixture was made with (vgg_architecture.json).
fn architecture() -> Architecture {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("vgg_architecture.json")).unwrap()).unwrap();
    let n = |v: &serde_json::Value| v.as_u64().unwrap() as usize;
    let mut arch = VggConfig::new(11)
        .with_batch_norm(true)
        .with_classes(n(&json["classes"]))
        .with_input(n(&json["side"]))
        .with_hidden(n(&json["hidden"]))
        .architecture();
    for (conv, f) in arch.convs.iter_mut().zip(json["filters"].as_array().unwrap()) {
        conv.filters = n(f);
    }
    arch
}

/// The largest difference of two lists relative to the largest magnitude of `want`.
fn gap(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(0f32, |m, x| m.max(x.abs()));
    got.iter().zip(want).fold(0f32, |m, (a, b)| m.max((a - b).abs())) / scale
}

fn imported<B: Backend>(file: &str) -> ConvNet<B> {
    let model: ConvNet<B> = architecture().try_init(&Default::default()).unwrap();
    let (model, report) = import(model, &fixture(file)).unwrap();
    // 8 convs (weight, bias), 8 batch norms (weight, bias, running mean and variance), 3 FCs.
    assert_eq!((report.loaded, report.fresh_fc8), (16 + 32 + 6, None), "{report:?}");
    assert!(report.unused.is_empty(), "num_batches_tracked is read as nothing, not reported: {report:?}");
    model
}

#[test]
fn imported_vgg_gives_pytorchs_logits_in_evaluation_mode() {
    let batch = tensors(&fixture("vgg_batch.safetensors"));
    for file in ["vgg11_bn.pth", "vgg11_bn.safetensors"] {
        let model = imported::<Flex>(file);
        let images = Tensor::<Flex, 4>::from_data(batch["images"].clone(), &Default::default());
        let got = model.forward(images).into_data().to_vec::<f32>().unwrap();
        let g = gap(&got, &batch["logits"].to_vec::<f32>().unwrap());
        // Measured 1.5e-6 (Flex, 2026-12-04): rounding in another order. A wrong layer (a
        // swapped running mean and variance, gamma read as beta) is off by far more.
        eprintln!("{file}: {g:e} of the logit scale");
        assert!(g <= 2e-5, "{file}: logits differ from PyTorch's by {g:e} of their scale");
    }
}

#[test]
fn imported_vgg_trains_on_batch_statistics_as_pytorch() {
    let batch = tensors(&fixture("vgg_batch.safetensors"));
    let model = imported::<Autodiff<Flex>>("vgg11_bn.safetensors");
    let images = Tensor::<Autodiff<Flex>, 4>::from_data(batch["images"].clone(), &Default::default());
    let features = model.forward_features(images).into_data().to_vec::<f32>().unwrap();
    let g = gap(&features, &batch["train_features"].to_vec::<f32>().unwrap());
    eprintln!("training-mode features: {g:e} of their scale");
    // Measured 3.0e-6 (Flex, 2026-12-04): eight normalisations by batch statistics amplify
    // rounding; a wrong statistic (no epsilon, a variance about another mean) is off by 1e-3 and more.
    assert!(g <= 3e-5, "training-mode features differ from PyTorch's by {g:e}");
    // The running statistics after the pass: momentum 0.1, the variance unbiased.
    let arch = &model.architecture;
    for n in 1..=arch.convs.len() {
        let bn = model.norm(n);
        for (name, state) in [("running_mean", &bn.running_mean), ("running_var", &bn.running_var)] {
            let path = format!("{}.{name}", arch.stage_name(owt_models::Stage::BatchNorm(n)));
            let key = torch_key(arch, &path).unwrap();
            let got = state.value_sync().into_data().to_vec::<f32>().unwrap();
            let g = gap(&got, &batch[&key].to_vec::<f32>().unwrap());
            assert!(g <= 1e-5, "{path} ({key}) differs from PyTorch's by {g:e}");
        }
    }
}

/// An import exported again is PyTorch's file: the same keys (but num_batches_tracked, which
/// owt does not keep), shapes and bits.
#[test]
fn an_exported_vgg_is_the_state_dict_pytorch_wrote() {
    let model = imported::<Flex>("vgg11_bn.pth");
    let mut theirs = tensors(&fixture("vgg11_bn.safetensors"));
    theirs.retain(|k, _| !k.ends_with("num_batches_tracked"));
    assert_same_tensors(&exported(&model), &theirs);
}

/// Running statistics no batch normalisation can hold are refused naming the key: a negative
/// variance, a non-finite mean or variance (the weights' own check does not see them); a
/// variance of 0 is not one of them.
#[test]
fn a_negative_or_non_finite_running_statistic_is_refused_naming_the_key_and_a_zero_variance_kept() {
    use crate::torchvision_fixture::with_first_element;
    let dir = tempfile::tempdir().unwrap();
    for (key, value, says) in [
        ("features.1.running_var", -0.25, "cannot be negative"),
        ("features.5.running_var", f32::INFINITY, "must be finite"),
        ("features.1.running_mean", f32::NAN, "must be finite"),
    ] {
        let file = dir.path().join("bad.safetensors");
        with_first_element(&fixture("vgg11_bn.safetensors"), key, value, &file);
        let model: ConvNet<Flex> = architecture().try_init(&Default::default()).unwrap();
        let e = import(model, &file).unwrap_err().0;
        assert!(e.contains(key) && e.contains(says), "{key}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // A variance of exactly 0 (a channel that was constant over the data) is PyTorch's to keep.
    let file = dir.path().join("zero.safetensors");
    with_first_element(&fixture("vgg11_bn.safetensors"), "features.1.running_var", 0.0, &file);
    let model: ConvNet<Flex> = architecture().try_init(&Default::default()).unwrap();
    let (model, _) = import(model, &file).unwrap();
    assert_eq!(model.norm(1).running_var.value_sync().into_data().to_vec::<f32>().unwrap()[0], 0.0);
}
