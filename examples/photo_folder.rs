//! Makes an image folder dataset of JPEG photographs (no colour dataset comes packaged):
//! each class one of the photographs in tests/fixtures/photos, each image a crop of it at a
//! random place and scale (see `owt::data::photo_folder`). What the loader benchmarks and
//! the preprocessing fixture read.
//!
//! ```sh
//! cargo run --release --example photo_folder -- OUT [TRAIN_PER_CLASS VAL_PER_CLASS [MIN_SIDE MAX_SIDE [QUALITY NOISE SEED]]]
//! ```
//!
//! Defaults: 100 and 20 images per class, shorter sides 375 (ImageNet's typical 500 x 375),
//! quality 95, noise 8, seed 0.

use std::path::{Path, PathBuf};

use owt::data::photo_folder::{write_photo_folder, PhotoFolder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: photo_folder OUT [TRAIN_PER_CLASS VAL_PER_CLASS [MIN_SIDE MAX_SIDE [QUALITY NOISE SEED]]]");
        std::process::exit(2);
    };
    let num = |i: usize, default: f64| -> Result<f64, Box<dyn std::error::Error>> {
        Ok(args.get(i).map(|s| s.parse::<f64>()).transpose()?.unwrap_or(default))
    };
    let spec = PhotoFolder {
        per_class: [num(1, 100.0)? as usize, num(2, 20.0)? as usize],
        shorter: [num(3, 375.0)? as usize, num(4, num(3, 375.0)?)? as usize],
        aspect: 4.0 / 3.0,
        quality: num(5, 95.0)? as u8,
        noise: num(6, 8.0)?,
        seed: num(7, 0.0)? as u64,
    };
    // The checkout `cargo run` names at run time: the compiled-in path is the one that built
    // the example, which a target dir shared between clones may have built elsewhere.
    let root: PathBuf =
        std::env::var_os("CARGO_MANIFEST_DIR").map(Into::into).unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    let dir = root.join("tests/fixtures/photos");
    let mut photos: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jpg"))
        .collect();
    photos.sort();
    let refs: Vec<&Path> = photos.iter().map(PathBuf::as_path).collect();
    let bytes = write_photo_folder(&refs, Path::new(out), &spec)?;
    let images = (spec.per_class[0] + spec.per_class[1]) * photos.len();
    println!(
        "{images} JPEGs in {out} ({} classes), {:.0} bytes each on average",
        photos.len(),
        bytes as f64 / images as f64
    );
    Ok(())
}
