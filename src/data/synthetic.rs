//! A synthetic labelled dataset: learnable, deterministic, any geometry. For benchmarks and
//! tests where real images are not the point.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::data::images::InMemoryImages;

/// Side of the coarse random grid a class pattern is interpolated from.
const GRID: usize = 4;

/// `count` images of `dims` in `classes` classes: each class is a fixed smooth random pattern
/// (a 4x4 grid of random levels per channel, bilinearly enlarged, so it survives pooling like
/// real image structure does), each image its class pattern plus pixel noise, so a network can
/// learn it. Same seed, same data.
pub fn synthetic_images(dims: [usize; 3], classes: usize, count: usize, seed: u64) -> InMemoryImages {
    let size = dims.iter().product::<usize>();
    let mut pattern_rng = StdRng::seed_from_u64(0x5eed_0000 ^ classes as u64);
    let patterns: Vec<Vec<u8>> = (0..classes).map(|_| smooth_pattern(dims, &mut pattern_rng)).collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pixels = Vec::with_capacity(count * size);
    let mut labels = Vec::with_capacity(count);
    for _ in 0..count {
        let class = rng.random_range(0..classes);
        labels.push(class as u8);
        pixels.extend(patterns[class].iter().map(|&p| {
            let noise: i16 = rng.random_range(-64..=64);
            (p as i16 + noise).clamp(0, 255) as u8
        }));
    }
    InMemoryImages::new(dims, classes, pixels, labels, false)
}

/// A random `GRID` x `GRID` grid per channel, bilinearly interpolated to `dims`.
fn smooth_pattern([c, h, w]: [usize; 3], rng: &mut StdRng) -> Vec<u8> {
    let mut out = Vec::with_capacity(c * h * w);
    for _ in 0..c {
        let grid: Vec<f32> = (0..GRID * GRID).map(|_| rng.random_range(0.0..=255.0)).collect();
        let at = |gy: usize, gx: usize| grid[gy.min(GRID - 1) * GRID + gx.min(GRID - 1)];
        for y in 0..h {
            let fy = y as f32 * (GRID - 1) as f32 / (h.max(2) - 1) as f32;
            let (y0, ty) = (fy.floor() as usize, fy.fract());
            for x in 0..w {
                let fx = x as f32 * (GRID - 1) as f32 / (w.max(2) - 1) as f32;
                let (x0, tx) = (fx.floor() as usize, fx.fract());
                let top = at(y0, x0) * (1.0 - tx) + at(y0, x0 + 1) * tx;
                let bottom = at(y0 + 1, x0) * (1.0 - tx) + at(y0 + 1, x0 + 1) * tx;
                out.push((top * (1.0 - ty) + bottom * ty).round() as u8);
            }
        }
    }
    out
}
