//! ImageNet's validation layout: a flat folder of images labelled by a CSV (Kaggle's
//! `LOC_val_solution.csv` as it is) or by the devkit's ground truth list with its synset
//! mapping; what is missing is refused in one line; `owt eval` on it prints what it prints for
//! the same images in class folders.

use std::path::Path;

use crate::cli::owt;
use owt::data::{ImageFolder, ImageSource, ValLabels};

/// `n` tiny PNGs named like ImageNet's validation images, and their classes (cycling).
fn flat(dir: &Path, n: usize, classes: &[&str]) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    (0..n)
        .map(|i| {
            let shade = (i * 40 % 256) as u8;
            image::RgbImage::from_pixel(12, 10, image::Rgb([shade, 0, 255 - shade]))
                .save(dir.join(format!("ILSVRC2012_val_{:08}.png", i + 1)))
                .unwrap();
            classes[i % classes.len()].to_string()
        })
        .collect()
}

fn open(dir: &Path, labels: &Path, synsets: Option<&Path>, classes: Option<&[String]>) -> Result<ImageFolder, String> {
    let spec = ValLabels { labels: labels.to_path_buf(), synsets: synsets.map(Path::to_path_buf) };
    ImageFolder::flat(dir, &spec, classes, 3, 10, 8).map_err(|e| e.to_string())
}

fn labels_of(folder: &ImageFolder) -> Vec<usize> {
    folder.files().iter().map(|(_, c)| *c).collect()
}

#[test]
fn a_csv_labels_a_flat_folder_header_extensions_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let val = dir.path().join("val");
    let names = flat(&val, 6, &["n02", "n01", "n03"]);
    // Kaggle's form: a header, names without their extension, the class first of the field.
    let mut csv = String::from("ImageId,PredictionString\n");
    for (i, class) in names.iter().enumerate().rev() {
        csv += &format!("ILSVRC2012_val_{:08},{class} 12 30 200 140\n", i + 1);
    }
    let labels = dir.path().join("LOC_val_solution.csv");
    std::fs::write(&labels, &csv).unwrap();
    let folder = open(&val, &labels, None, None).unwrap();
    assert_eq!(folder.class_names(), ["n01", "n02", "n03"], "sorted, as class folders would be");
    assert_eq!(labels_of(&folder), [1, 0, 2, 1, 0, 2]);
    assert_eq!(folder.len(), 6);
    // With the training split's classes, its ids.
    let train: Vec<String> = ["n00", "n01", "n02", "n03"].map(String::from).to_vec();
    assert_eq!(labels_of(&open(&val, &labels, None, Some(&train)).unwrap()), [2, 1, 3, 2, 1, 3]);
    // Plain file,class with extensions.
    std::fs::write(
        &labels,
        names.iter().enumerate().map(|(i, c)| format!("ILSVRC2012_val_{:08}.png,{c}\n", i + 1)).collect::<String>(),
    )
    .unwrap();
    assert_eq!(labels_of(&open(&val, &labels, None, None).unwrap()), [1, 0, 2, 1, 0, 2]);
    // The same file with a byte-order mark and no header (as a spreadsheet saves it): its first
    // line is a label, not a header.
    let rows: String =
        names.iter().enumerate().map(|(i, c)| format!("ILSVRC2012_val_{:08}.png,{c}\n", i + 1)).collect();
    std::fs::write(&labels, format!("\u{feff}{rows}")).unwrap();
    assert_eq!(labels_of(&open(&val, &labels, None, None).unwrap()), [1, 0, 2, 1, 0, 2]);
}

#[test]
fn the_devkits_ground_truth_reads_through_its_synset_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let val = dir.path().join("val");
    flat(&val, 5, &["x"]);
    let truth = dir.path().join("ILSVRC2012_validation_ground_truth.txt");
    std::fs::write(&truth, "2\n1\n3\n2\n2\n").unwrap();
    // map_clsloc.txt's form: WNID, ID, name; IDs in another order than the names sort.
    let synsets = dir.path().join("map_clsloc.txt");
    std::fs::write(&synsets, "n02119789 1 kit_fox\nn02100735 2 English_setter\nn02110185 3 Siberian_husky\n").unwrap();
    let folder = open(&val, &truth, Some(&synsets), None).unwrap();
    assert_eq!(folder.class_names(), ["n02100735", "n02110185", "n02119789"]);
    assert_eq!(labels_of(&folder), [0, 2, 1, 0, 0], "ID 2 is n02100735, class 0 of the sorted names");
    // WNIDs alone, a line per ID.
    std::fs::write(&synsets, "n02119789\nn02100735\nn02110185\n").unwrap();
    assert_eq!(labels_of(&open(&val, &truth, Some(&synsets), None).unwrap()), [0, 2, 1, 0, 0]);
}

#[test]
fn what_is_missing_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let val = dir.path().join("val");
    flat(&val, 3, &["a"]);
    let labels = dir.path().join("labels.csv");
    let refused = |csv: &str, classes: Option<&[String]>| {
        std::fs::write(&labels, csv).unwrap();
        let e = open(&val, &labels, None, classes).unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    let e = refused("ILSVRC2012_val_00000001.png,a\nILSVRC2012_val_00000002.png,b\n", None);
    assert!(e.contains("ILSVRC2012_val_00000003.png has no label"), "{e}");
    let all = "ILSVRC2012_val_00000001.png,a\nILSVRC2012_val_00000002.png,b\nILSVRC2012_val_00000003.png,a\n";
    let e = refused(&format!("{all}ILSVRC2012_val_00000009.png,a\n"), None);
    assert!(e.contains("line 4 lists ILSVRC2012_val_00000009.png, which is not an image in"), "{e}");
    let e = refused(&format!("{all}ILSVRC2012_val_00000001.png,b\n"), None);
    assert!(e.contains("ILSVRC2012_val_00000001.png is labelled twice (line 4)"), "{e}");
    let e = refused("ILSVRC2012_val_00000001.png a\n", None);
    assert!(e.contains("line 1 is not 'file,class'"), "{e}");
    // A 4 MB line without a comma is quoted in part, with its length.
    let long = "x".repeat(4 << 20);
    let e = refused(&format!("{long}\n"), None);
    assert!(e.len() < 400 && e.contains(&format!("({} bytes)", 4 << 20)), "{}", &e[..e.len().min(400)]);
    let train = ["a".to_string()];
    let e = refused(all, Some(&train));
    assert!(e.contains("ILSVRC2012_val_00000002.png is labelled b, which is not one of the 1 training classes"), "{e}");
    // The devkit's list: without a mapping, with too few lines, with an ID the mapping lacks.
    let e = refused("1\n2\n1\n", None);
    assert!(e.contains("needs --val-synsets"), "{e}");
    let synsets = dir.path().join("synsets.txt");
    std::fs::write(&synsets, "n01 1\nn02 2\n").unwrap();
    let devkit = |list: &str| {
        std::fs::write(&labels, list).unwrap();
        open(&val, &labels, Some(&synsets), None).unwrap_err()
    };
    assert!(devkit("1\n2\n").contains("2 labels for 3 images"));
    assert!(devkit("1\n2\n7\n").contains("line 3 has ID 7, which --val-synsets does not map"));
    // A flat folder given no labels says what it needs.
    let e = ImageFolder::open(&val, 3, 10, 8).unwrap_err().to_string();
    assert!(e.contains("holds 3 images in one folder") && e.contains("--val-labels"), "{e}");
}

/// `owt eval` on the flat layout prints what it prints on the class folders of the same images.
#[test]
fn eval_on_a_flat_folder_with_its_labels_equals_eval_on_class_folders() {
    let d = |p: &Path| p.to_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let folders = dir.path().join("folders");
    for split in ["train", "val"] {
        for (c, class) in ["n01", "n02"].iter().enumerate() {
            let path = folders.join(split).join(class);
            std::fs::create_dir_all(&path).unwrap();
            for i in 0..4 {
                let shade = (60 * c + 20 * i) as u8;
                image::RgbImage::from_fn(40, 36, |x, _| image::Rgb([shade, x as u8 * 4, 90]))
                    .save(path.join(format!("{class}_{i}.png")))
                    .unwrap();
            }
        }
    }
    let run = dir.path().join("run");
    let (data, out) = (d(&folders), d(&run));
    let net = ["--model", "alexnet-small", "--channels", "3", "--input", "32", "--classes", "2"];
    let common = ["train", "--dataset", "folder", "--data", &data, "--epochs", "1", "--batch", "4", "--out", &out];
    let train = [&common[..], &net].concat();
    let o = owt(&train);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let eval = |data: &Path, extra: &[&str]| {
        let o =
            owt(&[&["eval", "--checkpoint", &d(&run), "--dataset", "folder", "--data", &d(data)][..], extra].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let on_folders = eval(&folders, &[]);
    // The same images, flat, with a CSV; train/ beside them gives the class ids.
    let flat_dir = dir.path().join("flat");
    std::fs::create_dir_all(flat_dir.join("val")).unwrap();
    let mut csv = String::new();
    for class in ["n01", "n02"] {
        for entry in std::fs::read_dir(folders.join("val").join(class)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            std::fs::copy(&path, flat_dir.join("val").join(&name)).unwrap();
            csv += &format!("{name},{class}\n");
        }
    }
    let labels = dir.path().join("val.csv");
    std::fs::write(&labels, csv).unwrap();
    assert_eq!(eval(&flat_dir, &["--val-labels", &d(&labels)]), on_folders);
    let o = owt(&["eval", "--checkpoint", &d(&run), "--dataset", "folder", "--data", &d(&flat_dir)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("--val-labels") && err.lines().count() == 1, "{err}");
}
