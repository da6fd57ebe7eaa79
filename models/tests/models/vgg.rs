//! The VGG networks: torchvision's parameter counts at 224 x 224 and 1000 classes, computed
//! from the stage list and counted on the built modules, the Caffe layer names, the profile
//! against the real activations, and batch normalisation against its formula.

use burn::backend::{Autodiff, Flex};
use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::nn::BatchNormConfig;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_models::{batch_norm, AdaptivePool, Architecture, ModelKind, ModelSpec, VggConfig};

type B = Flex;

fn spec(kind: ModelKind) -> ModelSpec {
    ModelSpec::new(kind)
}

#[test]
fn parameter_counts_are_torchvisions() {
    // torchvision.models.vgg11 / vgg11_bn / vgg16 / vgg16_bn: sum(p.numel() for p in m.parameters()).
    let expected = [
        (ModelKind::Vgg11, 132_863_336),
        (ModelKind::Vgg11Bn, 132_868_840),
        (ModelKind::Vgg16, 138_357_544),
        (ModelKind::Vgg16Bn, 138_365_992),
    ];
    for (kind, params) in expected {
        let arch = spec(kind).architecture().unwrap();
        assert_eq!(arch.name, kind.name());
        let profile = arch.profile().unwrap();
        assert_eq!(profile.total_params, params, "{}", arch.name);
        let listed: usize = arch.parameters().unwrap().iter().map(|(_, s)| s.iter().product::<usize>()).sum();
        assert_eq!(listed, params, "{}: the parameter list", arch.name);
    }
    // VGG-16: 123.6 M of its 138.4 M parameters in the three FC layers; 15.5 G MACs an image.
    let vgg16 = spec(ModelKind::Vgg16).architecture().unwrap().profile().unwrap();
    assert_eq!(vgg16.sum_by_prefix("fc").0, 25088 * 4096 + 4096 + 4096 * 4096 + 4096 + 4096 * 1000 + 1000);
    assert_eq!((vgg16.total_macs as f64 / 1e8).round(), 155.0);
    assert_eq!(vgg16.layer("pool5").unwrap().output_shape, [512, 7, 7]);
    assert_eq!(vgg16.layer("conv3_3").unwrap().params, 256 * 256 * 9 + 256);
}

#[test]
fn layers_carry_the_caffe_names() {
    let arch = spec(ModelKind::Vgg11Bn).architecture().unwrap();
    let convs: Vec<String> = (1..=arch.convs.len()).map(|n| arch.conv_name(n)).collect();
    assert_eq!(convs, ["conv1_1", "conv2_1", "conv3_1", "conv3_2", "conv4_1", "conv4_2", "conv5_1", "conv5_2"]);
    let params: Vec<String> = arch.parameters().unwrap().into_iter().map(|(p, _)| p).take(6).collect();
    assert_eq!(
        params,
        ["conv1_1.weight", "conv1_1.bias", "bn1_1.gamma", "bn1_1.beta", "conv2_1.weight", "conv2_1.bias"]
    );
    let buffers: Vec<String> = arch.buffers().into_iter().map(|(p, _)| p).take(2).collect();
    assert_eq!(buffers, ["bn1_1.running_mean", "bn1_1.running_var"]);
    assert!(spec(ModelKind::Vgg16).architecture().unwrap().buffers().is_empty());
}

/// Every float tensor of a module (parameters and running statistics) by dotted path.
fn module_tensors<M: Module<B>>(module: &M) -> Vec<(String, Vec<usize>)> {
    struct Paths(Vec<String>, Vec<(String, Vec<usize>)>);
    impl ModuleVisitor<B> for Paths {
        fn enter_module(&mut self, name: &str, _: &str) {
            self.0.push(name.to_string());
        }
        fn exit_module(&mut self, _: &str, _: &str) {
            self.0.pop();
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.1.push((self.0.join("."), param.val().dims().to_vec()));
        }
    }
    let mut paths = Paths(Vec::new(), Vec::new());
    module.visit(&mut paths);
    paths.1
}

fn assert_module_matches(arch: &Architecture, batch: usize) {
    let model = arch.init::<B>(&Default::default());
    let profile = arch.profile().unwrap();
    // Burn counts batch normalisation's running statistics among a module's parameters.
    let buffers: usize = arch.buffers().iter().map(|(_, s)| s.iter().product::<usize>()).sum();
    assert_eq!(model.num_params(), profile.total_params + buffers, "{}: module vs profile parameters", arch.name);
    let mut found = module_tensors(&model);
    let mut listed = arch.parameters().unwrap();
    listed.extend(arch.buffers());
    found.sort();
    listed.sort();
    assert_eq!(found, listed, "{}: the module's tensors vs the architecture's list", arch.name);
    let [c, h, w] = arch.input;
    let x = Tensor::<B, 4>::random([batch, c, h, w], Distribution::Default, &Default::default());
    let mut seen = Vec::new();
    let y = model.forward_observed(x, &mut |name, shape| seen.push((name.to_string(), shape.to_vec())));
    let expected: Vec<(String, Vec<usize>)> =
        profile.layers.iter().map(|l| (l.name.clone(), l.output_shape.clone())).collect();
    assert_eq!(seen, expected, "{}: observed activations vs profile", arch.name);
    assert_eq!(y.dims(), [batch, arch.classes]);
}

#[test]
fn full_size_vgg16_bn_module_matches_its_profile() {
    assert_module_matches(&spec(ModelKind::Vgg16Bn).architecture().unwrap(), 1);
}

#[test]
fn every_vgg_at_a_small_side_matches_its_profile() {
    for kind in [ModelKind::Vgg11, ModelKind::Vgg11Bn, ModelKind::Vgg16, ModelKind::Vgg16Bn] {
        for (input, channels) in [(32, 1), (64, 3)] {
            let spec = ModelSpec {
                input: Some(input),
                channels: Some(channels),
                classes: Some(10),
                hidden: Some(32),
                ..ModelSpec::new(kind)
            };
            assert_module_matches(&spec.architecture().unwrap(), 2);
        }
    }
    // 16 is too small for five halvings: an error naming the layer and the sides.
    let e = ModelSpec { input: Some(16), ..ModelSpec::new(ModelKind::Vgg11) }.architecture().unwrap_err();
    assert!(e.0.contains("pool5") && e.0.contains("1x1"), "{e}");
    let e = ModelSpec { towers: Some(2), ..ModelSpec::new(ModelKind::Vgg16) }.architecture().unwrap_err();
    assert!(e.0.contains("exactly 1 tower"), "{e}");
    let e = ModelSpec { hidden: Some(64), ..ModelSpec::new(ModelKind::AlexNetOwt) }.architecture().unwrap_err();
    assert!(e.0.contains("--hidden"), "{e}");
    assert!(VggConfig::new(19).try_architecture().unwrap_err().0.contains("11, 13 or 16"));
}

/// Without the adaptive pool (`AdaptivePool::Off`) fc6 reads the last pooling's maps: the
/// built module has the profile's tensors and activations at 32 and 64, fc6's input is
/// 512 x side² of pool5, and a spec that says nothing keeps torchvision's 7.
#[test]
fn without_the_adaptive_pool_fc6_reads_the_maps_as_they_are() {
    for (input, pool5) in [(32, 1), (64, 2)] {
        let spec = ModelSpec {
            input: Some(input),
            channels: Some(1),
            classes: Some(10),
            hidden: Some(32),
            adaptive_pool: Some(AdaptivePool::Off),
            ..ModelSpec::new(ModelKind::Vgg11Bn)
        };
        let arch = spec.architecture().unwrap();
        assert_eq!(arch.adaptive_pool, None);
        assert_module_matches(&arch, 2);
        let profile = arch.profile().unwrap();
        assert!(profile.layer("avgpool").is_none(), "no pool in the profile");
        assert_eq!(profile.layer("fc6").unwrap().params, 512 * pool5 * pool5 * 32 + 32);
        let default = ModelSpec { adaptive_pool: None, ..spec.clone() }.architecture().unwrap();
        assert_eq!(default.adaptive_pool, Some(7));
        assert_eq!(default.profile().unwrap().layer("fc6").unwrap().params, 512 * 49 * 32 + 32);
    }
    let to = |side| ModelSpec { adaptive_pool: Some(AdaptivePool::To(side)), ..ModelSpec::new(ModelKind::Vgg11) };
    assert_eq!(to(3).architecture().unwrap().profile().unwrap().layer("fc6").unwrap().params, 512 * 9 * 4096 + 4096);
    assert!(to(0).architecture().unwrap_err().0.contains("at least 1"));
    let e = ModelSpec { adaptive_pool: Some(AdaptivePool::Off), ..ModelSpec::new(ModelKind::AlexNetOwt) }
        .architecture()
        .unwrap_err();
    assert!(e.0.contains("--adaptive-pool none") && e.0.contains("VGG"), "{e}");
    for (word, pool) in [("none", AdaptivePool::Off), ("7", AdaptivePool::To(7)), ("1", AdaptivePool::To(1))] {
        assert_eq!(word.parse::<AdaptivePool>(), Ok(pool));
        assert_eq!(pool.name(), word);
    }
    for bad in ["0", "-1", "off", ""] {
        assert!(bad.parse::<AdaptivePool>().unwrap_err().contains(&format!("'{bad}'")), "{bad}");
    }
}

/// Batch normalisation by its formula in f64, per channel over images and positions.
fn normalised_by_hand(
    x: &[f32],
    [n, c, h, w]: [usize; 4],
    gamma: &[f32],
    beta: &[f32],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let at = |b: usize, ch: usize, p: usize| x[(b * c + ch) * h * w + p] as f64;
    let m = (n * h * w) as f64;
    let mut out = vec![0.0; x.len()];
    let (mut means, mut vars) = (Vec::new(), Vec::new());
    for ch in 0..c {
        let mean = (0..n).flat_map(|b| (0..h * w).map(move |p| (b, p))).map(|(b, p)| at(b, ch, p)).sum::<f64>() / m;
        let var = (0..n)
            .flat_map(|b| (0..h * w).map(move |p| (b, p)))
            .map(|(b, p)| (at(b, ch, p) - mean).powi(2))
            .sum::<f64>()
            / m;
        for b in 0..n {
            for p in 0..h * w {
                out[(b * c + ch) * h * w + p] =
                    (at(b, ch, p) - mean) / (var + 1e-5).sqrt() * gamma[ch] as f64 + beta[ch] as f64;
            }
        }
        means.push(mean);
        vars.push(var);
    }
    (out, means, vars)
}

#[test]
fn batch_norm_trains_on_the_batch_statistics_and_evaluates_on_the_running_ones() {
    type A = Autodiff<B>;
    let device = Default::default();
    let dims = [3, 4, 5, 2];
    let mut bn = BatchNormConfig::new(4).init::<A>(&device);
    bn.gamma = Param::from_tensor(Tensor::random([4], Distribution::Uniform(0.5, 2.0), &device));
    bn.beta = Param::from_tensor(Tensor::random([4], Distribution::Uniform(-1.0, 1.0), &device));
    let x = Tensor::<A, 4>::random(dims, Distribution::Uniform(-3.0, 5.0), &device);
    let xs = x.clone().into_data().to_vec::<f32>().unwrap();
    let gamma = bn.gamma.val().into_data().to_vec::<f32>().unwrap();
    let beta = bn.beta.val().into_data().to_vec::<f32>().unwrap();
    let (want, means, vars) = normalised_by_hand(&xs, dims, &gamma, &beta);
    let got = batch_norm(&bn, x.clone()).into_data().to_vec::<f32>().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((*g as f64 - w).abs() < 1e-5, "training pass: {g} vs {w}");
    }
    // Running statistics: 0.9 of the old (0 and 1) and 0.1 of the batch's, the variance
    // unbiased over the 3 x 5 x 2 = 30 values of a channel.
    let running_mean = bn.running_mean.value_sync().into_data().to_vec::<f32>().unwrap();
    let running_var = bn.running_var.value_sync().into_data().to_vec::<f32>().unwrap();
    for ch in 0..4 {
        assert!((running_mean[ch] as f64 - 0.1 * means[ch]).abs() < 1e-6);
        assert!((running_var[ch] as f64 - (0.9 + 0.1 * vars[ch] * 30.0 / 29.0)).abs() < 1e-5);
    }
    // Evaluation (no autodiff): the running statistics, not the batch's.
    let valid = bn.valid();
    let y = batch_norm(&valid, x.inner()).into_data().to_vec::<f32>().unwrap();
    let c = 4;
    let hw = 10;
    for (i, (g, &v)) in y.iter().zip(&xs).enumerate() {
        let ch = (i / hw) % c;
        let w = (v - running_mean[ch]) / (running_var[ch] + 1e-5).sqrt() * gamma[ch] + beta[ch];
        assert!((g - w).abs() < 1e-5, "evaluation pass: {g} vs {w}");
    }
}
