//! Which data a run trained on, kept in its checkpoint: a resume on another folder, on
//! class folders renamed or reordered (every label would mean another class), or on splits
//! of other sizes is refused in words, and `owt eval` maps a held-out folder's class names
//! to the ids the network learnt them as.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::data::{DatasetKind, Splits};

/// A run's dataset: its kind, where it was read from, its classes in id order and its
/// splits' sizes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetIdentity {
    /// The dataset's kind (`--dataset`).
    pub kind: DatasetKind,
    /// The data directory, made absolute (`None` for data owt makes: synthetic).
    pub dir: Option<String>,
    /// Class names in class-id order (folder names; the ids in words for IDX and synthetic
    /// data, whose classes have no names).
    pub classes: Vec<String>,
    /// Images in the training split (after `--limit`).
    pub train_images: usize,
    /// Images (files, not patches) in the held-out split.
    pub test_images: usize,
}

impl DatasetIdentity {
    /// The identity of `splits`, read as `kind` from `dir`.
    pub fn of(kind: DatasetKind, dir: Option<&Path>, splits: &Splits) -> Self {
        DatasetIdentity {
            kind,
            dir: dir.map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()).display().to_string()),
            classes: splits.train.class_names(),
            train_images: splits.train.len(),
            test_images: splits.test.len() / splits.test.grain().max(1),
        }
    }

    /// How this run's data differs from `saved` (the checkpoint's), in words, or `None`.
    pub fn difference(&self, saved: &DatasetIdentity) -> Option<String> {
        if self.kind != saved.kind {
            return Some(format!(
                "this command reads --dataset {:?}, the checkpoint was trained on {:?}",
                self.kind, saved.kind
            ));
        }
        if self.dir != saved.dir {
            let show = |d: &Option<String>| d.clone().unwrap_or_else(|| "no directory".into());
            return Some(format!(
                "this command reads --data {}, the checkpoint was trained on {}",
                show(&self.dir),
                show(&saved.dir)
            ));
        }
        if self.classes != saved.classes {
            return Some(class_difference(&self.classes, &saved.classes));
        }
        if (self.train_images, self.test_images) != (saved.train_images, saved.test_images) {
            return Some(format!(
                "the data now holds {} training and {} held-out images, the checkpoint was trained on {} and {} (images added or removed since)",
                self.train_images, self.test_images, saved.train_images, saved.test_images
            ));
        }
        None
    }
}

/// The first way `now`'s classes differ from `saved`'s (which they do): a count, or the first
/// id whose name changed.
pub(crate) fn class_difference(now: &[String], saved: &[String]) -> String {
    if now.len() != saved.len() {
        return format!("the data now has {} classes, the checkpoint was trained on {}", now.len(), saved.len());
    }
    let id = now.iter().zip(saved).position(|(a, b)| a != b).unwrap_or(0);
    let sorted = |names: &[String]| {
        let mut v = names.to_vec();
        v.sort();
        v
    };
    let how = if sorted(now) == sorted(saved) { "reordered" } else { "renamed" };
    format!(
        "class {id} is now '{}', the checkpoint learnt it as '{}' (class folders {how} since: every label would mean another class)",
        now[id], saved[id]
    )
}
