//! The first layer's filters of a trained network, as the 2012 paper's figure 3 shows them:
//! one block per tower, each filter a small RGB tile, and per tower how colour-specific its
//! filters are (the paper: one tower's filters largely colour-agnostic, the other's
//! colour-specific).

use std::path::Path;

use crate::error::OwtError;

/// Pixels per filter weight in the picture: at least 4, and a tile at least 40 pixels wide.
fn zoom(k: usize) -> usize {
    (40 / k.max(1)).max(4)
}
/// Pixels between tiles, and between tower blocks (times 4).
const GAP: usize = 2;

/// One tower's first-layer filters, summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct TowerFilters {
    /// 1-based tower number.
    pub tower: usize,
    /// Filters in the tower.
    pub filters: usize,
    /// Mean over the tower's filters of the spread between colour channels relative to the
    /// filter's norm, `|w - mean over channels of w| / |w|`: 0 for a grey filter (the same
    /// weights in R, G and B), sqrt(2/3) ~ 0.816 for one channel alone (and on average for
    /// random filters), 1 for channels that cancel (opponent colours). `None` for a
    /// one-channel network.
    pub colour_specificity: Option<f64>,
}

/// How far the filter `w` (`channels` planes of `k x k`) is from grey: the norm of its
/// deviation from the channels' mean over its own norm (0 for a zero filter).
pub fn colour_spread(w: &[f32], channels: usize) -> f64 {
    let plane = w.len() / channels.max(1);
    let (mut dev, mut norm) = (0f64, 0f64);
    for p in 0..plane {
        let mean = (0..channels).map(|c| w[c * plane + p] as f64).sum::<f64>() / channels as f64;
        for c in 0..channels {
            let v = w[c * plane + p] as f64;
            dev += (v - mean).powi(2);
            norm += v * v;
        }
    }
    if norm == 0.0 {
        0.0
    } else {
        (dev / norm).sqrt()
    }
}

/// The towers' summaries of conv1's `weights` (`[filters, channels, k, k]`, row-major), the
/// filters split into `towers` consecutive blocks (tower 1 the first), as the two-tower
/// networks hold them.
pub fn towers(weights: &[f32], dims: [usize; 4], towers: usize) -> Vec<TowerFilters> {
    let [n, c, kh, kw] = dims;
    let size = c * kh * kw;
    let per = n / towers.max(1);
    (0..towers)
        .map(|t| {
            let spreads: Vec<f64> =
                (t * per..(t + 1) * per).map(|f| colour_spread(&weights[f * size..(f + 1) * size], c)).collect();
            TowerFilters {
                tower: t + 1,
                filters: per,
                colour_specificity: (c == 3).then(|| spreads.iter().sum::<f64>() / spreads.len().max(1) as f64),
            }
        })
        .collect()
}

/// Draws conv1's filters to `out` (PNG): one block per tower side by side, each filter a tile
/// of `k x k` weights (each several pixels wide, a tile at least 40), scaled per filter so
/// that 0 is mid-grey and its largest magnitude reaches black or white (a grey filter stays
/// grey); a one-channel network's filters in grey.
pub fn draw(weights: &[f32], dims: [usize; 4], towers: usize, out: &Path) -> Result<(), OwtError> {
    let [n, c, k, kw] = dims;
    if k != kw {
        return Err(OwtError::input(format!("conv1's filters are {k} x {kw}: only square filters are drawn")));
    }
    let per = n / towers.max(1);
    let cols = (per as f64).sqrt().ceil().max(1.0) as usize;
    let rows = per.div_ceil(cols);
    let z = zoom(k);
    let tile = k * z + GAP;
    let block_w = cols * tile;
    let (width, height) = (towers * block_w + (towers.saturating_sub(1)) * 4 * GAP + GAP, rows * tile + GAP);
    let mut img = image::RgbImage::from_pixel(width as u32, height as u32, image::Rgb([255, 255, 255]));
    let size = c * k * k;
    for t in 0..towers {
        for i in 0..per {
            let f = t * per + i;
            let w = &weights[f * size..(f + 1) * size];
            let scale = w.iter().fold(0f32, |m, v| m.max(v.abs())).max(f32::MIN_POSITIVE);
            let (x0, y0) = (t * (block_w + 4 * GAP) + (i % cols) * tile + GAP, (i / cols) * tile + GAP);
            for y in 0..k {
                for x in 0..k {
                    let at = |ch: usize| {
                        let v = w[ch.min(c - 1) * k * k + y * k + x] / scale;
                        (127.5 + 127.5 * v).round().clamp(0.0, 255.0) as u8
                    };
                    let px = image::Rgb([at(0), at(1), at(2)]);
                    for dy in 0..z {
                        for dx in 0..z {
                            img.put_pixel((x0 + x * z + dx) as u32, (y0 + y * z + dy) as u32, px);
                        }
                    }
                }
            }
        }
    }
    img.save(out).map_err(|e| OwtError::io(format!("cannot write {}: {e}", out.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grey_filters_have_no_spread_one_channel_alone_two_thirds_and_opponents_one() {
        let grey = [0.5f32, -1.0, 0.5, -1.0, 0.5, -1.0]; // R, G, B planes of 2 weights, equal
        assert_eq!(colour_spread(&grey, 3), 0.0);
        let red = [1.0f32, 2.0, 0.0, 0.0, 0.0, 0.0];
        assert!((colour_spread(&red, 3) - (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(colour_spread(&[0.0; 6], 3), 0.0);
        let opponent = [1.0f32, 1.0, -1.0, -1.0, 0.0, 0.0]; // red against green: mean 0
        assert!((colour_spread(&opponent, 3) - 1.0).abs() < 1e-12);
        // Two towers of one filter each: grey, then red.
        let both: Vec<f32> = grey.iter().chain(&red).copied().collect();
        let t = towers(&both, [2, 3, 1, 2], 2);
        assert_eq!(t[0].colour_specificity, Some(0.0));
        assert!((t[1].colour_specificity.unwrap() - 0.8165).abs() < 1e-4, "{t:?}");
    }
}
