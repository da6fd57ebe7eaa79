//! What a network expects of its input images, as part of its spec: how 8-bit pixels become
//! its floats, and the shorter side images are resized to (and with which filter) before the
//! square of its input side is cut. A network trained on one scale and fed another computes confidently and wrongly,
//! so a checkpoint carries both (torchvision's weights expect ImageNet's mean and std).

use serde::{Deserialize, Serialize};

/// How a pixel `x` in 0..=255 of channel `c` becomes the network's input.
///
/// ```
/// use owt_models::PixelNorm;
///
/// assert_eq!(PixelNorm::Symmetric.apply(255, 0), 1.0);
/// let x = PixelNorm::IMAGENET.apply(124, 0); // ImageNet's red mean, 0.485 x 255 ~ 123.7
/// assert!(x.abs() < 0.01, "{x}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PixelNorm {
    /// owt's own: `x / 127.5 - 1`, every channel to [-1, 1].
    #[default]
    Symmetric,
    /// `(x / 255 - mean[c]) / std[c]`: torchvision's `ToTensor` then `Normalize(mean, std)`.
    MeanStd {
        /// Per channel (R, G, B; a grey network uses the first), in [0, 1] units.
        mean: [f64; 3],
        /// Per channel, positive.
        std: [f64; 3],
    },
}

impl PixelNorm {
    /// ImageNet's statistics, which torchvision's pretrained weights expect.
    pub const IMAGENET: PixelNorm = PixelNorm::MeanStd { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

    /// The norms by name (`--input-norm`): `owt` and `imagenet`.
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "owt" => Ok(PixelNorm::Symmetric),
            "imagenet" => Ok(PixelNorm::IMAGENET),
            _ => Err(format!(
                "unknown input norm {name:?}: expected owt (x / 127.5 - 1) or imagenet (ImageNet's mean and std)"
            )),
        }
    }

    /// The norm in words: `owt`, `imagenet`, or its mean and std.
    pub fn name(&self) -> String {
        match self {
            PixelNorm::Symmetric => "owt".into(),
            n if *n == PixelNorm::IMAGENET => "imagenet".into(),
            PixelNorm::MeanStd { mean, std } => format!("mean {mean:?} std {std:?}"),
        }
    }

    /// The formula, for what a PyTorch user must apply.
    pub fn formula(&self) -> String {
        match self {
            PixelNorm::Symmetric => {
                "x / 127.5 - 1 (torchvision: ToTensor() then Normalize([0.5] * 3, [0.5] * 3))".into()
            }
            PixelNorm::MeanStd { mean, std } => {
                format!("(x / 255 - mean) / std with mean {mean:?}, std {std:?} (torchvision: ToTensor() then Normalize(mean, std))")
            }
        }
    }

    /// Pixel `pixel` of channel `channel` as the network's input, in f32 as the device
    /// computes it (`x / 127.5 - 1`, or `(x / 255 - mean) / std` in that order).
    pub fn apply(&self, pixel: u8, channel: usize) -> f32 {
        match self {
            PixelNorm::Symmetric => pixel as f32 / 127.5 - 1.0,
            PixelNorm::MeanStd { mean, std } => {
                let c = channel.min(2);
                (pixel as f32 / 255.0 - mean[c] as f32) / std[c] as f32
            }
        }
    }

    /// Refuses a standard deviation that is not positive and finite, or a mean that is not
    /// finite.
    pub fn check(&self) -> Result<(), String> {
        match self {
            PixelNorm::Symmetric => Ok(()),
            PixelNorm::MeanStd { mean, std } => {
                if mean.iter().all(|m| m.is_finite()) && std.iter().all(|s| s.is_finite() && *s > 0.0) {
                    Ok(())
                } else {
                    Err(format!("input norm: expected finite means and positive standard deviations, got mean {mean:?} std {std:?}"))
                }
            }
        }
    }

    /// Whether this is owt's own norm (what a spec that says nothing means).
    pub fn is_symmetric(&self) -> bool {
        *self == PixelNorm::Symmetric
    }
}

/// The filter images are resized with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResizeFilter {
    /// Exact area averaging (Pillow's box filter; PyTorch: `InterpolationMode.BOX`): owt's
    /// own, what its fast decode is measured against.
    Area,
    /// Pillow's antialiased bilinear (torchvision's `Resize` default): what torchvision's
    /// weights were evaluated with, and what owt's image folders used before the filter was
    /// stored (the `image` crate's triangle filter, the same kernel).
    Bilinear,
}

impl ResizeFilter {
    /// The filter of a checkpoint that does not say (written before it was stored).
    pub fn legacy() -> Self {
        ResizeFilter::Bilinear
    }

    /// The filters by name (`--resize-filter`).
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "area" => Ok(ResizeFilter::Area),
            "bilinear" => Ok(ResizeFilter::Bilinear),
            _ => Err(format!("unknown resize filter {name:?}: expected area or bilinear")),
        }
    }

    /// The filter's name.
    pub fn name(self) -> &'static str {
        match self {
            ResizeFilter::Area => "area",
            ResizeFilter::Bilinear => "bilinear",
        }
    }

    /// torchvision's name for it.
    pub fn torchvision(self) -> &'static str {
        match self {
            ResizeFilter::Area => "InterpolationMode.BOX",
            ResizeFilter::Bilinear => "InterpolationMode.BILINEAR",
        }
    }
}

/// The shorter side images are resized to before a network's `side` x `side` input is cut
/// from them when nothing else is said: 8/7 of the side (256 for 224), as ImageNet training
/// and torchvision's evaluation transform do.
pub fn default_resize(side: usize) -> usize {
    side * 8 / 7
}
