//! Labels of a flat held-out folder: ImageNet's own validation layout, 50,000 images in one
//! folder, labelled by a separate file. Two forms are read:
//!
//! - a CSV of `file,class` (a header line is skipped, a byte-order mark too; the class is the field's first word, so
//!   Kaggle's `LOC_val_solution.csv`, `ImageId,PredictionString`, reads as it is; file names
//!   may leave out their extension);
//! - the devkit's ground truth (`ILSVRC2012_validation_ground_truth.txt`: line `i` holds the
//!   ILSVRC2012_ID of the `i`-th image in file-name order), with its synset mapping
//!   (`--val-synsets`: a line per ID, `WNID ID [name]` as in `map_clsloc.txt`, or the WNIDs
//!   alone in ID order).
//!
//! Anything missing is refused in one line: a listed file that is not there, an image with no
//! label, an ID with no synset, a class the training split does not have.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::error::OwtError;

/// Where a flat held-out folder's labels come from (`--val-labels`, `--val-synsets`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValLabels {
    /// The CSV or the devkit's ground truth list.
    pub labels: PathBuf,
    /// The devkit's ID-to-synset mapping (needed with the ground truth list).
    pub synsets: Option<PathBuf>,
}

/// The largest labels or mapping file read (ImageNet's CSV is 2.6 MB).
const MAX_LABEL_BYTES: u64 = 256 << 20;

/// The class of each of `files` (the flat folder's image names, sorted), and the class names
/// in class-id order: `classes` when given (the training split's), else every class the
/// labels name (the mapping's, with the devkit's list), sorted.
pub fn label_files(
    spec: &ValLabels,
    dir: &Path,
    files: &[String],
    classes: Option<&[String]>,
) -> Result<(Vec<usize>, Vec<String>), OwtError> {
    let text = read_text(&spec.labels)?;
    let (named, all) = if looks_like_ground_truth(&text) {
        let synsets = spec.synsets.as_ref().ok_or_else(|| {
            OwtError::data(format!(
                "--val-labels {}: a list of class IDs (the devkit's ground truth) needs --val-synsets FILE, the mapping of IDs to classes (map_clsloc.txt: 'n02119789 1 kit_fox' per line)",
                spec.labels.display()
            ))
        })?;
        let mapping = read_synsets(synsets)?;
        let all: BTreeSet<String> = mapping.values().cloned().collect();
        (ground_truth(&spec.labels, &text, files, &mapping)?, all)
    } else {
        let named = csv_labels(&spec.labels, &text, dir, files)?;
        let all: BTreeSet<String> = named.iter().cloned().collect();
        (named, all)
    };
    let classes: Vec<String> = classes.map(<[String]>::to_vec).unwrap_or_else(|| all.into_iter().collect());
    let id: HashMap<&str, usize> = classes.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
    let ids = named
        .iter()
        .zip(files)
        .map(|(class, file)| {
            id.get(class.as_str()).copied().ok_or_else(|| {
                OwtError::data(format!(
                    "--val-labels {}: {file} is labelled {class}, which is not one of the {} training classes (such as {})",
                    spec.labels.display(),
                    classes.len(),
                    classes.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((ids, classes))
}

fn read_text(path: &Path) -> Result<String, OwtError> {
    let bytes = crate::host::bounded_read::read(path, MAX_LABEL_BYTES, "a labels file")
        .map_err(|e| OwtError::data(format!("cannot read {}: {e}", path.display())))?;
    let text = String::from_utf8(bytes).map_err(|_| OwtError::data(format!("{} is not UTF-8 text", path.display())))?;
    // A byte-order mark (what spreadsheet programs put first) is not part of the first line,
    // as Python's `utf-8-sig` reads it.
    Ok(text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text))
}

/// At most the first 80 characters of `line`, quoted, with how long the whole line is where
/// it is longer: a line is named in one line of error, whatever its length.
fn excerpt(line: &str) -> String {
    const SHOWN: usize = 80;
    match line.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{:?}... ({} bytes)", &line[..end], line.len()),
        None => format!("{line:?}"),
    }
}

/// Whether every non-empty line is a positive integer (the devkit's list).
fn looks_like_ground_truth(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty()).peekable();
    lines.peek().is_some() && lines.all(|l| l.parse::<u64>().is_ok_and(|n| n > 0))
}

/// The mapping of IDs to class names.
fn read_synsets(path: &Path) -> Result<HashMap<u64, String>, OwtError> {
    let text = read_text(path)?;
    let mut out = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        let id = words.iter().find_map(|w| w.parse::<u64>().ok()).unwrap_or(n as u64 + 1);
        let Some(class) = words.iter().find(|w| w.parse::<u64>().is_err()) else {
            return Err(OwtError::data(format!(
                "--val-synsets {}: line {} names no class: expected 'WNID ID [name]' or a WNID",
                path.display(),
                n + 1
            )));
        };
        if out.insert(id, class.to_string()).is_some() {
            return Err(OwtError::data(format!(
                "--val-synsets {}: ID {id} appears twice (line {})",
                path.display(),
                n + 1
            )));
        }
    }
    Ok(out)
}

/// The devkit's list: line `i` labels the `i`-th file.
fn ground_truth(
    path: &Path,
    text: &str,
    files: &[String],
    mapping: &HashMap<u64, String>,
) -> Result<Vec<String>, OwtError> {
    let ids: Vec<u64> =
        text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| l.parse().expect("checked")).collect();
    if ids.len() != files.len() {
        return Err(OwtError::data(format!(
            "--val-labels {}: {} labels for {} images; the devkit's list has a line per image, in file-name order",
            path.display(),
            ids.len(),
            files.len()
        )));
    }
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            mapping.get(id).cloned().ok_or_else(|| {
                OwtError::data(format!(
                    "--val-labels {}: line {} has ID {id}, which --val-synsets does not map",
                    path.display(),
                    i + 1
                ))
            })
        })
        .collect()
}

/// A CSV of file, class: each of `files` must have exactly one line.
fn csv_labels(path: &Path, text: &str, dir: &Path, files: &[String]) -> Result<Vec<String>, OwtError> {
    let stem = |f: &str| Path::new(f).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let by_name: HashMap<String, usize> =
        files.iter().enumerate().flat_map(|(i, f)| [(f.clone(), i), (stem(f), i)]).collect();
    let mut labels: Vec<Option<String>> = vec![None; files.len()];
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((file, class)) = line.split_once(',') else {
            return Err(OwtError::data(format!(
                "--val-labels {}: line {} is not 'file,class': {}",
                path.display(),
                n + 1,
                excerpt(line)
            )));
        };
        let (file, class) = (file.trim(), class.split_whitespace().next().unwrap_or(""));
        let Some(&i) = by_name.get(file) else {
            if n == 0 {
                continue; // A header.
            }
            return Err(OwtError::data(format!(
                "--val-labels {}: line {} lists {file}, which is not an image in {}",
                path.display(),
                n + 1,
                dir.display()
            )));
        };
        if class.is_empty() {
            return Err(OwtError::data(format!(
                "--val-labels {}: line {} gives {file} no class",
                path.display(),
                n + 1
            )));
        }
        if labels[i].replace(class.to_string()).is_some() {
            return Err(OwtError::data(format!(
                "--val-labels {}: {file} is labelled twice (line {})",
                path.display(),
                n + 1
            )));
        }
    }
    labels
        .into_iter()
        .zip(files)
        .map(|(l, f)| {
            l.ok_or_else(|| {
                OwtError::data(format!(
                    "--val-labels {}: {} has no label (every image of the folder needs one)",
                    path.display(),
                    dir.join(f).display()
                ))
            })
        })
        .collect()
}
