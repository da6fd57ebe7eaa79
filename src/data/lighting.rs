//! The 2012 paper's second augmentation (section 4.1): lighting noise along the principal
//! components of the training split's RGB values. To every pixel of a training image the
//! same shift is added, `[p1 p2 p3] [a1 l1, a2 l2, a3 l3]^T`, where `p_i` and `l_i` are the
//! eigenvectors and eigenvalues of the 3 x 3 covariance of RGB values (in [0, 1]) and each
//! `a_i` is drawn once per image from a Gaussian of standard deviation `std` (0.1 in the paper).

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::data::images::{Batch, ImageSource};
use crate::data::stages::{Stage, StageClock};
use crate::error::OwtError;
use crate::train::prefetch::{Prefetch, Preparation};

/// The file in a run's directory that holds its [`Lighting`] (JSON).
pub const LIGHTING_FILE: &str = "lighting.json";

/// The largest `lighting.json` read back (it holds three eigenvalues, nine vector components
/// and the noise level: a few hundred bytes).
pub const MAX_LIGHTING_BYTES: u64 = 64 << 10;

/// Images per batch of the fit's preparation.
const FIT_BATCH: usize = 64;

/// At most this many training images enter the covariance (evenly spaced over the split):
/// 3 x 3 sums over tens of millions of pixels already fix it to many digits.
pub const MAX_FIT_IMAGES: usize = 20_000;

/// The principal components of a split's RGB values and the noise's standard deviation: what
/// a run stores (`lighting.json` in its directory) and draws its shifts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lighting {
    /// Eigenvalues of the RGB covariance, largest first.
    pub eigenvalues: [f64; 3],
    /// The matching unit eigenvectors, `eigenvectors[i]` for `eigenvalues[i]` (R, G, B).
    pub eigenvectors: [[f64; 3]; 3],
    /// Standard deviation of the per-image Gaussian weights.
    pub std: f64,
    /// Images the covariance was computed over.
    pub images: usize,
    /// CRC-32 of the fields above as stored ([`Lighting::sealed`]): an edit of the file is
    /// found on resume, as a checkpoint's damage is. Absent in files from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32: Option<u32>,
}

/// The largest eigenvalue a covariance of values in [0, 1] can have: its trace is at most
/// 3 x 1/4 (each channel's variance at most 1/4).
const MAX_EIGENVALUE: f64 = 0.75;

/// How far a stored eigenvector may be from unit length, or two from orthogonal.
const VECTOR_TOLERANCE: f64 = 1e-9;

impl Lighting {
    /// The components of `source`'s RGB values (its deterministic view: centre crops), over
    /// at most [`MAX_FIT_IMAGES`] images evenly spaced through it, prepared as `how` says (the
    /// sums are taken in the images' order, so the result is the same for any workers).
    pub fn fit(source: Arc<dyn ImageSource>, std: f64, how: Preparation) -> Result<Self, OwtError> {
        let [c, h, w] = source.image_dims();
        if c != 3 {
            return Err(OwtError::input(format!("--lighting needs RGB images (3 channels), these have {c}")));
        }
        let n = source.len();
        if n == 0 {
            return Err(OwtError::data("--lighting: the training split is empty"));
        }
        let take = n.min(MAX_FIT_IMAGES);
        let (mut sum, mut outer, mut count) = ([0f64; 3], [[0f64; 3]; 3], 0f64);
        let plane = h * w;
        let order = (0..take).map(|k| k * n / take).collect();
        let mut batches = Prefetch::start(source, order, FIT_BATCH, false, rand::rngs::StdRng::seed_from_u64(0), how);
        while let Some(batch) = batches.next_batch()? {
            for image in batch.images.chunks_exact(3 * plane) {
                for p in 0..plane {
                    let v = [0, 1, 2].map(|ch| image[ch * plane + p] as f64 / 255.0);
                    for i in 0..3 {
                        sum[i] += v[i];
                        for j in 0..3 {
                            outer[i][j] += v[i] * v[j];
                        }
                    }
                    count += 1.0;
                }
            }
        }
        let mean = sum.map(|s| s / count);
        let mut cov = [[0f64; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                cov[i][j] = outer[i][j] / count - mean[i] * mean[j];
            }
        }
        Ok(Self::from_covariance(cov, std, take))
    }

    /// The components of the covariance `cov`.
    pub fn from_covariance(cov: [[f64; 3]; 3], std: f64, images: usize) -> Self {
        let (eigenvalues, eigenvectors) = symmetric_eigen(cov);
        Self { eigenvalues, eigenvectors, std, images, crc32: None }
    }

    /// The CRC-32 of the components as stored (the file's JSON without its `crc32`).
    fn checksum(&self) -> u32 {
        let bare = Lighting { crc32: None, ..self.clone() };
        crate::data::checksum::json_crc32(&bare)
    }

    /// These components with their checksum, as a run stores them.
    pub fn sealed(self) -> Self {
        let crc32 = Some(self.checksum());
        Lighting { crc32, ..self }
    }

    /// Whether `other` holds the same components (whatever either's checksum).
    pub fn same_components(&self, other: &Lighting) -> bool {
        Lighting { crc32: None, ..self.clone() } == Lighting { crc32: None, ..other.clone() }
    }

    /// A stored file read back for a run at noise level `std`, checked as a checkpoint is: its
    /// checksum (where it has one), and values a fit can give: eigenvalues of a covariance of
    /// values in [0, 1], largest first; orthonormal eigenvectors; the run's noise level; at
    /// least one and at most [`MAX_FIT_IMAGES`] images. The error says what is wrong.
    pub fn read_back(bytes: &[u8], std: f64) -> Result<Lighting, String> {
        let l: Lighting = serde_json::from_slice(bytes).map_err(|e| format!("not a lighting file: {e}"))?;
        if let Some(stored) = l.crc32 {
            let crc = l.checksum();
            if crc != stored {
                return Err(format!(
                    "it was changed since the run stored it: its CRC-32 is {crc:08x}, the file says {stored:08x}"
                ));
            }
        }
        if l.std != std {
            return Err(format!("it holds noise level {}, the run's --lighting is {std}", l.std));
        }
        let [a, b, c] = l.eigenvalues;
        if !l.eigenvalues.iter().all(|v| v.is_finite() && (-VECTOR_TOLERANCE..=MAX_EIGENVALUE).contains(v))
            || a < b
            || b < c
        {
            return Err(format!(
                "eigenvalues {:?}: a covariance of values in [0, 1] has eigenvalues from 0 to {MAX_EIGENVALUE}, largest first",
                l.eigenvalues
            ));
        }
        let dot = |x: &[f64; 3], y: &[f64; 3]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f64>();
        for (i, v) in l.eigenvectors.iter().enumerate() {
            for (j, w) in l.eigenvectors.iter().enumerate() {
                let want = if i == j { 1.0 } else { 0.0 };
                let got = dot(v, w);
                if !(got - want).abs().le(&VECTOR_TOLERANCE) {
                    return Err(format!(
                        "eigenvectors {:?} are not orthonormal (vector {i} . vector {j} = {got})",
                        l.eigenvectors
                    ));
                }
            }
        }
        if l.images == 0 || l.images > MAX_FIT_IMAGES {
            return Err(format!("it says {} images were fitted: expected 1 to {MAX_FIT_IMAGES}", l.images));
        }
        Ok(l)
    }

    /// One image's shift of (R, G, B), in [0, 1] units: the components weighted by their
    /// eigenvalues times Gaussian draws of standard deviation `std`.
    pub fn shift(&self, rng: &mut dyn rand::RngCore) -> [f64; 3] {
        let mut out = [0f64; 3];
        for i in 0..3 {
            let a = gaussian(rng) * self.std * self.eigenvalues[i];
            for (ch, o) in out.iter_mut().enumerate() {
                *o += a * self.eigenvectors[i][ch];
            }
        }
        out
    }

    /// Adds one shift to every pixel of an image held as 3 planes of bytes (rounded, clamped
    /// to 0..=255).
    pub fn apply(&self, planes: &mut [u8], rng: &mut dyn rand::RngCore) {
        let shift = self.shift(rng);
        let plane = planes.len() / 3;
        for (ch, s) in shift.iter().enumerate() {
            for v in &mut planes[ch * plane..(ch + 1) * plane] {
                *v = (*v as f64 + s * 255.0).round().clamp(0.0, 255.0) as u8;
            }
        }
    }
}

/// A standard normal draw (Box-Muller over two uniform draws).
pub(crate) fn gaussian(rng: &mut dyn rand::RngCore) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // in (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Eigenvalues (largest first) and unit eigenvectors (`vectors[i]` for `values[i]`) of a
/// symmetric 3 x 3 matrix, by cyclic Jacobi rotations to full f64 precision.
pub fn symmetric_eigen(m: [[f64; 3]; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    let mut a = m;
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]; // columns: eigenvectors
    for _sweep in 0..64 {
        let off = a[0][1].powi(2) + a[0][2].powi(2) + a[1][2].powi(2);
        let scale = (0..3).map(|i| a[i][i].powi(2)).sum::<f64>();
        if off <= 1e-30 * scale.max(f64::MIN_POSITIVE) {
            break;
        }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            if a[p][q] == 0.0 {
                continue;
            }
            let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
            let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
            let t = if theta == 0.0 { 1.0 } else { t };
            let c = 1.0 / (t * t + 1.0).sqrt();
            let s = t * c;
            // a <- J^T a J, v <- v J for the rotation J in the (p, q) plane.
            for k in 0..3 {
                let (akp, akq) = (a[k][p], a[k][q]);
                a[k][p] = c * akp - s * akq;
                a[k][q] = s * akp + c * akq;
            }
            for k in 0..3 {
                let (apk, aqk) = (a[p][k], a[q][k]);
                a[p][k] = c * apk - s * aqk;
                a[q][k] = s * apk + c * aqk;
            }
            for row in v.iter_mut() {
                let (vp, vq) = (row[p], row[q]);
                row[p] = c * vp - s * vq;
                row[q] = s * vp + c * vq;
            }
        }
    }
    let mut order = [0usize, 1, 2];
    order.sort_by(|&i, &j| a[j][j].total_cmp(&a[i][i]));
    let values = order.map(|i| a[i][i]);
    let vectors = order.map(|i| [v[0][i], v[1][i], v[2][i]]);
    (values, vectors)
}

/// A training source with lighting noise: `inner`'s images, each shifted by its own draw
/// when augmenting (training), untouched otherwise (evaluation, and the fit itself).
pub struct LitImages {
    inner: Arc<dyn ImageSource>,
    lighting: Lighting,
}

impl LitImages {
    /// `inner` with `lighting`'s noise on its training batches.
    pub fn new(inner: Arc<dyn ImageSource>, lighting: Lighting) -> Self {
        Self { inner, lighting }
    }
}

impl ImageSource for LitImages {
    fn len(&self) -> usize {
        self.inner.len()
    }

    fn image_dims(&self) -> [usize; 3] {
        self.inner.image_dims()
    }

    fn classes(&self) -> usize {
        self.inner.classes()
    }

    fn class_names(&self) -> Vec<String> {
        self.inner.class_names()
    }

    fn batch(&self, indices: &[usize], augment: bool, rng: &mut dyn rand::RngCore) -> Batch {
        let mut batch = self.inner.batch(indices, augment, rng);
        if augment {
            let [c, h, w] = self.inner.image_dims();
            let mut shift = || {
                for image in batch.images.chunks_mut(c * h * w) {
                    self.lighting.apply(image, rng);
                }
            };
            match self.inner.stages() {
                Some(clock) => clock.time(Stage::Crop, shift),
                None => shift(),
            }
        }
        batch
    }

    fn grain(&self) -> usize {
        self.inner.grain()
    }

    fn stages(&self) -> Option<&StageClock> {
        self.inner.stages()
    }

    fn problem(&self) -> Option<OwtError> {
        self.inner.problem()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A covariance built from known components: Q diag(4, 1, 0.25) Q^T with Q a rotation.
    fn known() -> ([[f64; 3]; 3], [f64; 3], [[f64; 3]; 3]) {
        let (s, c) = (0.6f64, 0.8f64);
        // Columns of Q: unit and orthogonal.
        let q = [[c, -s, 0.0], [s * 0.6, c * 0.6, -0.8], [s * 0.8, c * 0.8, 0.6]];
        let col = |j: usize| [q[0][j], q[1][j], q[2][j]];
        let lambda = [4.0, 1.0, 0.25];
        let mut m = [[0f64; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] = (0..3).map(|k| q[i][k] * lambda[k] * q[j][k]).sum();
            }
        }
        (m, lambda, [col(0), col(1), col(2)])
    }

    #[test]
    fn the_eigen_decomposition_recovers_known_components() {
        let (m, lambda, vectors) = known();
        let (values, got) = symmetric_eigen(m);
        for i in 0..3 {
            assert!((values[i] - lambda[i]).abs() < 1e-12, "{values:?} vs {lambda:?}");
            let dot: f64 = (0..3).map(|k| got[i][k] * vectors[i][k]).sum();
            assert!((dot.abs() - 1.0).abs() < 1e-12, "vector {i}: {:?} vs {:?}", got[i], vectors[i]);
        }
        // A diagonal matrix is its own decomposition, sorted.
        let (values, _) = symmetric_eigen([[1.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 2.0]]);
        assert_eq!(values, [3.0, 2.0, 1.0]);
    }

    /// Two 2 x 2 images, black and yellow (255, 255, 0): mean (0.5, 0.5, 0), covariance
    /// 0.25 [[1, 1, 0], [1, 1, 0], [0, 0, 0]], one component (1, 1, 0) / sqrt 2 of 0.5.
    struct BlackAndYellow;

    impl ImageSource for BlackAndYellow {
        fn len(&self) -> usize {
            2
        }
        fn image_dims(&self) -> [usize; 3] {
            [3, 2, 2]
        }
        fn classes(&self) -> usize {
            2
        }
        fn batch(&self, indices: &[usize], _augment: bool, _rng: &mut dyn rand::RngCore) -> Batch {
            let images: Vec<u8> = indices
                .iter()
                .flat_map(|&i| if i == 0 { [0u8; 12] } else { [255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0] })
                .collect();
            Batch::new(images, indices.iter().map(|&i| i as i64).collect(), [indices.len(), 3, 2, 2])
        }
    }

    #[test]
    fn the_fit_finds_the_components_of_the_pixels() {
        let l = Lighting::fit(Arc::new(BlackAndYellow), 0.1, Preparation::new(2, 2)).unwrap();
        assert_eq!(l.images, 2);
        assert!((l.eigenvalues[0] - 0.5).abs() < 1e-12 && l.eigenvalues[1].abs() < 1e-12, "{:?}", l.eigenvalues);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        let v = l.eigenvectors[0];
        assert!((v[0].abs() - h).abs() < 1e-12 && (v[0] - v[1]).abs() < 1e-12 && v[2].abs() < 1e-12, "{v:?}");
        // Training batches shift every pixel of an image alike, red and green together;
        // evaluation batches are untouched.
        let lit = LitImages::new(Arc::new(BlackAndYellow), Lighting { std: 1.0, ..l });
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        assert_eq!(lit.batch(&[0, 1], false, &mut rng).images, BlackAndYellow.batch(&[0, 1], false, &mut rng).images);
        let mut moved = 0;
        for _ in 0..20 {
            let b = lit.batch(&[0], true, &mut rng).images;
            assert!(b[..4].iter().all(|&x| x == b[0]) && b[4..8].iter().all(|&x| x == b[0]), "{b:?}");
            assert!(b[8..].iter().all(|&x| x == 0), "blue moved: {b:?}");
            moved += usize::from(b[0] > 0);
        }
        assert!(moved > 3, "black rose in {moved} of 20 draws");
        // Grey images have no colour to move.
        struct Grey;
        impl ImageSource for Grey {
            fn len(&self) -> usize {
                1
            }
            fn image_dims(&self) -> [usize; 3] {
                [1, 2, 2]
            }
            fn classes(&self) -> usize {
                1
            }
            fn batch(&self, _: &[usize], _: bool, _: &mut dyn rand::RngCore) -> Batch {
                Batch::new(vec![0; 4], vec![0], [1, 1, 2, 2])
            }
        }
        assert!(Lighting::fit(Arc::new(Grey), 0.1, Preparation::one_thread(1))
            .unwrap_err()
            .to_string()
            .contains("3 channels"));
    }

    /// Over many draws the shifts have mean 0 and covariance std^2 P diag(l^2) P^T.
    #[test]
    fn the_shifts_have_the_papers_statistics() {
        let (m, lambda, vectors) = known();
        let lighting = Lighting::from_covariance(m, 0.1, 1);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let n = 200_000;
        let (mut sum, mut outer) = ([0f64; 3], [[0f64; 3]; 3]);
        for _ in 0..n {
            let s = lighting.shift(&mut rng);
            for i in 0..3 {
                sum[i] += s[i];
                for j in 0..3 {
                    outer[i][j] += s[i] * s[j];
                }
            }
        }
        for i in 0..3 {
            for j in 0..3 {
                let want: f64 = (0..3).map(|k| vectors[k][i] * (0.1 * lambda[k]).powi(2) * vectors[k][j]).sum();
                let got = outer[i][j] / n as f64;
                assert!((got - want).abs() < 0.02 * 0.16, "cov[{i}][{j}] {got} vs {want}");
            }
            // The mean's standard error is at most 0.4 / sqrt(n) ~ 9e-4.
            assert!((sum[i] / n as f64).abs() < 4e-3, "mean {i}: {}", sum[i] / n as f64);
        }
    }
}
