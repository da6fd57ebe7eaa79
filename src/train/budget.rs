//! Refusing up front what cannot fit: the memory a training run needs, estimated from the
//! layer profile with checked arithmetic, against what the machine has. A run that would need
//! more fails in one line with the estimate, instead of aborting later in the allocator.

use owt_models::Architecture;

use crate::error::OwtError;

/// Bytes of one f32.
const F32: u64 = 4;
/// Copies of every parameter a step keeps: weights, gradients, momentum.
const PARAM_COPIES: u64 = 3;
/// Copies of every activation a step keeps: the forward value saved for backward, its
/// gradient and the working buffers around them.
const ACTIVATION_COPIES: u64 = 3;

/// What a run needs, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Weights, gradients and momentum.
    pub parameters: u64,
    /// Activations of one batch, forward and backward.
    pub activations: u64,
    /// Images held on the host (synthetic or decoded datasets), if known.
    pub data: u64,
}

impl Estimate {
    /// Everything together.
    pub fn total(&self) -> u64 {
        self.parameters.saturating_add(self.activations).saturating_add(self.data)
    }
}

/// A byte count the way people read it (e.g. `1.5 GB`).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KB", "MB", "GB", "TB", "PB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The memory of a training run of `arch` at batch `batch` holding `images` host images, or
/// an error if the count does not even fit in 64 bits.
pub fn estimate(arch: &Architecture, batch: usize, images: u64) -> Result<Estimate, OwtError> {
    let profile = arch.profile()?;
    let overflow = |what: &str| OwtError::input(format!("{}: {what} do not fit in 64 bits", arch.name));
    let parameters =
        (profile.total_params as u64).checked_mul(F32 * PARAM_COPIES).ok_or_else(|| overflow("the parameter bytes"))?;
    let activations = profile
        .activation_elements()
        .checked_mul(batch as u64)
        .and_then(|x| x.checked_mul(F32 * ACTIVATION_COPIES))
        .ok_or_else(|| overflow("the activation bytes of a batch"))?;
    // A step is about six FLOPs per forward multiply-accumulate (the forward product and two
    // backward ones); what counts them (`owt plan`'s cost model) needs them, and any sum of
    // them, within 64 bits: 64 per multiply-accumulate leaves that room.
    profile
        .total_macs
        .checked_mul(batch as u64)
        .and_then(|m| m.checked_mul(64))
        .ok_or_else(|| overflow("the operations of a step"))?;
    let [c, h, w] = arch.input;
    let data = [c, h, w]
        .iter()
        .try_fold(images, |acc, &x| acc.checked_mul(x as u64))
        .ok_or_else(|| overflow("the dataset bytes"))?;
    Ok(Estimate { parameters, activations, data })
}

/// The memory this machine has available (Linux: `MemAvailable` of /proc/meminfo), if known.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// Refuses a run whose estimate exceeds `available` bytes (when known), naming both.
pub fn check_fits(
    arch: &Architecture,
    batch: usize,
    estimate: Estimate,
    available: Option<u64>,
) -> Result<(), OwtError> {
    let Some(available) = available else { return Ok(()) };
    if estimate.total() <= available {
        return Ok(());
    }
    Err(OwtError::input(format!(
        "{} at batch {batch} needs about {} ({} of weights, gradients and momentum, {} of activations, {} of images), this machine has {} available: lower --batch, --input, --classes or --limit",
        arch.name,
        human(estimate.total()),
        human(estimate.parameters),
        human(estimate.activations),
        human(estimate.data),
        human(available)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use owt_models::{ModelKind, ModelSpec};

    #[test]
    fn estimates_follow_the_profile_and_refuse_what_does_not_fit() {
        let arch = ModelSpec::new(ModelKind::AlexNetOwt).architecture().unwrap();
        let e = estimate(&arch, 128, 1000).unwrap();
        assert_eq!(e.parameters, 61_100_840 * 12);
        assert_eq!(e.data, 1000 * 3 * 224 * 224);
        let per_image = arch.profile().unwrap().activation_elements();
        assert_eq!(e.activations, per_image * 128 * 12);
        check_fits(&arch, 128, e, Some(e.total())).unwrap();
        check_fits(&arch, 128, e, None).unwrap();
        let err = check_fits(&arch, 128, e, Some(e.total() - 1)).unwrap_err().to_string();
        assert!(err.contains("needs about") && err.contains("available") && err.contains("--batch"), "{err}");
        assert!(estimate(&arch, usize::MAX, 0).unwrap_err().to_string().contains("do not fit in 64 bits"));
    }

    #[test]
    fn byte_counts_read_as_people_write_them() {
        assert_eq!(human(999), "999 bytes");
        assert_eq!(human(1_500_000_000), "1.5 GB");
    }
}
