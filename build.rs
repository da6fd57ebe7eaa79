//! Embeds the kernel-cache seeds in `kernel-cache/` (CubeCL autotune results recorded on known
//! devices, see src/runtime/kernel_cache.rs) into the binary, so a first run on such a device does not
//! spend minutes autotuning.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let seeds = root.join("kernel-cache");
    println!("cargo:rerun-if-changed={}", seeds.display());
    let mut found = Vec::new();
    files(&seeds, &mut found);
    let mut code = String::from("/// (path under the cache directory, contents) of every seed file.\n");
    code.push_str("pub static SEEDS: &[(&str, &[u8])] = &[\n");
    for path in found {
        println!("cargo:rerun-if-changed={}", path.display());
        let relative = path.strip_prefix(&seeds).expect("under kernel-cache").to_string_lossy().replace('\\', "/");
        if !relative.contains('/') {
            continue; // kernel-cache/README.md: seeds live in one directory per device class.
        }
        code.push_str(&format!("    ({relative:?}, include_bytes!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("kernel_cache_seeds.rs");
    std::fs::write(out, code).expect("writing the seed list");
}
