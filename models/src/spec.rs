//! Choosing a family member by name, as the CLI and checkpoints do.

use serde::{Deserialize, Serialize};

use crate::architecture::{Architecture, ArchitectureError};
use crate::input_transform::{default_resize, PixelNorm, ResizeFilter};
use crate::variants::{AlexNet2012Config, AlexNetOwtConfig, AlexNetSmallConfig};
use crate::vgg::VggConfig;

/// Which family member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelKind {
    /// [`AlexNet2012Config`].
    AlexNet2012,
    /// [`AlexNetOwtConfig`].
    AlexNetOwt,
    /// [`AlexNetSmallConfig`].
    AlexNetSmall,
    /// [`VggConfig`] of depth 11 (configuration A).
    Vgg11,
    /// VGG-11 with batch normalisation.
    Vgg11Bn,
    /// [`VggConfig`] of depth 16 (configuration D).
    Vgg16,
    /// VGG-16 with batch normalisation.
    Vgg16Bn,
}

impl ModelKind {
    /// Every member.
    pub const ALL: [ModelKind; 7] = [
        ModelKind::AlexNet2012,
        ModelKind::AlexNetOwt,
        ModelKind::AlexNetSmall,
        ModelKind::Vgg11,
        ModelKind::Vgg11Bn,
        ModelKind::Vgg16,
        ModelKind::Vgg16Bn,
    ];

    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::AlexNet2012 => "alexnet-2012",
            ModelKind::AlexNetOwt => "alexnet-owt",
            ModelKind::AlexNetSmall => "alexnet-small",
            ModelKind::Vgg11 => "vgg11",
            ModelKind::Vgg11Bn => "vgg11-bn",
            ModelKind::Vgg16 => "vgg16",
            ModelKind::Vgg16Bn => "vgg16-bn",
        }
    }

    /// The VGG depth and batch normalisation of a VGG member; `None` for the AlexNets.
    pub fn vgg(self) -> Option<(usize, bool)> {
        match self {
            ModelKind::Vgg11 => Some((11, false)),
            ModelKind::Vgg11Bn => Some((11, true)),
            ModelKind::Vgg16 => Some((16, false)),
            ModelKind::Vgg16Bn => Some((16, true)),
            _ => None,
        }
    }
}

impl std::str::FromStr for ModelKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModelKind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = ModelKind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown model '{s}': expected one of {}", names.join(", "))
        })
    }
}

/// What a VGG's fc6 reads (`--adaptive-pool`): the last maps averaged to a fixed side by an
/// adaptive pool (torchvision's 7 whatever the input, so ImageNet weights fit any input), or
/// the maps as they are (the VGGs sized for CIFAR's 32x32 images, whose fc6 then reads 512
/// values an image instead of 25,088 copies of them).
///
/// ```
/// use owt_models::{AdaptivePool, ModelKind, ModelSpec};
///
/// let spec = ModelSpec { input: Some(32), hidden: Some(512), ..ModelSpec::new(ModelKind::Vgg11Bn) };
/// let pooled = spec.architecture().unwrap().profile().unwrap();
/// let bare = ModelSpec { adaptive_pool: Some(AdaptivePool::Off), ..spec }.architecture().unwrap().profile().unwrap();
/// // fc6 reads 512 x 7 x 7 values under torchvision's pool, 512 x 1 x 1 without it.
/// assert_eq!(pooled.total_params - bare.total_params, (512 * 49 - 512) * 512);
/// assert_eq!("none".parse::<AdaptivePool>(), Ok(AdaptivePool::Off));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdaptivePool {
    /// The maps averaged to `side` x `side` (at least 1).
    To(usize),
    /// No pool: fc6 reads the last pooling's maps.
    Off,
}

impl AdaptivePool {
    /// The architecture's value: the pooled side, or `None` for no pool.
    pub fn side(self) -> Option<usize> {
        match self {
            AdaptivePool::To(side) => Some(side),
            AdaptivePool::Off => None,
        }
    }

    /// The command line's word for it: the side, or `none`.
    pub fn name(self) -> String {
        match self {
            AdaptivePool::To(side) => side.to_string(),
            AdaptivePool::Off => "none".to_string(),
        }
    }

    /// The word for an architecture's pool (`Option<usize>`, as [`Architecture`] holds it).
    pub fn name_of(side: Option<usize>) -> String {
        side.map_or(AdaptivePool::Off, AdaptivePool::To).name()
    }
}

impl std::str::FromStr for AdaptivePool {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(AdaptivePool::Off),
            _ => match s.parse::<usize>() {
                Ok(side) if side >= 1 => Ok(AdaptivePool::To(side)),
                _ => Err(format!("an adaptive pool is a side of at least 1 (7 is torchvision's) or none, got '{s}'")),
            },
        }
    }
}

/// A member plus the geometry it is built for; `None` fields take the member's defaults.
/// This is what a checkpoint stores to rebuild its network.
///
/// ```
/// use owt_models::{ModelKind, ModelSpec};
///
/// let spec = ModelSpec { input: Some(67), classes: Some(16), ..ModelSpec::new(ModelKind::AlexNetOwt) };
/// let arch = spec.architecture().unwrap();
/// assert_eq!(arch.input, [3, 67, 67]);
/// let wrong = ModelSpec { towers: Some(2), ..ModelSpec::new(ModelKind::AlexNetOwt) };
/// assert!(wrong.architecture().is_err(), "the 2014 network has one tower");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Which member.
    pub kind: ModelKind,
    /// Input side (square images).
    pub input: Option<usize>,
    /// Input channels.
    pub channels: Option<usize>,
    /// Output classes.
    pub classes: Option<usize>,
    /// Towers (only alexnet-small has a choice: 1 or 2).
    pub towers: Option<usize>,
    /// Dropout probability.
    pub dropout: Option<f64>,
    /// Width of fc6 and fc7 (VGG only; `None`: 4096, torchvision's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<usize>,
    /// What fc6 reads (VGG only; `None`: torchvision's adaptive pool to 7x7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_pool: Option<AdaptivePool>,
    /// How pixels become the network's input (owt's own `x / 127.5 - 1` unless the weights
    /// came from elsewhere or the run said otherwise; absent from older checkpoints).
    #[serde(default, skip_serializing_if = "PixelNorm::is_symmetric")]
    pub pixel_norm: PixelNorm,
    /// The shorter side images are resized to before the input's square is cut (`None`:
    /// [`default_resize`] of the input side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resize: Option<usize>,
    /// The filter images are resized with (owt's own: area; absent from older checkpoints,
    /// which resized with [`ResizeFilter::legacy`]).
    #[serde(default = "ResizeFilter::legacy")]
    pub resize_filter: ResizeFilter,
}

/// The largest shorter side images may be resized to (`--resize`): the side of the largest
/// square owt resizes an image to (owt-pixels' limit of 2^26 resized pixels).
pub const MAX_RESIZE: usize = 8192;

impl ModelSpec {
    /// A member with all defaults.
    pub fn new(kind: ModelKind) -> Self {
        Self {
            kind,
            input: None,
            channels: None,
            classes: None,
            towers: None,
            dropout: None,
            hidden: None,
            adaptive_pool: None,
            pixel_norm: PixelNorm::Symmetric,
            resize: None,
            resize_filter: ResizeFilter::Area,
        }
    }

    /// The shorter side this network's images are resized to before its `side` x `side`
    /// input is cut (centred for evaluation, at random for training).
    pub fn resize_side(&self, side: usize) -> usize {
        self.resize.unwrap_or_else(|| default_resize(side))
    }

    /// The architecture, checked: impossible geometry or options (a `resize` above
    /// [`MAX_RESIZE`]) are errors that name the
    /// expected and the given values.
    pub fn architecture(&self) -> Result<Architecture, ArchitectureError> {
        let arch = match self.kind {
            ModelKind::AlexNet2012 => {
                let d = AlexNet2012Config::new();
                self.reject_towers(2)?;
                AlexNet2012Config {
                    classes: self.classes.unwrap_or(d.classes),
                    input: self.input.unwrap_or(d.input),
                    channels: self.channels.unwrap_or(d.channels),
                    dropout: self.dropout.unwrap_or(d.dropout),
                }
                .architecture()
            }
            ModelKind::AlexNetOwt => {
                let d = AlexNetOwtConfig::new();
                self.reject_towers(1)?;
                AlexNetOwtConfig {
                    classes: self.classes.unwrap_or(d.classes),
                    input: self.input.unwrap_or(d.input),
                    channels: self.channels.unwrap_or(d.channels),
                    dropout: self.dropout.unwrap_or(d.dropout),
                }
                .architecture()
            }
            ModelKind::AlexNetSmall => {
                let d = AlexNetSmallConfig::new();
                let towers = self.towers.unwrap_or(d.towers);
                if towers != 1 && towers != 2 {
                    return Err(ArchitectureError(format!("alexnet-small has 1 or 2 towers, got {towers}")));
                }
                AlexNetSmallConfig {
                    classes: self.classes.unwrap_or(d.classes),
                    input: self.input.unwrap_or(d.input),
                    channels: self.channels.unwrap_or(d.channels),
                    towers,
                    dropout: self.dropout.unwrap_or(d.dropout),
                }
                .architecture()
            }
            ModelKind::Vgg11 | ModelKind::Vgg11Bn | ModelKind::Vgg16 | ModelKind::Vgg16Bn => {
                let (depth, batch_norm) = self.kind.vgg().expect("a VGG kind");
                self.reject_towers(1)?;
                let d = VggConfig::new(depth);
                if self.hidden == Some(0) {
                    return Err(ArchitectureError(format!("{}: --hidden must be positive, got 0", self.kind.name())));
                }
                VggConfig {
                    batch_norm,
                    classes: self.classes.unwrap_or(d.classes),
                    input: self.input.unwrap_or(d.input),
                    channels: self.channels.unwrap_or(d.channels),
                    hidden: self.hidden.unwrap_or(d.hidden),
                    adaptive_pool: self.adaptive_pool.map_or(d.adaptive_pool, AdaptivePool::side),
                    dropout: self.dropout.unwrap_or(d.dropout),
                    ..d
                }
                .try_architecture()?
            }
        };
        if self.hidden.is_some() && self.kind.vgg().is_none() {
            return Err(ArchitectureError(format!(
                "{} has fixed FC widths; --hidden is for the VGG networks",
                self.kind.name()
            )));
        }
        if let Some(pool) = self.adaptive_pool.filter(|_| self.kind.vgg().is_none()) {
            return Err(ArchitectureError(format!(
                "{} has a fixed classifier input; --adaptive-pool {} is for the VGG networks",
                self.kind.name(),
                pool.name()
            )));
        }
        if self.adaptive_pool == Some(AdaptivePool::To(0)) {
            return Err(ArchitectureError(format!("{}: --adaptive-pool must be at least 1, got 0", arch.name)));
        }
        let [c, side, _] = arch.input;
        if c == 0 || side == 0 || arch.classes == 0 {
            return Err(ArchitectureError(format!(
                "{}: channels, input side and classes must be positive, got channels {c}, input {side}, classes {}",
                arch.name, arch.classes
            )));
        }
        if !(0.0..1.0).contains(&arch.dropout) {
            return Err(ArchitectureError(format!("{}: dropout must be in [0, 1), got {}", arch.name, arch.dropout)));
        }
        arch.profile()?;
        self.pixel_norm.check().map_err(ArchitectureError)?;
        if let Some(r) = self.resize.filter(|&r| r > MAX_RESIZE) {
            return Err(ArchitectureError(format!(
                "{}: images are resized to a shorter side of at most {MAX_RESIZE} pixels (a square of {MAX_RESIZE} is the most owt resizes one image to), got --resize {r}",
                arch.name
            )));
        }
        if let Some(r) = self.resize.filter(|&r| r < side) {
            return Err(ArchitectureError(format!(
                "{}: images are resized to a shorter side of {r}, below the input side {side} that is cut from them",
                arch.name
            )));
        }
        Ok(arch)
    }

    fn reject_towers(&self, fixed: usize) -> Result<(), ArchitectureError> {
        match self.towers {
            Some(t) if t != fixed => {
                Err(ArchitectureError(format!("{} has exactly {fixed} tower(s), got --towers {t}", self.kind.name())))
            }
            _ => Ok(()),
        }
    }
}
