//! owt-pixels against slow exact references on photographs of several sizes
//! (tests/fixtures/photos: shorter sides 300 to 1411).

use std::path::PathBuf;

use owt_pixels::{self as decode, Filter, Rgb};

mod common;

fn photos() -> Vec<PathBuf> {
    let dir = common::photos();
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    all.retain(|p| p.extension().is_some_and(|x| x == "jpg"));
    all.sort();
    assert_eq!(all.len(), 6, "the six fixture photographs");
    all
}

/// Our decode (a reduced DCT scale where the image keeps four times the target) and SIMD
/// resize against a full decode and an exact-area resize to the same size: at least 35 dB
/// on every photograph (shorter sides 300 to 1411) at every target, with owt's area filter;
/// with torchvision's bilinear, the reduced decode against a full decode resized alike.
#[test]
fn fast_decode_and_resize_stay_within_35_db_of_a_full_decode_and_an_area_resize() {
    let (mut scaled, mut worst) = (0, f64::INFINITY);
    for path in photos() {
        let bytes = std::fs::read(&path).unwrap();
        let full = image::load_from_memory(&bytes).unwrap().into_rgb8();
        let full = Rgb { width: full.width() as usize, height: full.height() as usize, pixels: full.into_raw() };
        for side in [36, 64, 113, 144, 256, 259] {
            let ours = decode::decode(&bytes, side).unwrap();
            assert_eq!((ours.width, ours.height), (full.width, full.height), "the file's own size");
            scaled += usize::from(ours.image.width < full.width);
            let (w, h) = decode::shorter_side_size(full.width, full.height, side);
            for filter in [Filter::Area, Filter::Bilinear] {
                let got = ours.clone().resized(side, filter);
                assert_eq!((got.width, got.height), (w, h), "{}", path.display());
                let reference = decode::resize(&full, w, h, filter);
                let psnr = decode::psnr(&reference.pixels, &got.pixels);
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                eprintln!("{name} at {side}, {}: {psnr:.2} dB", format!("{filter:?}"));
                assert!(psnr >= 35.0, "{name} at {side}, {}: {psnr:.2} dB", format!("{filter:?}"));
                worst = worst.min(psnr);
            }
        }
    }
    eprintln!("worst {worst:.2} dB over {scaled} reduced decodes");
    assert!(scaled >= 8, "only {scaled} decodes used a reduced DCT scale");
}
