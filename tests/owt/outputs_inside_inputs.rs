//! An output inside the input it is made from is refused before anything is written:
//! `owt prepare --out` inside the folder it packs (it would become a class folder of its own
//! data set) and a training run's `--out` inside its `--data`.

use std::path::Path;
use std::process::Output;

use crate::cli::{owt, stderr};

fn assert_refused_naming_both(o: &Output, out: &Path, data: &Path) {
    let err = stderr(o);
    assert!(!o.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("--out") && (err.contains("lies inside --data") || err.contains(" is --data")), "{err}");
    assert!(err.contains(&out.display().to_string()) && err.contains(&data.display().to_string()), "{err}");
    assert!(!err.contains("internal"), "{err}");
}

#[test]
fn prepare_and_train_refuse_an_out_inside_their_data() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("photos");
    std::fs::create_dir_all(data.join("train/cat")).unwrap();
    std::fs::create_dir_all(data.join("val/cat")).unwrap();
    let before = std::fs::read_dir(data.join("train")).unwrap().count();
    for out in [data.join("packed"), data.join("train/packed"), data.clone()] {
        let o = owt(&["prepare", "--data", data.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_refused_naming_both(&o, &out, &data);
        let o = owt(&[
            "train",
            "--model",
            "alexnet-small",
            "--dataset",
            "folder",
            "--data",
            data.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_refused_naming_both(&o, &out, &data);
    }
    // Nothing was written into the data: the same class folders, no pack, no run.
    assert_eq!(std::fs::read_dir(data.join("train")).unwrap().count(), before);
    assert!(!data.join("packed").exists() && !data.join("train/packed").exists());
    assert!(!data.join("checkpoint.owt").exists() && !data.join("metrics.json").exists());
    // Beside the data, the same commands go past this check (here to the empty folder's refusal).
    let beside = root.path().join("packed");
    let o = owt(&["prepare", "--data", data.to_str().unwrap(), "--out", beside.to_str().unwrap()]);
    assert!(!stderr(&o).contains("inside"), "{}", stderr(&o));
}
