//! What a network expects of its pixels and its resize, against the formulas in f64:
//! owt's symmetric norm and torchvision's `ToTensor` then `Normalize(mean, std)` for every
//! pixel value and channel, their names both ways, the refusal of unusable statistics, the
//! resize filters' names and the default resize side (8/7 of the input side).

use owt_models::{default_resize, PixelNorm, ResizeFilter};

/// `got` equals `want` to f32's rounding of the formula.
fn close(got: f32, want: f64, what: &str) {
    assert!((got as f64 - want).abs() <= 1e-6 * want.abs().max(1.0), "{what}: {got} vs {want}");
}

#[test]
fn every_pixel_becomes_the_formulas_value() {
    for x in 0..=255u8 {
        for channel in 0..3 {
            close(PixelNorm::Symmetric.apply(x, channel), x as f64 / 127.5 - 1.0, &format!("owt, pixel {x}"));
        }
    }
    assert_eq!((PixelNorm::Symmetric.apply(0, 0), PixelNorm::Symmetric.apply(255, 0)), (-1.0, 1.0));
    // Statistics of their own per channel, so a channel read from another's slot shows.
    let (mean, std) = ([0.1, 0.5, 0.9], [0.2, 0.4, 0.8]);
    let norm = PixelNorm::MeanStd { mean, std };
    for x in 0..=255u8 {
        for channel in 0..5 {
            // A channel past the third (never in an RGB image) reads the third's statistics.
            let c = channel.min(2);
            close(
                norm.apply(x, channel),
                (x as f64 / 255.0 - mean[c]) / std[c],
                &format!("pixel {x}, channel {channel}"),
            );
        }
    }
}

#[test]
fn imagenet_is_torchvisions_statistics_by_name_and_by_value() {
    // torchvision.transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]):
    // the values every torchvision classification weight documents.
    assert_eq!(PixelNorm::IMAGENET, PixelNorm::MeanStd { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] });
    for (name, norm) in [("owt", PixelNorm::Symmetric), ("imagenet", PixelNorm::IMAGENET)] {
        assert_eq!(PixelNorm::from_name(name), Ok(norm));
        assert_eq!(norm.name(), name);
        assert_eq!(norm.check(), Ok(()));
    }
    assert_eq!(PixelNorm::default(), PixelNorm::Symmetric);
    assert!(PixelNorm::Symmetric.is_symmetric() && !PixelNorm::IMAGENET.is_symmetric());
    let own = PixelNorm::MeanStd { mean: [0.5, 0.25, 0.125], std: [1.0, 2.0, 4.0] };
    assert_eq!(own.name(), "mean [0.5, 0.25, 0.125] std [1.0, 2.0, 4.0]");
    assert!(!own.is_symmetric());
    let err = PixelNorm::from_name("caffe").unwrap_err();
    assert!(err.contains("\"caffe\"") && err.contains("owt") && err.contains("imagenet"), "{err}");
    // The formula a PyTorch user must apply names the operations and the statistics.
    assert!(PixelNorm::Symmetric.formula().starts_with("x / 127.5 - 1"), "{}", PixelNorm::Symmetric.formula());
    let formula = own.formula();
    assert!(
        formula.starts_with("(x / 255 - mean) / std")
            && formula.contains("[0.5, 0.25, 0.125]")
            && formula.contains("[1.0, 2.0, 4.0]"),
        "{formula}"
    );
}

#[test]
fn statistics_that_cannot_normalise_are_refused_naming_them() {
    let good = ([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]);
    let bad = [
        ([f64::NAN, 0.5, 0.5], good.1),
        ([0.5, f64::INFINITY, 0.5], good.1),
        (good.0, [0.5, 0.5, 0.0]),
        (good.0, [-0.5, 0.5, 0.5]),
        (good.0, [0.5, f64::NAN, 0.5]),
        (good.0, [0.5, 0.5, f64::INFINITY]),
    ];
    for (mean, std) in bad {
        let err = PixelNorm::MeanStd { mean, std }.check().unwrap_err();
        assert!(err.contains(&format!("mean {mean:?} std {std:?}")), "{err}");
    }
    // Any finite mean (a negative one included) and positive std are fine.
    assert_eq!(PixelNorm::MeanStd { mean: [-1.0, 0.0, 2.0], std: [1e-3, 1.0, 10.0] }.check(), Ok(()));
}

#[test]
fn resize_filters_by_name_and_the_default_side() {
    for (name, filter, torchvision) in [
        ("area", ResizeFilter::Area, "InterpolationMode.BOX"),
        ("bilinear", ResizeFilter::Bilinear, "InterpolationMode.BILINEAR"),
    ] {
        assert_eq!(ResizeFilter::from_name(name), Ok(filter));
        assert_eq!(filter.name(), name);
        assert_eq!(filter.torchvision(), torchvision);
    }
    let err = ResizeFilter::from_name("nearest").unwrap_err();
    assert!(err.contains("\"nearest\"") && err.contains("area") && err.contains("bilinear"), "{err}");
    // Checkpoints from before the filter was stored were resized bilinearly.
    assert_eq!(ResizeFilter::legacy(), ResizeFilter::Bilinear);
    // 8/7 of the side, rounded down: 256 for ImageNet's 224 (torchvision's Resize(256)).
    assert_eq!(default_resize(224), 256);
    for side in 1..2000 {
        assert_eq!(default_resize(side), (side as f64 * 8.0 / 7.0).floor() as usize, "side {side}");
    }
}
