//! The real Fashion-MNIST files from Debian's `dataset-fashion-mnist` (CI installs it).

use std::path::Path;

use owt::data::{load_mnist_split, ImageSource, FASHION_MNIST_DIR};
use rand::SeedableRng;

#[test]
fn debian_fashion_mnist_has_the_official_splits() {
    let dir = Path::new(FASHION_MNIST_DIR);
    assert!(
        dir.join("train-images-idx3-ubyte.gz").exists(),
        "Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (the README's setup line does)"
    );
    for (train, n) in [(true, 60_000), (false, 10_000)] {
        let split = load_mnist_split(dir, train, "Fashion-MNIST", "", 28).unwrap();
        assert_eq!((split.len(), split.image_dims(), split.classes()), (n, [1, 28, 28], 10));
        let mut per_class = [0usize; 10];
        for &l in split.labels() {
            per_class[l as usize] += 1;
        }
        assert_eq!(per_class, [n / 10; 10], "the official splits are class-balanced");
    }
}

/// A network of 32x32 input (VGG at its smallest side) gets the images centred on 32x32 of
/// background: the middle 28x28 the file's pixels, two rows and columns of zeros around.
#[test]
fn fashion_mnist_pads_to_a_larger_input() {
    let dir = Path::new(FASHION_MNIST_DIR);
    let plain = load_mnist_split(dir, false, "Fashion-MNIST", "", 28).unwrap();
    let padded = load_mnist_split(dir, false, "Fashion-MNIST", "", 32).unwrap();
    assert_eq!((padded.len(), padded.image_dims()), (10_000, [1, 32, 32]));
    assert_eq!(padded.labels(), plain.labels());
    // Beyond a margin of 8 the images stay as they are, for the network to refuse by shape.
    let far = load_mnist_split(dir, false, "Fashion-MNIST", "", 227).unwrap();
    assert_eq!(far.image_dims(), [1, 28, 28]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let (a, b) = (plain.batch(&[17], false, &mut rng), padded.batch(&[17], false, &mut rng));
    for r in 0..32 {
        for c in 0..32 {
            let want = if (2..30).contains(&r) && (2..30).contains(&c) { a.images[(r - 2) * 28 + c - 2] } else { 0 };
            assert_eq!(b.images[r * 32 + c], want, "row {r} column {c}");
        }
    }
}
