//! The layer profiles reproduce DESIGN.md's figures, and agree with the modules built from the
//! same architectures (counted from the real parameters and observed activations).

use burn::backend::Flex;
use burn::module::Module;
use burn::prelude::*;
use owt_models::{AlexNet2012Config, AlexNetOwtConfig, AlexNetSmallConfig, Architecture, ModelKind, ModelSpec};

type B = Flex;

fn layer(arch: &Architecture, name: &str) -> (usize, u64, Vec<usize>) {
    let p = arch.profile().unwrap();
    let l = p.layer(name).unwrap_or_else(|| panic!("no layer {name}"));
    (l.params, l.macs, l.output_shape.clone())
}

#[test]
fn alexnet_owt_profile_matches_design() {
    let arch = AlexNetOwtConfig::new().architecture();
    let p = arch.profile().unwrap();
    assert_eq!(p.total_params, 61_100_840);
    let expected: [(&str, usize, u64); 8] = [
        ("conv1", 23_296, 70_276_800),
        ("conv2", 307_392, 223_948_800),
        ("conv3", 663_936, 112_140_288),
        ("conv4", 884_992, 149_520_384),
        ("conv5", 590_080, 99_680_256),
        ("fc6", 37_752_832, 37_748_736),
        ("fc7", 16_781_312, 16_777_216),
        ("fc8", 4_097_000, 4_096_000),
    ];
    for (name, params, macs) in expected {
        let (p_, m_, _) = layer(&arch, name);
        assert_eq!((p_, m_), (params, macs), "{name}");
    }
    // DESIGN.md's rounded figures (70.3 M, 223.9 M, ... MACs), from the profile's own output.
    let rounded: Vec<f64> =
        expected.iter().map(|(name, _, _)| (layer(&arch, name).1 as f64 / 1e5).round() / 10.0).collect();
    assert_eq!(rounded, vec![70.3, 223.9, 112.1, 149.5, 99.7, 37.7, 16.8, 4.1]);
    // The sum of the eight, by hand.
    assert_eq!(p.total_macs, 714_188_480);
    let (conv_p, conv_m) = p.sum_by_prefix("conv");
    assert_eq!((1000.0 * conv_p as f64 / p.total_params as f64).round(), 40.0); // 4.0 %
    assert_eq!((1000.0 * conv_m as f64 / p.total_macs as f64).round(), 918.0); // 91.8 %
    assert_eq!(layer(&arch, "avgpool").2, vec![256, 6, 6]);
    assert_eq!(arch.fc_input_features().unwrap(), 9216);
}

#[test]
fn alexnet_2012_profile_matches_design() {
    let arch = AlexNet2012Config::new().architecture();
    let p = arch.profile().unwrap();
    assert_eq!(p.total_params, 60_965_224);
    assert_eq!(layer(&arch, "conv1").2, vec![96, 55, 55]);
    assert_eq!(layer(&arch, "pool1").2, vec![96, 27, 27]);
    assert_eq!(layer(&arch, "conv2").0, 256 * 48 * 25 + 256);
    assert_eq!(layer(&arch, "conv3").0, 384 * 256 * 9 + 384);
    assert_eq!(layer(&arch, "conv4").0, 384 * 192 * 9 + 384);
    assert_eq!(layer(&arch, "pool5").2, vec![256, 6, 6]);
    let (conv_p, conv_m) = p.sum_by_prefix("conv");
    assert_eq!((1000.0 * conv_p as f64 / p.total_params as f64).round(), 38.0); // 3.8 %
    assert_eq!((1000.0 * conv_m as f64 / p.total_macs as f64).round(), 919.0); // 91.9 %
}

fn observed_shapes(model: &owt_models::AlexNet<B>, batch: usize) -> (Vec<(String, Vec<usize>)>, [usize; 2]) {
    let [c, h, w] = model.architecture.input;
    let x = Tensor::<B, 4>::random([batch, c, h, w], burn::tensor::Distribution::Default, &Default::default());
    let mut seen = Vec::new();
    let y = model.forward_observed(x, &mut |name, shape| seen.push((name.to_string(), shape.to_vec())));
    (seen, y.dims())
}

fn assert_module_matches_profile(arch: &Architecture, batch: usize) {
    let model = arch.init::<B>(&Default::default());
    let profile = arch.profile().unwrap();
    assert_eq!(model.num_params(), profile.total_params, "{}: module vs profile parameters", arch.name);
    let (seen, out) = observed_shapes(&model, batch);
    let listed: Vec<(String, Vec<usize>)> =
        profile.layers.iter().map(|l| (l.name.clone(), l.output_shape.clone())).collect();
    assert_eq!(seen, listed, "{}: observed activations vs profile", arch.name);
    assert_eq!(out, [batch, arch.classes]);
}

#[test]
fn full_size_modules_match_their_profiles() {
    assert_module_matches_profile(&AlexNet2012Config::new().architecture(), 2);
    assert_module_matches_profile(&AlexNetOwtConfig::new().architecture(), 2);
}

#[test]
fn small_models_match_their_profiles_for_both_geometries_and_tower_counts() {
    for (input, channels) in [(28, 1), (32, 3)] {
        for towers in [1, 2] {
            let arch =
                AlexNetSmallConfig::new().with_input(input).with_channels(channels).with_towers(towers).architecture();
            assert_module_matches_profile(&arch, 3);
        }
    }
    // Two towers halve conv2/conv4/conv5's weights (grouped convolutions).
    let one = AlexNetSmallConfig::new().with_towers(1).architecture().profile().unwrap();
    let two = AlexNetSmallConfig::new().with_towers(2).architecture().profile().unwrap();
    for name in ["conv2", "conv4", "conv5"] {
        let (a, b) = (one.layer(name).unwrap(), two.layer(name).unwrap());
        assert_eq!(a.params - a.output_shape[0], 2 * (b.params - b.output_shape[0]), "{name}");
    }
    assert_eq!(one.layer("conv3").unwrap().params, two.layer("conv3").unwrap().params);
}

#[test]
fn paper_initialisation_sets_biases_as_in_2012() {
    let model = AlexNet2012Config::new().with_classes(10).init::<B>(&Default::default());
    // Every element, not a mean (half ones and half twos would average 1.5, not 1).
    let all = |b: &Option<burn::module::Param<Tensor<B, 1>>>, want: f32, name: &str| {
        let values = b.as_ref().unwrap().val().into_data().to_vec::<f32>().unwrap();
        assert!(!values.is_empty() && values.iter().all(|v| *v == want), "{name}: expected every bias {want}");
    };
    all(&model.conv(1).bias, 0.0, "conv1");
    all(&model.conv(2).bias, 1.0, "conv2");
    all(&model.conv(3).bias, 0.0, "conv3");
    all(&model.conv(4).bias, 1.0, "conv4");
    all(&model.conv(5).bias, 1.0, "conv5");
    all(&model.fc6.bias, 1.0, "fc6");
    all(&model.fc7.bias, 1.0, "fc7");
    all(&model.fc8.bias, 0.0, "fc8");
    let w = model.fc6.weight.val();
    let std = w.clone().sub_scalar(w.mean().into_scalar()).powi_scalar(2).mean().sqrt().into_scalar();
    assert!((std - 0.01).abs() < 2e-4, "fc6 weight std {std}, expected 0.01");
}

#[test]
fn wrong_geometry_is_an_error_naming_expected_and_actual() {
    let arch = AlexNet2012Config::new().architecture();
    let err = arch.check_input([8, 1, 28, 28]).unwrap_err().to_string();
    assert!(err.contains("[N, 3, 227, 227]") && err.contains("[N, 1, 28, 28]"), "{err}");
    let err =
        ModelSpec { input: Some(28), ..ModelSpec::new(ModelKind::AlexNet2012) }.architecture().unwrap_err().to_string();
    assert!(err.contains("too small"), "{err}");
    let err = ModelSpec { towers: Some(3), ..ModelSpec::new(ModelKind::AlexNetSmall) }
        .architecture()
        .unwrap_err()
        .to_string();
    assert!(err.contains("got 3"), "{err}");
    let err =
        ModelSpec { towers: Some(2), ..ModelSpec::new(ModelKind::AlexNetOwt) }.architecture().unwrap_err().to_string();
    assert!(err.contains("exactly 1"), "{err}");
    assert!("alexnet-9000".parse::<ModelKind>().unwrap_err().contains("alexnet-small"));
}

#[test]
#[should_panic(expected = "expects input [N, 1, 28, 28]")]
fn forward_on_wrong_input_panics_with_the_shapes() {
    let model = AlexNetSmallConfig::new().init::<B>(&Default::default());
    model.forward(Tensor::zeros([1, 3, 32, 32], &Default::default()));
}
