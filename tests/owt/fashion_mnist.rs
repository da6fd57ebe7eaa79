//! The real Fashion-MNIST files from Debian's `dataset-fashion-mnist` (CI installs it).

use std::path::Path;

use owt::data::{load_mnist_split, ImageSource, FASHION_MNIST_DIR};

#[test]
fn debian_fashion_mnist_has_the_official_splits() {
    let dir = Path::new(FASHION_MNIST_DIR);
    assert!(
        dir.join("train-images-idx3-ubyte.gz").exists(),
        "Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (the README's setup line does)"
    );
    for (train, n) in [(true, 60_000), (false, 10_000)] {
        let split = load_mnist_split(dir, train, "Fashion-MNIST", "").unwrap();
        assert_eq!((split.len(), split.image_dims(), split.classes()), (n, [1, 28, 28], 10));
        let mut per_class = [0usize; 10];
        for &l in split.labels() {
            per_class[l as usize] += 1;
        }
        assert_eq!(per_class, [n / 10; 10], "the official splits are class-balanced");
    }
}
