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

/// Memory a dry run (`owt plan`) takes per pair of ranks: each collective's pieces are
/// shapes on every rank for every other rank. Measured 2026-12-02 (debug build, this 2-core
/// machine): about 16 KB per pair at 128 ranks and 10 KB at 256, for every AlexNet and plan
/// (300 MB at 128 ranks, 700 MB at 256); the larger is taken.
pub const DRY_RUN_BYTES_PER_RANK_PAIR: u64 = 16 << 10;

/// Memory a dry run takes whatever the ranks: the program, the model's shapes (40 MB
/// measured).
pub const DRY_RUN_BASE_BYTES: u64 = 64 << 20;

/// The most ranks a dry run can stand for: one shape-only device each, and Burn's device ids
/// have 16 bits.
pub const MAX_DRY_RUN_RANKS: usize = u16::MAX as usize - 1;

/// The memory a dry run of a step on `ranks` ranks takes, about.
pub fn dry_run_estimate(ranks: usize) -> u64 {
    let r = ranks as u64;
    DRY_RUN_BASE_BYTES.saturating_add(r.saturating_mul(r).saturating_mul(DRY_RUN_BYTES_PER_RANK_PAIR))
}

/// Refuses a dry run on `ranks` ranks (`what`: the flag that says so) that cannot be held:
/// more ranks than shape-only devices can be made, or an estimate above `available` bytes
/// (when known), naming both.
pub fn check_dry_run_fits(ranks: usize, what: &str, available: Option<u64>) -> Result<(), OwtError> {
    if ranks > MAX_DRY_RUN_RANKS {
        return Err(OwtError::input(format!(
            "{what}: a dry run stands for at most {MAX_DRY_RUN_RANKS} ranks (one shape-only device each, Burn's device ids have 16 bits), got {ranks}"
        )));
    }
    let needs = dry_run_estimate(ranks);
    match available {
        Some(available) if needs > available => Err(OwtError::input(format!(
            "{what}: a dry run of {ranks} ranks needs about {} (its collectives' pieces, {} per pair of ranks), this machine has {} available: plan fewer ranks (the bytes per rank follow the same formulas at any count)",
            human(needs),
            human(DRY_RUN_BYTES_PER_RANK_PAIR),
            human(available)
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use owt_models::{ModelKind, ModelSpec};

    #[test]
    fn dry_runs_beyond_the_memory_or_the_device_ids_are_refused() {
        let gb = 1u64 << 30;
        // 4096 ranks: about 275 GB, refused on this machine's 24 GiB; 1024 ranks fit in it.
        assert_eq!(dry_run_estimate(4096), DRY_RUN_BASE_BYTES + 4096 * 4096 * DRY_RUN_BYTES_PER_RANK_PAIR);
        let e = check_dry_run_fits(4096, "--devices 4096", Some(24 * gb)).unwrap_err().to_string();
        assert!(e.contains("--devices 4096: a dry run of 4096 ranks needs about 274.9 GB"), "{e}");
        assert!(e.contains("this machine has 25.8 GB available"), "{e}");
        check_dry_run_fits(1024, "--devices 1024", Some(24 * gb)).unwrap();
        check_dry_run_fits(4096, "--devices 4096", None).unwrap();
        let e = check_dry_run_fits(70_000, "--devices 70000", None).unwrap_err().to_string();
        assert!(e.contains("at most 65534 ranks") && e.contains("got 70000"), "{e}");
        assert_eq!(dry_run_estimate(usize::MAX), u64::MAX, "saturates");
    }

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
