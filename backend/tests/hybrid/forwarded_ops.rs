//! Every op is Hybrid's, never Burn's default: of Burn 0.21's backend op traits (float, int,
//! bool, module, activation, transaction, quantized), every method that has a default body
//! and that an inner backend (Flex, or the vendored CubeCL backend) implements its own way is
//! implemented by `Hybrid` too, so it runs the inner backend's op (by a placement rule, or
//! gathered) instead of Burn's default arithmetic (`prod` through exp-sum-log, NaN for a
//! negative factor; `mean` through a sum that overflows f16; `gather_nd` a panic).
//!
//! The traits and Flex's implementations are read from the pinned sources cargo resolved
//! (`cargo metadata`), the vendored burn-cubecl's and Hybrid's own from this repository, with
//! a small reader of Rust that skips comments, strings and characters and counts braces (the
//! methods an op-definition macro of `backend/src/ops/macros.rs` expands to are its arguments).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The backend op traits and the files of burn-backend that define them.
pub(crate) const TRAITS: [(&str, &str); 7] = [
    ("FloatTensorOps", "src/backend/ops/tensor.rs"),
    ("IntTensorOps", "src/backend/ops/int_tensor.rs"),
    ("BoolTensorOps", "src/backend/ops/bool_tensor.rs"),
    ("ModuleOps", "src/backend/ops/modules/base.rs"),
    ("ActivationOps", "src/backend/ops/activation.rs"),
    ("TransactionOps", "src/backend/ops/transaction.rs"),
    ("QTensorOps", "src/backend/ops/qtensor.rs"),
];

/// Methods with a default body that `Hybrid` leaves to Burn although an inner backend has its
/// own, each with the reason. None today.
const LEFT_TO_BURN: [(&str, &str); 0] = [];

/// `src` with comments, string and character literals blanked (same length, newlines kept), so
/// braces and names inside them do not count.
pub(crate) fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = src[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
                blank(&mut out, i, end);
                i = end;
            }
            b'r' if b.get(i + 1) == Some(&b'#') || (b.get(i + 1) == Some(&b'"') && !ident_before(b, i)) => {
                // A raw string r"..." or r#"..."#.
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let end = src[i + 2 + hashes..].find(&close).map_or(b.len(), |n| i + 2 + hashes + n + close.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i, (j + 1).min(b.len()));
                i = j + 1;
            }
            b'\'' => {
                // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
                let rest = &src[i + 1..];
                let len = if rest.starts_with('\\') {
                    rest.get(2..).and_then(|r| r.find('\'')).map(|n| n + 3)
                } else {
                    let c = rest.chars().next().map_or(0, char::len_utf8);
                    rest[c..].starts_with('\'').then_some(c + 1)
                };
                match len {
                    Some(n) => {
                        blank(&mut out, i, i + 1 + n);
                        i += 1 + n;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 (only ASCII bytes are replaced)")
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// The index of the brace that closes the one at `open`.
fn closing(code: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (k, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + k;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces from byte {open}")
}

/// The names after `fn` at brace depth 0 of `body`, each with whether a body follows its
/// signature (a default) or a `;`.
pub(crate) fn trait_methods(code: &str, name: &str) -> Vec<(String, bool)> {
    let at = code.find(&format!("pub trait {name}")).unwrap_or_else(|| panic!("no trait {name}"));
    let open = at + code[at..].find('{').unwrap();
    let body = &code[open + 1..closing(code, open)];
    let bytes = body.as_bytes();
    let (mut depth, mut i, mut out) = (0i32, 0usize, Vec::new());
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b'f' if depth == 0 && body[i..].starts_with("fn ") && !ident_before(bytes, i) => {
                let rest = &body[i + 3..];
                let name: String = rest.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                // The signature ends at the first `;` or `{` outside parentheses and brackets.
                let mut paren = 0i32;
                let mut j = i;
                let default = loop {
                    match bytes[j] {
                        b'(' | b'[' => paren += 1,
                        b')' | b']' => paren -= 1,
                        b';' if paren == 0 => break false,
                        b'{' if paren == 0 => break true,
                        _ => {}
                    }
                    j += 1;
                };
                out.push((name, default));
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every method an `impl ... {trait}<..> for {type}` block in the `.rs` files under `dir`
/// defines, where `for_type` accepts the implementing type: its `fn` items and the names an
/// op-definition macro (`name_ops!(Kind; a, b: rule, ...)`) is given.
fn impl_methods(dir: &Path, trait_name: &str, for_type: impl Fn(&str) -> bool) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut files = Vec::new();
    collect_rs(dir, &mut files);
    let head = format!("{trait_name}<");
    for file in files {
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        let mut from = 0;
        while let Some(k) = code[from..].find("impl") {
            let start = from + k;
            from = start + 4;
            if ident_before(code.as_bytes(), start)
                || !code[start + 4..].starts_with(|c: char| c == '<' || c.is_whitespace())
            {
                continue;
            }
            let Some(open) = code[start..].find('{').map(|n| start + n) else { break };
            let header = &code[start..open];
            let Some(t) = header.find(&head) else { continue };
            let Some(for_at) = header[t..].find(" for ") else { continue };
            let ty = header[t + for_at + 5..].split("where").next().unwrap().trim();
            if !for_type(ty) {
                continue;
            }
            let end = closing(&code, open);
            let body = &code[open..end];
            let mut i = 0;
            while let Some(n) = body[i..].find("fn ") {
                let at = i + n;
                i = at + 3;
                if ident_before(body.as_bytes(), at) {
                    continue;
                }
                let name: String =
                    body[at + 3..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                names.insert(name);
            }
            let mut i = 0;
            while let Some(n) = body[i..].find("_ops!(") {
                let at = i + n;
                i = at + 6;
                let args = &body[at + 6..at + 6 + body[at + 6..].find(')').unwrap()];
                let Some((_, list)) = args.split_once(';') else { continue };
                for part in list.split(',') {
                    let name = part.split(':').next().unwrap().trim();
                    if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                        names.insert(name.to_string());
                    }
                }
            }
            from = end;
        }
    }
    names
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source folders of the packages cargo resolved for this workspace, by name and version.
pub(crate) fn package_dirs() -> BTreeMap<(String, String), PathBuf> {
    // This machine's platform only (cargo has not fetched other platforms' crates).
    let host = format!("{}-unknown-{}-gnu", std::env::consts::ARCH, std::env::consts::OS);
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline", "--filter-platform", &host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap());
            let key = (p["name"].as_str().unwrap().to_string(), p["version"].as_str().unwrap().to_string());
            (key, manifest.parent().unwrap().to_path_buf())
        })
        .collect()
}

#[test]
fn every_default_an_inner_backend_overrides_is_hybrids_own() {
    let packages = package_dirs();
    let dir = |name: &str| {
        packages
            .get(&(name.to_string(), "0.21.0".to_string()))
            .unwrap_or_else(|| panic!("{name} 0.21.0 is not among the packages cargo resolved"))
            .clone()
    };
    let backend = dir("burn-backend");
    let flex = dir("burn-flex").join("src");
    let cubecl = dir("burn-cubecl").join("src");
    let hybrid = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ops");
    let left: BTreeMap<&str, &str> = LEFT_TO_BURN.into_iter().collect();
    let mut missing = Vec::new();
    let mut counted = BTreeMap::new();
    for (trait_name, file) in TRAITS {
        let code = code_only(&std::fs::read_to_string(backend.join(file)).unwrap());
        let methods = trait_methods(&code, trait_name);
        assert!(methods.len() > 0, "{trait_name}: no methods read");
        let defaults: Vec<String> = methods.iter().filter(|(_, d)| *d).map(|(n, _)| n.clone()).collect();
        let by_flex = impl_methods(&flex, trait_name, |ty| ty.starts_with("Flex"));
        let by_cubecl = impl_methods(&cubecl, trait_name, |ty| ty.starts_with("CubeBackend"));
        let by_hybrid = impl_methods(&hybrid, trait_name, |ty| ty.starts_with("Hybrid"));
        // The reader finds what it must: every required method in each implementation.
        for (name, default) in &methods {
            if !default {
                assert!(by_hybrid.contains(name), "{trait_name}::{name} is required, yet not read in Hybrid's sources");
                assert!(by_flex.contains(name), "{trait_name}::{name} is required, yet not read in Flex's sources");
            }
        }
        let mut overridden = 0;
        for name in &defaults {
            let inner = [("Flex", by_flex.contains(name)), ("CubeCL", by_cubecl.contains(name))];
            let theirs: Vec<&str> = inner.iter().filter(|(_, has)| *has).map(|(b, _)| *b).collect();
            if theirs.is_empty() {
                continue;
            }
            overridden += 1;
            if !by_hybrid.contains(name) && !left.contains_key(name.as_str()) {
                missing.push(format!("{trait_name}::{name} (implemented by {})", theirs.join(" and ")));
            }
        }
        counted.insert(trait_name, (methods.len(), defaults.len(), overridden));
    }
    assert!(missing.is_empty(), "Burn's default runs on Hybrid where the inner backend has its own op: {missing:#?}");
    // What was checked: Burn 0.21's traits as read on 2026-12-07.
    let float = counted["FloatTensorOps"];
    assert!(float.0 >= 120 && float.1 >= 40 && float.2 >= 40, "FloatTensorOps: {float:?}");
}

#[test]
fn the_reader_skips_comments_strings_and_characters_and_finds_defaults() {
    let src = r#"
        pub trait Ops<B> {
            /// fn not_a_method() { }
            fn required(x: u8) -> u8;
            fn with_default(s: &str) -> usize { let _ = "fn in_a_string() {"; let _ = '{'; let _ = '\''; s.len() }
            fn generic<T: Into<[u8; 2]>>(t: T) -> u8 where T: Clone;
        }
        impl<B: Backend> Ops<Self> for Hybrid<B> {
            fn required(x: u8) -> u8 { x }
            unary_ops!(FloatKind; with_default, other_one);
            binary_ops!(FloatKind; float_add: Linearity::Additive, float_sub: Linearity::Additive);
        }
        impl Ops<Flex> for Flex { fn with_default(s: &str) -> usize { 0 } }
    "#;
    let code = code_only(src);
    assert!(!code.contains("not_a_method") && !code.contains("in_a_string"));
    assert_eq!(
        trait_methods(&code, "Ops"),
        vec![("required".to_string(), false), ("with_default".to_string(), true), ("generic".to_string(), false)]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ops.rs"), src).unwrap();
    let hybrid = impl_methods(dir.path(), "Ops", |t| t.starts_with("Hybrid"));
    let names: Vec<&str> = hybrid.iter().map(String::as_str).collect();
    assert_eq!(names, ["float_add", "float_sub", "other_one", "required", "with_default"]);
    let flex = impl_methods(dir.path(), "Ops", |t| t.starts_with("Flex"));
    assert_eq!(flex.into_iter().collect::<Vec<_>>(), ["with_default"]);
}
