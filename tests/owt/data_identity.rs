//! A run knows its data (issue 39 point 4): its checkpoint keeps the dataset's kind, folder,
//! class names and split sizes; a resume on another folder, on renamed or reordered class
//! folders or on splits that grew is refused in one line; `owt eval` on a held-out folder with
//! fewer classes scores them as the network learnt them (and refuses classes it never saw).

use std::path::Path;
use std::process::Output;

use crate::faults::{ok, one_line_error, train};

fn owt(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_owt")).args(args).output().expect("run owt")
}

/// A 12x12 grey PNG: shade `shade` with a gradient, so the classes differ.
fn png(path: &Path, shade: u8, i: usize) {
    image::GrayImage::from_fn(12, 12, |x, y| {
        image::Luma([shade.wrapping_add((x as u8) * 5 + (y as u8) * (i as u8 + 1))])
    })
    .save(path)
    .unwrap();
}

/// `root/<split>/<class>/*.png`, `per_class` images of each class in each split.
fn folder(root: &Path, classes: &[(&str, u8)], per_class: usize) {
    for split in ["train", "val"] {
        for &(class, shade) in classes {
            let dir = root.join(split).join(class);
            std::fs::create_dir_all(&dir).unwrap();
            for i in 0..per_class {
                png(&dir.join(format!("{i}.png")), shade, i);
            }
        }
    }
}

fn folder_run(out: &Path, data: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["--dataset", "folder", "--data", data.to_str().unwrap(), "--limit", "1000", "--classes", "3"];
    args.extend_from_slice(extra);
    train(out, &args)
}

const CLASSES: [(&str, u8); 3] = [("a", 20), ("b", 120), ("c", 220)];

#[test]
fn a_resume_on_other_data_is_refused_naming_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (data, run) = (dir.path().join("data"), dir.path().join("run"));
    folder(&data, &CLASSES, 3);
    ok(&folder_run(&run, &data, &[]));
    let checkpoint = std::fs::read(run.join("checkpoint.owt")).unwrap();
    let again = |data: &Path| {
        std::fs::write(run.join("checkpoint.owt"), &checkpoint).unwrap();
        folder_run(&run, data, &["--resume", "--epochs", "2"])
    };
    // The same folder, named another way (a trailing "/."), resumes.
    ok(&again(&data.join(".")));
    // A copy elsewhere is another folder.
    let copy = dir.path().join("copy");
    folder(&copy, &CLASSES, 3);
    one_line_error(&again(&copy), &["cannot resume", "--data", "copy", "the checkpoint was trained on", "data"]);
    // Renamed class folders: every label would mean another class.
    std::fs::rename(data.join("train/a"), data.join("train/zz")).unwrap();
    std::fs::rename(data.join("val/a"), data.join("val/zz")).unwrap();
    one_line_error(&again(&data), &["cannot resume", "class 0 is now 'b'", "learnt it as 'a'"]);
    std::fs::rename(data.join("train/zz"), data.join("train/a")).unwrap();
    std::fs::rename(data.join("val/zz"), data.join("val/a")).unwrap();
    // Images added to a split since.
    png(&data.join("val/b/extra.png"), 120, 7);
    one_line_error(&again(&data), &["cannot resume", "held-out images", "9"]);
    std::fs::remove_file(data.join("val/b/extra.png")).unwrap();
    ok(&again(&data));
    // Synthetic data has no folder; a folder run is not resumed on it.
    std::fs::write(run.join("checkpoint.owt"), &checkpoint).unwrap();
    one_line_error(&train(&run, &["--resume", "--epochs", "2", "--classes", "3"]), &["cannot resume", "--dataset"]);
}

/// `owt eval`'s figures: accuracy (a fraction), images, loss.
fn evaluated(o: &Output) -> (f64, usize, f64) {
    ok(o);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let number_after = |what: &str| -> &str {
        let at = out.find(what).unwrap_or_else(|| panic!("{what:?} not in {out}")) + what.len();
        out[at..].split([' ', '%', ',', '(', ')', '\n']).find(|s| !s.is_empty()).unwrap()
    };
    let accuracy: f64 = number_after("test accuracy ").parse().unwrap();
    let images: usize = out.split('(').nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let loss: f64 = number_after("test loss ").parse().unwrap();
    (accuracy / 100.0, images, loss)
}

#[test]
fn eval_on_a_folder_with_fewer_classes_scores_them_as_the_network_learnt_them() {
    let dir = tempfile::tempdir().unwrap();
    let (data, run) = (dir.path().join("data"), dir.path().join("run"));
    folder(&data, &CLASSES, 4);
    ok(&folder_run(&run, &data, &["--epochs", "2"]));
    // Held-out folders of some of the classes only (no train/ beside them).
    let held_out = |name: &str, classes: &[(&str, u8)]| {
        let root = dir.path().join(name);
        for &(class, _) in classes {
            let to = root.join("val").join(class);
            std::fs::create_dir_all(&to).unwrap();
            for i in 0..4 {
                std::fs::copy(data.join("val").join(class).join(format!("{i}.png")), to.join(format!("{i}.png")))
                    .unwrap();
            }
        }
        root
    };
    let eval = |root: &Path| {
        owt(&["eval", "--checkpoint", run.to_str().unwrap(), "--dataset", "folder", "--data", root.to_str().unwrap()])
    };
    let whole = evaluated(&eval(&data));
    let a = evaluated(&eval(&held_out("only-a", &CLASSES[..1])));
    let bc = evaluated(&eval(&held_out("b-and-c", &CLASSES[1..])));
    eprintln!("all {whole:?}, a {a:?}, b and c {bc:?}");
    assert_eq!((whole.1, a.1, bc.1), (12, 4, 8));
    // Scored with the network's own class ids, the parts add up to the whole: the correct
    // counts exactly, the summed losses to the printed digits (b and c read as classes 0 and
    // 1 would be scored against the wrong outputs).
    let correct = |(acc, n, _): (f64, usize, f64)| (acc * n as f64).round() as usize;
    assert_eq!(correct(whole), correct(a) + correct(bc), "correct predictions");
    let summed = (a.2 * 4.0 + bc.2 * 8.0) / 12.0;
    assert!((summed - whole.2).abs() <= 1.5e-4, "loss of the parts {summed} against the whole's {}", whole.2);
    // A class the network never saw is refused, named.
    let unknown = held_out("unknown", &CLASSES[1..]);
    std::fs::rename(unknown.join("val/c"), unknown.join("val/q")).unwrap();
    one_line_error(&eval(&unknown), &["class folders [\"q\"]", "not among the 3 classes", "\"a\", \"b\", \"c\""]);
}
