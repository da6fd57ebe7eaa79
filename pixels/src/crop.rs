//! Where a network's square input is cut from a resized image, and the cut itself: random
//! crops and flips for training (drawn from the image's own generator, in one fixed order),
//! torchvision's centre crop for evaluation, the 2012 paper's ten patches, and the patch as
//! channel planes (RGB, or grey by the ITU-R BT.709 weights).

use rand::Rng;

use crate::decode::Rgb;

/// A square patch of a resized image: its top-left corner, and whether it is mirrored left
/// to right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crop {
    /// Left column.
    pub x0: usize,
    /// Top row.
    pub y0: usize,
    /// Mirrored left to right.
    pub flip: bool,
}

impl Crop {
    /// A training crop of `side` from a `width` x `height` image: the corner uniform over
    /// every position (column first, then row), then a fair coin for the mirror. Every path
    /// that crops (image folders, packed shards) draws through here, so they draw alike.
    pub fn random(rng: &mut dyn rand::RngCore, width: usize, height: usize, side: usize) -> Self {
        let x0 = rng.random_range(0..=(width - side));
        let y0 = rng.random_range(0..=(height - side));
        Crop { x0, y0, flip: rng.random_bool(0.5) }
    }

    /// torchvision's `CenterCrop(side)`: the offsets `round((size - side) / 2)`, halves to
    /// even as Python rounds.
    pub fn centre(width: usize, height: usize, side: usize) -> Self {
        let half = |n: usize| ((n - side) as f64 / 2.0).round_ties_even() as usize;
        Crop { x0: half(width), y0: half(height), flip: false }
    }

    /// The 2012 paper's ten test patches (section 4.1): the top-left, top-right, bottom-left
    /// and bottom-right corners and the centre, then the same five mirrored.
    pub fn ten(width: usize, height: usize, side: usize) -> [Crop; 10] {
        let (dx, dy) = (width - side, height - side);
        let centre = Crop::centre(width, height, side);
        let corners = [(0, 0), (dx, 0), (0, dy), (dx, dy), (centre.x0, centre.y0)];
        std::array::from_fn(|i| Crop { x0: corners[i % 5].0, y0: corners[i % 5].1, flip: i >= 5 })
    }

    /// The `side` x `side` patch of `image` this crop names, as `channels` planes (3: R, G, B;
    /// 1: grey), row-major.
    pub fn planes(&self, image: &Rgb, side: usize, channels: usize) -> Vec<u8> {
        self.planes_of(&image.pixels, image.width, side, channels)
    }

    /// [`Crop::planes`] of an RGB image held as `pixels`, `width` pixels a row.
    pub fn planes_of(&self, pixels: &[u8], width: usize, side: usize, channels: usize) -> Vec<u8> {
        let plane = side * side;
        let mut out = vec![0u8; channels * plane];
        for y in 0..side {
            let row = pixels[((self.y0 + y) * width + self.x0) * 3..][..side * 3].chunks_exact(3);
            let at = y * side..(y + 1) * side;
            // Left to right, or right to left when mirrored.
            if self.flip {
                write_row(&mut out, plane, channels, at, row.rev());
            } else {
                write_row(&mut out, plane, channels, at, row);
            }
        }
        out
    }
}

/// Writes one row of RGB pixels into the planes of `out` at `at` (grey when `channels` is 1).
fn write_row<'a>(
    out: &mut [u8],
    plane: usize,
    channels: usize,
    at: std::ops::Range<usize>,
    row: impl Iterator<Item = &'a [u8]>,
) {
    if channels == 1 {
        for (o, px) in out[at].iter_mut().zip(row) {
            *o = luma(px[0], px[1], px[2]);
        }
        return;
    }
    let (red, rest) = out.split_at_mut(plane);
    let (green, blue) = rest.split_at_mut(plane);
    let (r, g, b) = (&mut red[at.clone()], &mut green[at.clone()], &mut blue[at]);
    for (((r, g), b), px) in r.iter_mut().zip(g.iter_mut()).zip(b.iter_mut()).zip(row) {
        (*r, *g, *b) = (px[0], px[1], px[2]);
    }
}

/// The grey value of an RGB pixel: BT.709's weights (those of the `image` crate), rounded to
/// nearest; a grey pixel keeps its value.
pub fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((2126 * r as u32 + 7152 * g as u32 + 722 * b as u32 + 5000) / 10000) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centre_crops_round_halves_to_even_as_torchvision_does() {
        assert_eq!(Crop::centre(341, 256, 224), Crop { x0: 58, y0: 16, flip: false }, "58.5 -> 58");
        assert_eq!(Crop::centre(343, 256, 224), Crop { x0: 60, y0: 16, flip: false }, "59.5 -> 60");
        assert_eq!(Crop::centre(224, 224, 224), Crop { x0: 0, y0: 0, flip: false });
    }

    #[test]
    fn grey_pixels_keep_their_value() {
        for v in 0..=255u8 {
            assert_eq!(luma(v, v, v), v);
        }
    }
}
