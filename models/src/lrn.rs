//! Local response normalisation of the 2012 paper, computed within each tower.

use burn::module::Module;
use burn::prelude::*;

/// Configuration of [`TowerLrn`]: the 2012 paper's response normalisation (section 3.3).
///
/// `b[i] = a[i] / (k + alpha * sum_{j in window(i)} a[j]^2)^beta`, the sum running over
/// `size` adjacent channels *of the same tower*. This is the paper's summed form: Burn's
/// `LocalResponseNorm` (and PyTorch's) divides alpha by `size`, which is a different layer.
#[derive(Config, Debug)]
pub struct TowerLrnConfig {
    /// Number of adjacent channels summed over (the paper's n = 5); odd.
    #[config(default = 5)]
    pub size: usize,
    /// Additive constant (the paper's k = 2).
    #[config(default = 2.0)]
    pub k: f64,
    /// Scale of the summed squares (the paper's alpha = 1e-4, not divided by size).
    #[config(default = 1e-4)]
    pub alpha: f64,
    /// Exponent (the paper's beta = 0.75).
    #[config(default = 0.75)]
    pub beta: f64,
    /// Number of towers; channels are split into this many contiguous groups and the window
    /// never crosses a group boundary (towers on two GPUs never see each other's maps here).
    #[config(default = 1)]
    pub towers: usize,
}

impl TowerLrnConfig {
    /// Builds the (parameter-free) layer.
    pub fn init(&self) -> TowerLrn {
        assert!(self.size % 2 == 1, "TowerLrn: size must be odd (a window centred on its channel), got {}", self.size);
        assert!(self.towers > 0, "TowerLrn: towers must be positive, got 0");
        TowerLrn { size: self.size, k: self.k, alpha: self.alpha, beta: self.beta, towers: self.towers }
    }
}

/// Response normalisation across adjacent channels within each tower (no parameters).
#[derive(Module, Clone, Debug)]
pub struct TowerLrn {
    size: usize,
    k: f64,
    alpha: f64,
    beta: f64,
    towers: usize,
}

impl TowerLrn {
    /// Normalises `x` of shape `[batch, channels, height, width]`.
    ///
    /// Panics if `channels` is not a multiple of the tower count.
    pub fn forward<B: Backend>(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [n, c, h, w] = x.dims();
        assert!(c % self.towers == 0, "TowerLrn: {c} channels cannot be split into {} towers", self.towers);
        // The windowed sum over channels is linear: per tower, a band matrix (ones within
        // size/2 of the diagonal) times that tower's squares. Towers are a batch dimension of
        // the matmul, so the window never crosses a tower edge and each tower's work only
        // touches its own channels (tower-local on a channel-split mesh).
        let per_tower = c / self.towers;
        let squares = (x.clone() * x.clone()).reshape([n, self.towers, per_tower, h * w]);
        let band = self.band::<B>(per_tower, &x.device(), x.dtype()).reshape([1, 1, per_tower, per_tower]).expand([
            n,
            self.towers,
            per_tower,
            per_tower,
        ]);
        let denominator = band.matmul(squares).reshape([n, c, h, w]).mul_scalar(self.alpha).add_scalar(self.k);
        self.divide_by_power(x, denominator)
    }

    /// `x / d^beta`. The power is the costliest part of the layer (a scalar `powf` per
    /// element, forward and again in its backward), so it is computed outside the autodiff
    /// graph (by two square roots when beta = 3/4, the paper's value) and its gradient is
    /// carried by a term whose value is exactly zero: `x * p + (d - d') * q`, where `p =
    /// d'^-beta`, `q = -beta x' p / d'` and primes are values detached from the graph. Its
    /// derivatives are `p` for x and `q` for d, those of `x / d^beta`, at a few element-wise ops
    /// in the backward pass instead of a power and a division's two quotients.
    fn divide_by_power<B: Backend>(&self, x: Tensor<B, 4>, d: Tensor<B, 4>) -> Tensor<B, 4> {
        let d_value = d.clone().detach();
        let p = if self.beta == 0.75 {
            let fourth_root = d_value.clone().sqrt().sqrt();
            fourth_root / d_value.clone()
        } else {
            d_value.clone().powf_scalar(-self.beta)
        };
        if !B::ad_enabled(&x.device()) {
            return x * p;
        }
        let q = (x.clone().detach() * p.clone() / d_value.clone()).mul_scalar(-self.beta);
        x * p + (d - d_value) * q
    }

    /// `[c, c]` matrix with `band[i][j] = 1` when channels i and j are at most `size / 2` apart,
    /// in `dtype` (the input's: a network run in bf16 or f16 multiplies in it).
    fn band<B: Backend>(&self, c: usize, device: &B::Device, dtype: burn::tensor::DType) -> Tensor<B, 2> {
        let reach = self.size / 2;
        let values: Vec<f32> = (0..c * c).map(|k| ((k / c).abs_diff(k % c) <= reach) as u8 as f32).collect();
        Tensor::from_data(TensorData::new(values, [c, c]), (device, dtype))
    }
}
