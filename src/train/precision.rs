//! Mixed precision (`--precision`): a step's forward and backward passes in bf16 or f16 on
//! master weights kept in f32, as `torch.autocast` runs them. The module a step computes with
//! is the stored one cast to the low precision by a differentiable cast, so every gradient
//! comes back to its f32 master in f32, where the sync, the momentum and the update work; the
//! images go in cast, the logits come out widened to f32 for the loss. f16's five exponent bits
//! underflow small gradients, so an f16 run scales its loss (dynamic loss scaling, as
//! `torch.cuda.amp.GradScaler`): a step whose gradients overflow is skipped and the scale
//! halved, and the scale doubles after every 2000 steps without one.

use burn::module::{Module, ModuleMapper, Param};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{DType, FloatDType};
use serde::{Deserialize, Serialize};

use crate::error::OwtError;

/// The precision a step computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in f32 (the default).
    #[default]
    F32,
    /// Forward and backward in bfloat16 (f32's exponent range: no loss scale needed).
    Bf16,
    /// Forward and backward in IEEE half precision, with a dynamic loss scale.
    F16,
}

impl Precision {
    /// Every precision, in CLI order.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::Bf16, Precision::F16];

    /// CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// The element type the passes compute in, where it is not the masters' own.
    pub fn low(self) -> Option<FloatDType> {
        match self {
            Precision::F32 => None,
            Precision::Bf16 => Some(FloatDType::BF16),
            Precision::F16 => Some(FloatDType::F16),
        }
    }

    /// Whether a step in this precision scales its loss.
    pub fn scales_loss(self) -> bool {
        self == Precision::F16
    }

    /// Refuses a precision backend `B` cannot compute in on `device`, in one line naming it.
    pub fn check<B: burn::tensor::backend::Backend>(self, device: &B::Device) -> Result<(), OwtError> {
        match self.low() {
            Some(low) if !B::supports_dtype(device, DType::from(low)) => Err(OwtError::input(format!(
                "--precision {}: the {} backend does not compute in {} on this device; use --precision f32 or another backend",
                self.name(),
                B::name(device),
                self.name()
            ))),
            _ => Ok(()),
        }
    }

    /// `module` as a step computes with it: its float parameters cast to the low precision
    /// by a differentiable cast (the same parameters: gradients reach them in their own dtype).
    pub fn compute_module<B: AutodiffBackend, M: Module<B>>(self, module: M) -> M {
        match self.low() {
            Some(dtype) => module.map(&mut CastParams(dtype)),
            None => module,
        }
    }

    /// `x` in the precision the passes compute in.
    pub fn input<B: burn::tensor::backend::Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self.low() {
            Some(dtype) => x.cast(dtype),
            None => x,
        }
    }

    /// `logits` widened to f32 for the loss (softmax and its logarithm in f32, as autocast
    /// runs them).
    pub fn output<B: burn::tensor::backend::Backend, const D: usize>(self, logits: Tensor<B, D>) -> Tensor<B, D> {
        match self.low() {
            Some(_) => logits.cast(FloatDType::F32),
            None => logits,
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Precision::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            format!("unknown precision {s:?}: expected one of {}", Precision::ALL.map(Precision::name).join(", "))
        })
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Casts every float parameter, keeping its id.
struct CastParams(FloatDType);

impl<B: AutodiffBackend> ModuleMapper<B> for CastParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        Param::from_mapped_value(id, tensor.cast(self.0), mapper)
    }
}

/// Dynamic loss scaling (`torch.cuda.amp.GradScaler`'s defaults): the loss is multiplied by
/// `scale` before the backward pass and the gradients divided by it after; a step whose
/// gradients hold an infinity or a NaN is skipped and the scale halved, and the scale doubles
/// after [`LossScale::GROWTH_INTERVAL`] steps in a row without one. Stored with each epoch's
/// metrics, so a resumed run continues with the scale it had.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossScale {
    /// The factor the loss is multiplied by.
    pub scale: f64,
    /// Steps in a row whose gradients were finite.
    pub good_steps: usize,
    /// Steps skipped in the epoch (their gradients overflowed).
    pub skipped_steps: usize,
}

impl Default for LossScale {
    fn default() -> Self {
        Self { scale: Self::INITIAL, good_steps: 0, skipped_steps: 0 }
    }
}

impl LossScale {
    /// The first scale, 2^16.
    pub const INITIAL: f64 = 65536.0;
    /// Finite steps in a row after which the scale doubles.
    pub const GROWTH_INTERVAL: usize = 2000;

    /// The scale after a step whose gradients were `finite` (applied) or not (skipped).
    pub fn update(&mut self, finite: bool) {
        if finite {
            self.good_steps += 1;
            if self.good_steps == Self::GROWTH_INTERVAL {
                self.scale *= 2.0;
                self.good_steps = 0;
            }
        } else {
            self.scale /= 2.0;
            self.good_steps = 0;
            self.skipped_steps += 1;
        }
    }

    /// The state a new epoch starts from: the scale and its run of finite steps, no skips yet.
    pub fn next_epoch(self) -> Self {
        Self { skipped_steps: 0, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_halves_on_overflow_and_doubles_after_a_run_of_finite_steps() {
        let mut s = LossScale::default();
        s.update(false);
        assert_eq!((s.scale, s.good_steps, s.skipped_steps), (32768.0, 0, 1));
        for _ in 0..LossScale::GROWTH_INTERVAL - 1 {
            s.update(true);
        }
        assert_eq!(s.scale, 32768.0);
        s.update(true);
        assert_eq!((s.scale, s.good_steps, s.skipped_steps), (65536.0, 0, 1));
        assert_eq!(s.next_epoch().skipped_steps, 0);
        for p in Precision::ALL {
            assert_eq!(p.name().parse::<Precision>(), Ok(p));
        }
        assert!("fp8".parse::<Precision>().unwrap_err().contains("bf16"));
    }

    /// A precision the backend cannot compute in is refused before the run, in one line naming
    /// the precision, the backend and the way out; one it can is let through. Flex computes in
    /// both low precisions; wgpu (WGSL) has no bf16.
    #[test]
    fn a_precision_the_backend_lacks_is_refused_naming_it_and_the_others_pass() {
        use burn::backend::Flex;
        for p in Precision::ALL {
            assert!(p.check::<Flex>(&Default::default()).is_ok(), "Flex computes in {p}");
        }
        #[cfg(feature = "wgpu")]
        {
            use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
            type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
            assert!(
                !crate::runtime::kernel_cache::wgpu_adapters().is_empty(),
                "no Vulkan adapter: install mesa-vulkan-drivers"
            );
            let device = WgpuDevice::DefaultDevice;
            assert!(Precision::F32.check::<Wgpu>(&device).is_ok(), "f32 needs nothing of a backend");
            let e = Precision::Bf16.check::<Wgpu>(&device).unwrap_err().to_string();
            for says in ["--precision bf16", "does not compute in bf16", "--precision f32"] {
                assert!(e.contains(says), "{e:?} should say {says:?}");
            }
            assert!(!e.contains('\n'), "one line: {e:?}");
        }
    }

    #[test]
    fn precisions_print_as_spelled() {
        for p in Precision::ALL {
            assert_eq!(p.to_string(), p.name());
        }
        assert_eq!(Precision::ALL.map(Precision::name), ["f32", "bf16", "f16"]);
    }

    /// A loss scale is for a precision whose smallest normal number is above f32's: small
    /// gradients underflow there (f16's 6.1e-5), not in bf16, which has f32's exponent range.
    #[test]
    fn only_a_precision_narrower_than_f32s_exponent_range_scales_its_loss() {
        use burn::tensor::{bf16, f16};
        for p in Precision::ALL {
            let smallest_normal = match p.low() {
                None => f32::MIN_POSITIVE as f64,
                Some(FloatDType::BF16) => bf16::MIN_POSITIVE.to_f64(),
                Some(FloatDType::F16) => f16::MIN_POSITIVE.to_f64(),
                Some(other) => panic!("{p} computes in {other:?}"),
            };
            assert_eq!(p.scales_loss(), smallest_normal > f32::MIN_POSITIVE as f64, "{p}");
        }
        assert_eq!(Precision::ALL.map(Precision::low), [None, Some(FloatDType::BF16), Some(FloatDType::F16)]);
    }

    #[test]
    fn a_new_epoch_keeps_the_scale_and_its_run_and_forgets_the_skips() {
        let s = LossScale { scale: 1024.0, good_steps: 7, skipped_steps: 3 };
        assert_eq!(s.next_epoch(), LossScale { scale: 1024.0, good_steps: 7, skipped_steps: 0 });
    }

    /// `unscale` divides every gradient by the scale and finds a step non-finite whatever mix
    /// of NaNs and infinities its gradients hold, in one parameter or spread over several.
    #[test]
    fn unscale_divides_by_the_scale_and_counts_every_non_finite_gradient() {
        use burn::backend::{Autodiff, Flex};
        use burn::nn::{Linear, LinearConfig};
        use burn::optim::GradientsParams;
        type A = Autodiff<Flex>;
        let device = Default::default();
        let linear: Linear<A> = LinearConfig::new(2, 2).init(&device);
        let bias_id = linear.bias.as_ref().unwrap().id;
        let grads = |weight: [f32; 4], bias: [f32; 2]| {
            let mut g = GradientsParams::new();
            g.register::<Flex, 2>(
                linear.weight.id,
                Tensor::from_data(TensorData::new(weight.to_vec(), [2, 2]), &device),
            );
            g.register::<Flex, 1>(bias_id, Tensor::from_data(TensorData::new(bias.to_vec(), [2]), &device));
            g
        };
        let (unscaled, finite) = unscale::<A, _>(&linear, grads([4.0, -8.0, 0.5, 0.0], [2.0, 1024.0]), 4.0);
        assert!(finite);
        let weight = unscaled.get::<Flex, 2>(linear.weight.id).unwrap().into_data().to_vec::<f32>().unwrap();
        let bias = unscaled.get::<Flex, 1>(bias_id).unwrap().into_data().to_vec::<f32>().unwrap();
        assert_eq!((weight, bias), (vec![1.0, -2.0, 0.125, 0.0], vec![0.5, 256.0]));
        let (nan, inf) = (f32::NAN, f32::INFINITY);
        for (weight, bias, what) in [
            ([nan, inf, 1.0, 1.0], [1.0, 1.0], "a NaN and an infinity in one gradient"),
            ([inf, 1.0, 1.0, 1.0], [-inf, 1.0], "an infinity in each of two gradients"),
            ([1.0, 1.0, 1.0, 1.0], [1.0, nan], "one NaN"),
        ] {
            assert!(!unscale::<A, _>(&linear, grads(weight, bias), 4.0).1, "{what}");
        }
    }
}

/// `grads` of `module`'s parameters divided by `scale`, and whether every one of them is
/// finite (read back from the device: a skipped step must be known before the update).
pub fn unscale<B: AutodiffBackend, M: Module<B>>(
    module: &M,
    grads: burn::optim::GradientsParams,
    scale: f64,
) -> (burn::optim::GradientsParams, bool) {
    let mut visitor = Unscale::<B> { grads, factor: 1.0 / scale, bad: None };
    module.visit(&mut visitor);
    let finite = visitor.bad.is_none_or(|bad| bad.into_scalar().elem::<i64>() == 0);
    (visitor.grads, finite)
}

/// Divides each gradient by the scale and counts its non-finite elements.
struct Unscale<B: AutodiffBackend> {
    grads: burn::optim::GradientsParams,
    factor: f64,
    bad: Option<Tensor<B::InnerBackend, 1, Int>>,
}

impl<B: AutodiffBackend> burn::module::ModuleVisitor<B> for Unscale<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(param.id) else { return };
        let grad = grad.mul_scalar(self.factor);
        let bad = grad.clone().is_nan().int().sum() + grad.clone().is_inf().int().sum();
        self.bad = Some(match self.bad.take() {
            Some(sum) => sum + bad,
            None => bad,
        });
        self.grads.register::<B::InnerBackend, D>(param.id, grad);
    }
}
