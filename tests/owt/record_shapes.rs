//! A checkpoint's records read without loading them (`owt::train::record_shapes`): every
//! tensor of a real model record listed with its shape, a record of another network refused
//! naming the tensor and both shapes, the optimizer's state checked against its parameters.

use std::path::Path;

use burn::backend::Flex;
use burn::module::Module;
use owt::data::DatasetKind;
use owt::train::checkpoint::{record_to_bytes, InParameterOrder};
use owt::train::record_shapes::{check_model_record, check_optimizer_record, record_tensors};
use owt::train::{sgd, TrainConfig};
use owt_models::{ModelKind, ModelSpec};

/// A tensor's place in a model record as the architecture names it: "fc6.weight" for the
/// record's "item.fc6.weight.param".
fn in_module(path: &str) -> &str {
    let path = path.strip_prefix("item.").unwrap_or(path);
    path.strip_suffix(".param").unwrap_or(path)
}

fn record_of(spec: &ModelSpec) -> Vec<u8> {
    let model: owt_models::AlexNet<Flex> = spec.architecture().unwrap().try_init(&Default::default()).unwrap();
    record_to_bytes::<Flex, _>(model.into_record()).unwrap()
}

#[test]
fn a_record_lists_every_parameter_with_its_shape_and_bytes() {
    let file = Path::new("ckpt");
    for spec in [
        ModelSpec::new(ModelKind::AlexNetSmall),
        ModelSpec { towers: Some(1), ..ModelSpec::new(ModelKind::AlexNetSmall) },
        ModelSpec { input: Some(67), classes: Some(16), ..ModelSpec::new(ModelKind::AlexNetOwt) },
        ModelSpec { input: Some(32), hidden: Some(16), ..ModelSpec::new(ModelKind::Vgg11Bn) },
    ] {
        let arch = spec.architecture().unwrap();
        let record = record_of(&spec);
        let mut found: Vec<(String, Vec<usize>)> = record_tensors(&record)
            .unwrap()
            .into_iter()
            .map(|t| {
                assert_eq!(t.bytes, 4 * t.shape.iter().product::<usize>(), "{}: f32 values", t.path);
                assert!(t.id.is_some(), "{}: a parameter's id", t.path);
                (in_module(&t.path).to_string(), t.shape)
            })
            .collect();
        // The record holds the fields in the module's order, the parameters come in the
        // forward pass's; batch normalisation's running statistics are in the record too.
        let mut expected = arch.parameters().unwrap();
        expected.extend(arch.buffers());
        found.sort();
        expected.sort();
        assert_eq!(found, expected, "{}", arch.name);
        let ids = check_model_record(file, &record, &arch).unwrap();
        assert_eq!(ids.len(), found.len());
    }
}

#[test]
fn a_record_of_another_network_is_refused_naming_the_tensor_and_both_shapes() {
    let file = Path::new("ckpt");
    let small = ModelSpec::new(ModelKind::AlexNetSmall);
    let record = record_of(&small);
    let cases = [
        (ModelSpec { classes: Some(10_000_000), ..small.clone() }, "fc8.weight is [256, 10] in the model record, alexnet-small (input 1x28x28, 10000000 classes, 2 tower(s)) as its state names it needs [256, 10000000]"),
        (ModelSpec { towers: Some(1), ..small.clone() }, "conv2.weight is [64, 16, 5, 5] in the model record"),
        (ModelSpec { input: Some(40), ..small.clone() }, "fc6.weight is [256, 256] in the model record"),
        (ModelSpec { input: Some(67), ..ModelSpec::new(ModelKind::AlexNetOwt) }, "conv1.weight is [32, 1, 5, 5] in the model record"),
    ];
    for (spec, says) in cases {
        let e = check_model_record(file, &record, &spec.architecture().unwrap()).unwrap_err().to_string();
        assert!(e.contains(says), "{says:?} not in {e}");
        assert!(e.starts_with("checkpoint: ckpt: "), "{e}");
    }
    // Nesting as deep as the decoder allows (1024) and deeper: an error, not an overflow.
    for depth in [1000, 100_000] {
        let mut nested = vec![0x91u8; depth];
        nested.push(0xc0);
        let e = check_model_record(file, &nested, &small.architecture().unwrap()).unwrap_err().to_string();
        assert!(e.contains("model record"), "{e}");
    }
    // A tensor's bytes nested as deep (skipped by serde's IgnoredAny): an error too.
    let mut map = vec![0x82u8, 0xa5];
    map.extend_from_slice(b"shape");
    map.extend_from_slice(&[0x91, 0x01, 0xa5]);
    map.extend_from_slice(b"bytes");
    map.extend(std::iter::repeat_n(0x91u8, 100_000));
    map.push(0xc0);
    let e = check_model_record(file, &map, &small.architecture().unwrap()).unwrap_err().to_string();
    assert!(e.contains("model record"), "{e}");
    // Damaged MessagePack is an error, not a panic.
    let e =
        check_model_record(file, &record[..record.len() / 2], &small.architecture().unwrap()).unwrap_err().to_string();
    assert!(e.contains("its model record cannot be read"), "{e}");
}

#[test]
fn optimizer_state_is_checked_against_the_parameter_it_belongs_to() {
    use burn::optim::{GradientsParams, Optimizer};
    type A = burn::backend::Autodiff<Flex>;
    let file = Path::new("ckpt");
    let spec = ModelSpec::new(ModelKind::AlexNetSmall);
    let arch = spec.architecture().unwrap();
    let device = Default::default();
    let model: owt_models::AlexNet<A> = arch.try_init(&device).unwrap();
    let config = TrainConfig::new(spec, DatasetKind::Synthetic);
    let mut optim = sgd::<A>(&config);
    let x = burn::tensor::Tensor::<A, 4>::ones([2, 1, 28, 28], &device);
    let grads = model.forward(x).sum().backward();
    let grads = GradientsParams::from_grads(grads, &model);
    let model = optim.step(0.01, model, grads);
    let optimizer = record_to_bytes::<A, _>(InParameterOrder::new(optim.to_record(), &model)).unwrap();
    let record = record_to_bytes::<A, _>(model.into_record()).unwrap();
    let mut params = check_model_record(file, &record, &arch).unwrap();
    check_optimizer_record(file, &optimizer, &params).unwrap();
    assert!(record_tensors(&optimizer).unwrap().len() >= params.len(), "momentum for every parameter");
    let fc8 = params.values_mut().find(|(path, _)| path == "fc8.weight").unwrap();
    fc8.1 = vec![1, 1];
    let e = check_optimizer_record(file, &optimizer, &params).unwrap_err().to_string();
    assert!(e.contains("the optimizer's state of fc8.weight is [256, 10], the parameter is [1, 1]"), "{e}");
    check_optimizer_record(file, &[], &params).unwrap();
}
