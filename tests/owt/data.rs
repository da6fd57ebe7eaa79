//! Data loading: IDX parsing and its errors, MNIST-layout directories, image folders.

use std::io::Write;
use std::path::Path;

use owt::data::{
    encode_idx, load_mnist_split, parse_idx, read_idx, synthetic_images, IdxArray, ImageFolder, ImageSource,
};
use rand::SeedableRng;

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Writes an MNIST-layout directory with `n_images` 4x3 images and `n_labels` labels.
fn write_mnist(dir: &Path, prefix: &str, n_images: usize, n_labels: usize, compress: bool) {
    let images = IdxArray { dims: vec![n_images, 4, 3], data: (0..n_images * 12).map(|i| (i % 256) as u8).collect() };
    let labels = IdxArray { dims: vec![n_labels], data: (0..n_labels).map(|i| (i % 10) as u8).collect() };
    for (name, arr) in
        [(format!("{prefix}-images-idx3-ubyte"), images), (format!("{prefix}-labels-idx1-ubyte"), labels)]
    {
        let bytes = encode_idx(&arr);
        if compress {
            std::fs::write(dir.join(format!("{name}.gz")), gz(&bytes)).unwrap();
        } else {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
}

#[test]
fn idx_round_trips_raw_and_gzip() {
    let arr = IdxArray { dims: vec![2, 2, 3], data: (0..12).collect() };
    let bytes = encode_idx(&arr);
    assert_eq!(parse_idx(&bytes).unwrap(), arr);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.gz");
    std::fs::write(&p, gz(&bytes)).unwrap();
    assert_eq!(read_idx(&p).unwrap(), arr);
    // A gzip file of several members (`cat a.gz b.gz`, pigz, bgzip) is the members' bytes in
    // order, as zlib's and Python's readers take it.
    let (head, tail) = bytes.split_at(7);
    std::fs::write(&p, [gz(head), gz(tail)].concat()).unwrap();
    assert_eq!(read_idx(&p).unwrap(), arr);
}

#[test]
fn idx_errors_name_expected_and_actual() {
    let mut bytes = encode_idx(&IdxArray { dims: vec![3, 2], data: vec![1; 6] });
    let mut wrong = bytes.clone();
    wrong[2] = 0x0d; // float IDX
    let e = parse_idx(&wrong).unwrap_err();
    assert!(e.contains("wrong magic number") && e.contains("00 00 08") && e.contains("0d"), "{e}");
    bytes.truncate(bytes.len() - 2);
    let e = parse_idx(&bytes).unwrap_err();
    assert!(e.contains("truncated") && e.contains("need 6") && e.contains("has 4"), "{e}");
    let e = parse_idx(&[0, 0, 8]).unwrap_err();
    assert!(e.contains("truncated"), "{e}");
}

#[test]
fn mnist_directories_load_and_report_count_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    write_mnist(dir.path(), "train", 7, 7, true);
    write_mnist(dir.path(), "t10k", 5, 4, false);
    let train = load_mnist_split(dir.path(), true, "Test-MNIST", "hint", 0).unwrap();
    assert_eq!((train.len(), train.image_dims(), train.classes()), (7, [1, 4, 3], 10));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let b = train.batch(&[1], false, &mut rng);
    assert_eq!(b.dims, [1, 1, 4, 3]);
    assert_eq!(b.labels, vec![1]);
    assert_eq!(b.images[0], 12);
    assert_eq!(b.normalised_data(&owt_models::PixelNorm::Symmetric).to_vec::<f32>().unwrap()[0], 12.0 / 127.5 - 1.0);
    let e = load_mnist_split(dir.path(), false, "Test-MNIST", "hint", 0).unwrap_err().to_string();
    assert!(e.contains("mismatch") && e.contains("5 images") && e.contains("4 labels"), "{e}");
}

#[test]
fn missing_dataset_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let e =
        load_mnist_split(dir.path(), true, "Fashion-MNIST", "Install it with apt-get install dataset-fashion-mnist", 0)
            .unwrap_err()
            .to_string();
    assert!(e.contains("Fashion-MNIST not found") && e.contains("apt-get install dataset-fashion-mnist"), "{e}");
}

#[test]
fn empty_mnist_split_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    write_mnist(dir.path(), "train", 0, 0, false);
    let e = load_mnist_split(dir.path(), true, "X", "", 0).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
}

fn write_png(path: &Path, w: u32, h: u32, left: [u8; 3], right: [u8; 3]) {
    let img = image::RgbImage::from_fn(w, h, |x, _| image::Rgb(if x < w / 2 { left } else { right }));
    img.save(path).unwrap();
}

#[test]
fn image_folder_resizes_crops_and_flips() {
    let dir = tempfile::tempdir().unwrap();
    for (class, colour) in [("cat", [255, 0, 0]), ("dog", [0, 0, 255])] {
        std::fs::create_dir_all(dir.path().join(class)).unwrap();
        for i in 0..3 {
            write_png(&dir.path().join(class).join(format!("{i}.png")), 40, 20, colour, [0, 255, 0]);
        }
    }
    std::fs::write(dir.path().join("cat").join("notes.txt"), "not an image").unwrap();
    let folder = ImageFolder::open(dir.path(), 3, 16, 14).unwrap();
    assert_eq!(folder.len(), 6);
    assert_eq!(folder.class_names(), &["cat".to_string(), "dog".to_string()]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let b = folder.batch(&[0, 4], false, &mut rng);
    assert_eq!(b.dims, [2, 3, 14, 14]);
    assert_eq!(b.labels, vec![0, 1]);
    // Centre crop, unflipped: the left column of image 0 is red, the right column green.
    let px = |img: usize, ch: usize, y: usize, x: usize| b.images[((img * 3 + ch) * 14 + y) * 14 + x];
    assert_eq!((px(0, 0, 7, 0), px(0, 1, 7, 13)), (255, 255));
    // Augmented batches flip about half of the time.
    let flips = (0..40)
        .map(|_| folder.batch(&[0], true, &mut rng))
        .filter(|b| b.images[7 * 14] < 128 && b.images[7 * 14 + 13] > 128)
        .count();
    assert!((5..=35).contains(&flips), "{flips} flips of 40");
}

#[test]
fn image_folder_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = ImageFolder::open(dir.path(), 3, 16, 14).unwrap_err().to_string();
    assert!(e.contains("no class sub-directories"), "{e}");
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    let e = ImageFolder::open(dir.path(), 3, 16, 14).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
    let e = ImageFolder::open(dir.path(), 2, 16, 14).unwrap_err().to_string();
    assert!(e.contains("1 or 3 channels, got 2"), "{e}");
}

#[test]
fn synthetic_data_is_deterministic_and_class_dependent() {
    let a = synthetic_images([1, 8, 8], 4, 64, 3);
    let b = synthetic_images([1, 8, 8], 4, 64, 3);
    assert_eq!(a.labels(), b.labels());
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let all: Vec<usize> = (0..64).collect();
    let batch = a.batch(&all, false, &mut rng);
    // Images of the same class are closer to each other than to other classes on average.
    let pixels = batch.normalised_data(&owt_models::PixelNorm::Symmetric).to_vec::<f32>().unwrap();
    let img = |i: usize| &pixels[i * 64..(i + 1) * 64];
    let dist = |i: usize, j: usize| img(i).iter().zip(img(j)).map(|(x, y)| (x - y).powi(2)).sum::<f32>();
    let (mut same, mut diff, mut ns, mut nd) = (0.0, 0.0, 0, 0);
    for i in 0..64 {
        for j in i + 1..64 {
            if batch.labels[i] == batch.labels[j] {
                same += dist(i, j);
                ns += 1
            } else {
                diff += dist(i, j);
                nd += 1
            }
        }
    }
    assert!(same / (ns as f32) < 0.5 * diff / (nd as f32));
}

/// Image folders read `.PNG` and `.Jpg` as they read `.png`, never open a FIFO or a directory
/// named like an image, and refuse a class folder without images, naming it.
#[test]
fn image_folders_take_any_extension_case_only_regular_files_and_refuse_empty_classes() {
    let dir = tempfile::tempdir().unwrap();
    let png = |path: &Path| {
        image::GrayImage::from_pixel(20, 20, image::Luma([90])).save_with_format(path, image::ImageFormat::Png).unwrap()
    };
    for (class, name) in [("a", "x.PNG"), ("a", "y.png"), ("b", "z.Png")] {
        std::fs::create_dir_all(dir.path().join(class)).unwrap();
        png(&dir.path().join(class).join(name));
    }
    std::fs::create_dir_all(dir.path().join("b").join("folder.png")).unwrap();
    let fifo = dir.path().join("b").join("pipe.png");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let folder = ImageFolder::open(dir.path(), 1, 16, 14).unwrap();
    assert_eq!(folder.len(), 3, "the three images, nothing else");
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let e = ImageFolder::open(dir.path(), 1, 16, 14).unwrap_err().to_string();
    assert!(e.contains("class folder c has no") && e.contains("every class needs images"), "{e}");
}

/// An image whose header decodes but whose pixels do not is never a blank image: its place in
/// a batch goes to the next image of the split (pixels and class), and it counts toward the
/// split's 1% of undecodable files from then on.
#[test]
fn images_whose_pixels_fail_are_left_out_not_blank_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    for (class, shade) in [("a", 30u8), ("b", 220)] {
        std::fs::create_dir_all(dir.path().join(class)).unwrap();
        for i in 0..60 {
            let img =
                image::GrayImage::from_fn(10, 10, |x, y| image::Luma([shade.wrapping_add((x * 7 + y * 3 + i) as u8)]));
            img.save(dir.path().join(class).join(format!("{i:03}.png"))).unwrap();
        }
    }
    let truncate = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        std::fs::write(path, &bytes[..45]).unwrap();
    };
    // The last image of class a: its place goes to the first of class b.
    truncate(&dir.path().join("a/059.png"));
    let folder = ImageFolder::open(dir.path(), 1, 10, 10).unwrap();
    assert_eq!(folder.len(), 120, "the header passes: the file is found only when read");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let bad = folder.batch(&[59], false, &mut rng);
    let next = folder.batch(&[60], false, &mut rng);
    assert_eq!(bad.images, next.images, "the next image's pixels, not a blank");
    assert_eq!(bad.labels, vec![1], "and its class");
    assert!(bad.images.iter().any(|&p| p != 128 && p != 0));
    assert!(folder.problem().is_none(), "1 of 120 is within 1%");
    // A second one passes 1%; the last image wraps to the first.
    truncate(&dir.path().join("b/059.png"));
    let wrapped = folder.batch(&[119], false, &mut rng);
    assert_eq!(wrapped.images, folder.batch(&[0], false, &mut rng).images);
    let e = folder.problem().expect("2 of 120 is over 1%").to_string();
    assert!(e.contains("2 of 120 images") && e.contains("2 of them found while reading their pixels"), "{e}");
    assert!(e.contains("059.png"), "{e}");
}

/// The ten patches of a 6 x 4 image already at its resize side (4, so not resampled), cut by
/// hand: 3 x 3 crops at x0 in {0, 3}, y0 in {0, 1} (the corners) and (2, 0) (the centre, at
/// torchvision's offsets: 1.5 and 0.5 rounded half to even), then the five mirrored; pixel
/// (x, y) of the image is red 10x + y, green 100 + x, blue 200 + y.
#[test]
fn ten_crops_are_the_four_corners_the_centre_and_their_mirror_images() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    let img = image::RgbImage::from_fn(6, 4, |x, y| image::Rgb([(10 * x + y) as u8, 100 + x as u8, 200 + y as u8]));
    img.save(dir.path().join("a").join("0.png")).unwrap();
    let folder = ImageFolder::open(dir.path(), 3, 4, 3).unwrap();
    let patches = folder.ten_crops(0).unwrap();
    assert_eq!(patches.len(), 10);
    let origins = [(0, 0), (3, 0), (0, 1), (3, 1), (2, 0)];
    for (j, patch) in patches.iter().enumerate() {
        let (x0, y0) = origins[j % 5];
        let mirrored = j >= 5;
        let mut want = vec![0u8; 27];
        for y in 0..3 {
            for x in 0..3 {
                let sx = x0 + if mirrored { 2 - x } else { x };
                let sy = y0 + y;
                let px = [(10 * sx + sy) as u8, 100 + sx as u8, 200 + sy as u8];
                for ch in 0..3 {
                    want[ch * 9 + y * 3 + x] = px[ch];
                }
            }
        }
        assert_eq!(patch, &want, "patch {j} (origin {x0},{y0}, mirrored {mirrored})");
    }
    // As a source: image i's patch j is item 10 i + j, with the image's class.
    let source = owt::data::TenCrops::new(folder);
    assert_eq!((source.len(), source.images()), (10, 1));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let b = source.batch(&(0..10).collect::<Vec<_>>(), false, &mut rng);
    assert_eq!(b.images, patches.concat());
    assert_eq!(b.labels, vec![0; 10]);
}
