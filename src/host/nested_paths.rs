//! An output inside an input: `owt prepare --out` inside the folder it packs would become a
//! class folder of its own data set, and a run directory inside its data folder mixes the run's
//! files into the data a later run reads. Both are refused before anything is written.

use std::path::{Component, Path, PathBuf};

use crate::error::OwtError;

/// `path` made absolute with every link resolved, as far as it exists; the parts that do not
/// exist yet (an `--out` about to be made) are appended as written, `..` taken lexically.
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Refuses an output (`out_flag OUT`) that is the input (`in_flag DATA`) or lies inside it,
/// naming both as given and as resolved where they differ.
pub fn refuse_output_inside_input(out: &Path, out_flag: &str, data: &Path, in_flag: &str) -> Result<(), OwtError> {
    let (o, d) = (resolved(out), resolved(data));
    if !o.starts_with(&d) {
        return Ok(());
    }
    let shown = |given: &Path, real: &Path| {
        if std::path::absolute(given).is_ok_and(|a| a == real) {
            given.display().to_string()
        } else {
            format!("{} ({})", given.display(), real.display())
        }
    };
    let how = if o == d { "is" } else { "lies inside" };
    Err(OwtError::input(format!(
        "{out_flag} {} {how} {in_flag} {}: what owt writes would become part of the data it reads; choose an {out_flag} outside it",
        shown(out, &o),
        shown(data, &d)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_inside_its_input_is_refused_however_it_is_spelled() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("images");
        std::fs::create_dir_all(data.join("train/cat")).unwrap();
        std::os::unix::fs::symlink(&data, root.path().join("link")).unwrap();
        let inside = [
            data.join("packed"),
            data.join("train/packed"),
            data.join("train/cat"),
            data.clone(),
            root.path().join("link/new/deeper"),
            root.path().join("elsewhere/../images/x"),
            data.join("train/../packed"),
        ];
        for out in &inside {
            let err = refuse_output_inside_input(out, "--out", &data, "--data").unwrap_err().to_string();
            assert!(
                err.contains("--out") && err.contains("--data") && err.contains(&data.display().to_string()),
                "{err}"
            );
        }
        // The data named through the link: the same folder.
        let via_link = root.path().join("link");
        assert!(refuse_output_inside_input(&data.join("p"), "--out", &via_link, "--data").is_err());
        for out in [root.path().join("packed"), root.path().join("images-packed"), data.join("../packed")] {
            refuse_output_inside_input(&out, "--out", &data, "--data").unwrap();
        }
    }
}
