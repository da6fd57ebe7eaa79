//! What a pretrained network expects of its input, checked against PyTorch: a torchvision-layout
//! AlexNet trained in PyTorch with torchvision's transforms (scripts/make_preprocessing_fixture.py),
//! imported, and evaluated on 504 JPEGs through owt's own path (the held-out split `owt eval`
//! opens, at the resize, filter and ImageNet mean and std `owt import --from torchvision`
//! records) predicts what PyTorch predicted for at least 99% of the images, and its accuracy
//! is PyTorch's within half a point.

use std::path::PathBuf;
use std::sync::Arc;

use burn::backend::Flex;
use owt::data::{open_test_split, DataRequest, DatasetKind, ImageSource};
use owt::train::input::Preparation;
use owt::train::{evaluate, predictions};
use owt_models::{AlexNet, AlexNetOwtConfig, Architecture, Head, PixelNorm, ResizeFilter};

fn fixture() -> PathBuf {
    crate::repository().join("tests/fixtures/preprocessing")
}

fn json() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(fixture().join("fixture.json")).unwrap()).unwrap()
}

/// The narrow torchvision-layout network of the fixture.
fn architecture(json: &serde_json::Value) -> Architecture {
    let n = |v: &serde_json::Value| v.as_u64().unwrap() as usize;
    let classes = json["classes"].as_array().unwrap().len();
    let mut arch = AlexNetOwtConfig::new().with_classes(classes).with_input(n(&json["side"])).architecture();
    for (conv, f) in arch.convs.iter_mut().zip(json["filters"].as_array().unwrap()) {
        conv.filters = n(f);
    }
    arch.hidden = [n(&json["hidden"][0]), n(&json["hidden"][1])];
    arch
}

/// PyTorch's predictions and labels, in the held-out split's order (class folders, then file
/// names: ImageFolder's order and owt's).
fn pytorch() -> Vec<(String, usize, usize, f64)> {
    let text = std::fs::read_to_string(fixture().join("predictions.csv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect()
}

/// owt's held-out split of the fixture as `owt eval` opens it for a checkpoint of `spec`.
fn held_out(side: usize, resize: usize, filter: ResizeFilter) -> Arc<dyn ImageSource> {
    let request = DataRequest {
        dir: Some(fixture()),
        resize: Some(resize),
        filter,
        ..DataRequest::new(DatasetKind::Folder, [3, side, side])
    };
    open_test_split(&request).unwrap()
}

#[test]
fn an_imported_network_predicts_what_pytorch_predicts_on_the_same_jpegs() {
    let json = json();
    let arch = architecture(&json);
    let device = Default::default();
    let model: AlexNet<Flex> = arch.try_init(&device).unwrap();
    let (model, report) = owt_models::torchvision::import(model, &fixture().join("alexnet.safetensors")).unwrap();
    assert_eq!(report.loaded, 16, "{report:?}");
    let side = arch.input[1];
    let resize = json["resize"].as_u64().unwrap() as usize;
    assert_eq!(resize, owt_models::default_resize(side), "the resize `owt import` records");
    let want = pytorch();
    assert!(want.len() >= 500, "{} images", want.len());
    let how = Preparation::new(2, 2);
    let agreement = |norm: &PixelNorm, filter: ResizeFilter| {
        let source = held_out(side, resize, filter);
        let got = predictions(&model, norm, &source, &device, how).unwrap();
        assert_eq!(got.len(), want.len());
        let differ: Vec<_> = want.iter().zip(&got).filter(|(w, g)| w.2 != **g).collect();
        for (w, g) in differ.iter().take(10) {
            eprintln!("{}: PyTorch {} (margin {:.4}), owt {g}", w.0, w.2, w.3);
        }
        let accuracy = evaluate(&model, Head::Softmax, norm, &source, &device, how).unwrap().accuracy;
        (1.0 - differ.len() as f64 / want.len() as f64, accuracy)
    };
    let torch_accuracy = json["accuracy"].as_f64().unwrap();
    let (agree, accuracy) = agreement(&PixelNorm::IMAGENET, ResizeFilter::Bilinear);
    eprintln!(
        "torchvision's preprocessing: {:.2}% of predictions agree, accuracy {:.2}% (PyTorch {:.2}%)",
        100.0 * agree,
        100.0 * accuracy,
        100.0 * torch_accuracy
    );
    assert!(agree >= 0.99, "only {:.2}% of the predictions agree", 100.0 * agree);
    assert!((accuracy - torch_accuracy).abs() <= 0.005, "accuracy {accuracy} against PyTorch's {torch_accuracy}");
    // What the issue found: the same weights fed owt's own scale (x / 127.5 - 1).
    let (agree_wrong, accuracy_wrong) = agreement(&PixelNorm::Symmetric, ResizeFilter::Area);
    eprintln!("owt's own preprocessing: {:.2}% agree, accuracy {:.2}%", 100.0 * agree_wrong, 100.0 * accuracy_wrong);
}
