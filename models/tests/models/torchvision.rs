//! torchvision's AlexNet weights: a state dict PyTorch made (`scripts/make_torchvision_fixture.py`,
//! a torchvision-layout AlexNet with narrower layers at 99x99) imported into owt gives the
//! logits PyTorch computed, from `.pth` (plain, with its Linear weights saved transposed and
//! its biases at an offset, or channels-last) and from safetensors, on Flex; an export writes
//! the same state dict back; bad files are one-line errors. (owt's tests run the same import
//! on the wgpu test device.)

use burn::backend::Flex;
use burn_store::SafetensorsStore;
use owt_models::torchvision::import;
use owt_models::{AlexNet, AlexNetOwtConfig};

use crate::torchvision_fixture::{
    architecture, assert_same_tensors, exported, fixture, logits_gap, one_tensor_file, tensors, with_first_element,
};

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

/// A state dict saved with other memory layouts (`scripts/make_strided_weights_fixture.py`:
/// Linear weights transposed in their storage, biases at an offset into a larger storage, conv
/// weights channels-last) is read to the same values: the same network, byte for byte.
#[test]
fn weights_saved_transposed_offset_or_channels_last_import_to_the_same_network() {
    let device = Default::default();
    // Compared tensor by tensor: every key, shape, dtype and bit.
    let import_of = |file: &str| {
        let model: AlexNet<Flex> = architecture().try_init(&device).unwrap();
        exported(&import(model, &fixture(file)).unwrap().0)
    };
    let want = import_of("alexnet.pth");
    for file in ["alexnet_transposed.pth", "alexnet_channels_last.pth"] {
        let got = import_of(file);
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
    assert_same_tensors(&exported(&model), &tensors(&fixture("alexnet.safetensors")));
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

/// torchvision's layouts are accepted, narrower or not, and each departure from them (a
/// second tower, grouped convolutions, response normalisation, other poolings, another
/// adaptive pool, dropout elsewhere) is refused naming the network, alone: no check stands in
/// for another.
#[test]
fn each_departure_from_torchvisions_layout_is_refused_alone() {
    use owt_models::torchvision::check_layout;
    use owt_models::{AlexNet2012Config, Architecture, VggConfig};
    let alexnet = AlexNetOwtConfig::new().architecture();
    let vgg = VggConfig::new(11).with_batch_norm(true).architecture();
    for good in [&alexnet, &vgg, &architecture()] {
        assert_eq!(check_layout(good), Ok(()), "{}", good.name);
    }
    type Change = fn(&mut Architecture);
    // Each change, and what the refusal must say of it (the setting and torchvision's).
    let alexnet_changes: [(&str, Change, &str); 8] = [
        ("two towers", |a| a.towers = 2, "its towers: 2"),
        (
            "grouped conv2",
            |a| a.convs[1].groups = 2,
            "its convolution 2 in 2 groups, where torchvision's are ungrouped",
        ),
        ("LRN after conv1", |a| a.lrn_after[0] = true, "its response normalisation after conv1,"),
        (
            "no pool after conv2",
            |a| a.pool_after[1] = false,
            "max pools after conv1, conv5, where torchvision's pools after conv1, conv2, conv5",
        ),
        ("a pool after conv3", |a| a.pool_after[2] = true, "max pools after conv1, conv2, conv3, conv5"),
        (
            "a 7x7 adaptive pool",
            |a| a.adaptive_pool = Some(7),
            "its adaptive pool: 7x7, where torchvision's averages the maps to 6x6",
        ),
        ("no adaptive pool", |a| a.adaptive_pool = None, "its adaptive pool: none,"),
        (
            "dropout before fc8",
            |a| a.dropout_before_fc = [true, true, true],
            "its dropout before fc6, fc7, fc8, where torchvision's is before fc6, fc7",
        ),
    ];
    let vgg_changes: [(&str, Change, &str); 6] = [
        ("two towers", |a| a.towers = 2, "its towers: 2"),
        ("grouped conv1_1", |a| a.convs[0].groups = 2, "its convolution 1 in 2 groups"),
        ("LRN after conv1_1", |a| a.lrn_after[0] = true, "its response normalisation after conv1,"),
        ("a 6x6 adaptive pool", |a| a.adaptive_pool = Some(6), "its adaptive pool: 6x6 (--adaptive-pool 6), where torchvision's averages the maps to 7x7 (--adaptive-pool 7)"),
        ("dropout before fc6", |a| a.dropout_before_fc = [true, true, true], "its dropout before fc6, fc7, fc8, where torchvision's is before fc7, fc8"),
        ("no dropout before fc7", |a| a.dropout_before_fc = [false, false, true], "its dropout before fc8,"),
    ];
    // Refused naming the network and exactly the one setting that differs.
    let refused = |arch: &Architecture, what: &str, said: &str| {
        let e = check_layout(arch).expect_err(what).0;
        assert!(
            e.starts_with(&arch.name) && e.contains("differs from torchvision's") && e.contains(said),
            "{what}: {e}"
        );
        assert_eq!(e.matches("where torchvision's").count(), 1, "{what}: one difference alone: {e}");
    };
    for (what, change, said) in alexnet_changes {
        let mut arch = alexnet.clone();
        change(&mut arch);
        refused(&arch, what, said);
    }
    for (what, change, said) in vgg_changes {
        let mut arch = vgg.clone();
        change(&mut arch);
        refused(&arch, what, said);
    }
    // The 2012 network itself: two towers with response normalisation, both named.
    let e = check_layout(&AlexNet2012Config::new().architecture()).unwrap_err().0;
    assert!(e.contains("its towers: 2") && e.contains("response normalisation after conv1, conv2"), "{e}");
    // What the error prints is its message.
    let e = check_layout(&AlexNet2012Config::new().architecture()).unwrap_err();
    assert_eq!(e.to_string(), e.0);
}
