//! `owt prepare`: an image folder dataset packed once for the fastest input (see
//! [`crate::data::packed`]): every image of its splits decoded and resized to `--side` on
//! worker threads, written as memory-mappable shards. The output appears whole or not at all
//! (written under a temporary name beside it, renamed when done), is never overwritten, and
//! one command at a time writes it (a prepare or a train of the same `--out` is refused while
//! this one runs). Interrupted (SIGINT, SIGTERM, SIGHUP), it removes the temporary copy with
//! all it holds; killed outright (SIGKILL, a lost machine), its copy is removed by the next
//! prepare of the same output, which names it. Only directories named as owt names them (with
//! a writer's process id and token) are ever removed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use owt_models::ResizeFilter;

use crate::cli::{ValLabelArgs, WorkersArg};
use crate::data::pack::{pack_split, PackOptions};
use crate::data::ImageSource;
use crate::data::{held_out_dir, held_out_folder, train_folder, DataRequest, DatasetKind};
use crate::error::OwtError;
use crate::train::writer_lock::WriterLock;

/// Arguments of `owt prepare`.
#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// The image folder dataset: `DIR/train/<class>/*` and `DIR/val/<class>/*` (or `test/`; or a
    /// flat val/ with --val-labels).
    #[arg(long)]
    pub data: PathBuf,
    /// Where to write the packed copy (must not exist); train on it with `--dataset packed
    /// --data OUT`.
    #[arg(long)]
    pub out: PathBuf,
    /// The shorter side every image is resized to (256 for 224 x 224 inputs, 259 for 227).
    #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=16384))]
    pub side: usize,
    /// The filter images are resized with: area (owt's own) or bilinear (torchvision's, for
    /// networks imported from it); training on the packed copy must use the same.
    #[arg(long, default_value = "area", value_parser = |s: &str| ResizeFilter::from_name(s))]
    pub resize_filter: ResizeFilter,
    /// Shard size in MiB (a shard is closed once it holds this much; at most 16777216, 16 TiB,
    /// the largest file ext4 holds).
    #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=MAX_SHARD_MIB))]
    pub shard_mib: u64,
    /// Image preparation threads.
    #[command(flatten)]
    pub workers: WorkersArg,
    /// A flat held-out folder's labels.
    #[command(flatten)]
    pub val: ValLabelArgs,
}

/// The largest `--shard-mib`: 16 TiB, ext4's largest file (and far from wrapping the u64 byte
/// count it becomes; 2^44 MiB wrapped to 0 bytes).
pub const MAX_SHARD_MIB: u64 = 1 << 24;

/// Packs the dataset and says what was written.
pub fn run(args: &PrepareArgs) -> Result<(), OwtError> {
    let out = &args.out;
    crate::host::nested_paths::refuse_output_inside_input(out, "--out", &args.data, "--data")?;
    let what = format!("--out {}", out.display());
    // Held to the end: a second prepare of the same output is refused while this one writes.
    let _lock = WriterLock::file(out, "prepare", &what)?;
    if out.exists() {
        return Err(OwtError::input(format!(
            "{what} exists; owt prepare never overwrites: remove it or choose another directory"
        )));
    }
    // The crop side only bounds the resize here: nothing is cropped.
    let request = DataRequest {
        dir: Some(args.data.clone()),
        resize: Some(args.side),
        val_labels: args.val.spec(),
        filter: args.resize_filter,
        ..DataRequest::new(DatasetKind::Folder, [3, args.side, args.side])
    };
    let train = args.data.join("train");
    let train = if train.is_dir() { Some(train_folder(&args.data, &request)?) } else { None };
    let held_out_dir = held_out_dir(&args.data)?;
    let held_out = held_out_folder(&args.data, &request, train.as_ref().map(|t| t.class_names()))?;
    let held_out_name = held_out_dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let temporary = temporary_dir(out)?;
    let _removed_on_signal = crate::host::removed_on_signal::RemovedOnSignal::tree(&temporary);
    let opts = PackOptions { workers: args.workers.count(), shard_bytes: args.shard_mib << 20, verbose: true };
    let started = Instant::now();
    let result = (|| -> Result<Vec<String>, OwtError> {
        let mut lines = Vec::new();
        let splits = train.iter().map(|t| ("train".to_string(), t)).chain([(held_out_name, &held_out)]);
        for (name, folder) in splits {
            let dir = temporary.join(&name);
            std::fs::create_dir_all(&dir).map_err(|e| OwtError::io(format!("cannot create {}: {e}", dir.display())))?;
            crate::err_line!(
                "packing {name}: {} images of {} at side {}",
                folder.len(),
                folder.root().display(),
                args.side
            );
            let s = pack_split(folder, &dir, &name, opts)?;
            crate::host::exit::write_fault(&temporary);
            lines.push(format!(
                "{name}: {} images ({} left out) in {} shards, {:.2} GB",
                s.images,
                s.left_out,
                s.shards,
                s.bytes as f64 / 1e9
            ));
        }
        sync_dir(&temporary)?;
        rename_no_replace(&temporary, out)
            .map_err(|e| OwtError::io(format!("cannot rename {} to {}: {e}", temporary.display(), out.display())))?;
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
        Ok(lines)
    })();
    let lines = result.inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&temporary);
    })?;
    for line in lines {
        crate::out_line!("{line}");
    }
    crate::out_line!(
        "packed {} into {} in {:.1} s; train with --dataset packed --data {}",
        args.data.display(),
        out.display(),
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}

/// The temporary directory the packed copy is written into, beside `out`, after removing (and
/// naming) the ones killed prepares left: while this process holds `out`'s lock no other
/// prepare of it runs, so every temporary of `out` but this process's own is one of theirs
/// (whatever its process id: ids are reused, tokens are not).
fn temporary_dir(out: &Path) -> Result<PathBuf, OwtError> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| OwtError::input(format!("--out {}: expected a directory name", out.display())))?;
    std::fs::create_dir_all(parent).map_err(|e| OwtError::io(format!("cannot create {}: {e}", parent.display())))?;
    for (left, pid) in crate::train::atomic::others_temporaries(parent, &name) {
        let gone = if left.is_dir() { std::fs::remove_dir_all(&left) } else { std::fs::remove_file(&left) };
        match gone {
            Ok(()) => crate::err_line!(
                "removed {}: the unfinished copy of a prepare of --out {} that was killed (process {pid})",
                left.display(),
                out.display()
            ),
            Err(e) => crate::err_line!(
                "warning: cannot remove {}, the unfinished copy of a prepare that was killed (process {pid}): {e}",
                left.display()
            ),
        }
    }
    let dir = parent.join(crate::train::atomic::temporary_name(&name));
    std::fs::create_dir(&dir).map_err(|e| OwtError::io(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// Renames the directory `from` to `to`, refused if `to` exists (even empty, which a plain
/// rename replaces): where the kernel cannot refuse it, a plain rename after a check.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
        let (a, b) = (c(from)?, c(to)?);
        // SAFETY: two NUL-terminated paths; renameat2 reads them and keeps nothing.
        let r =
            unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_NOREPLACE) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(e);
        }
    }
    if to.exists() {
        return Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists));
    }
    std::fs::rename(from, to)
}

/// Syncs a directory's entries to disk (its new files' names).
fn sync_dir(dir: &Path) -> Result<(), OwtError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| OwtError::io(format!("cannot sync {}: {e}", dir.display())))
}
