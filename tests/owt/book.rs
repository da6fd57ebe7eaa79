//! The documents a user reads stay true: the book's command-line reference is what `owt`
//! prints, every link and path they name is inside the repository, the book's table of
//! contents names every chapter, the README's commands are CI's, and every library crate
//! carries its licences.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    crate::repository()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_cli_reference_is_what_owt_prints() {
    let generated = owt::cli::reference::reference_markdown();
    let path = root().join("docs/src/reference/cli.md");
    if std::env::var_os("OWT_WRITE_REFERENCE").is_some() {
        std::fs::write(&path, &generated).expect("write docs/src/reference/cli.md");
    }
    let page = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        page == generated,
        "docs/src/reference/cli.md differs from the CLI's --help; rewrite it with OWT_WRITE_REFERENCE=1 cargo test --locked --test owt book"
    );
}

/// The files a reader is pointed at: text files of the repository outside build outputs and
/// the vendored sources, relative to the root.
fn documents_and_scripts() -> Vec<PathBuf> {
    fn walk(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read a folder").flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') && name != ".ci"
                || ["target", "vendor", "book", "runs", "gpu-run-out", "gpu-run-cache"].contains(&name.as_str())
            {
                continue;
            }
            let path = entry.path();
            let rel = rel.join(&name);
            if path.is_dir() {
                walk(&path, &rel, out);
            } else if ["md", "rs", "sh", "py", "toml", "json", "run"]
                .iter()
                .any(|ext| path.extension().is_some_and(|e| e == *ext) || name == *ext)
            {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), Path::new(""), &mut out);
    assert!(out.len() > 100, "found only {} files under {}", out.len(), root().display());
    out
}

/// `target` resolved against `from`'s folder, or None where it climbs out of the repository.
fn inside(from: &Path, target: &str) -> Option<PathBuf> {
    let mut path = from.parent().unwrap_or(Path::new("")).to_path_buf();
    for part in Path::new(target).components() {
        match part {
            Component::ParentDir => {
                if !path.pop() {
                    return None;
                }
            }
            Component::Normal(p) => path.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(path)
}

#[test]
fn every_path_the_documents_and_scripts_name_is_inside_the_repository() {
    let mut wrong = Vec::new();
    for file in documents_and_scripts() {
        let text = std::fs::read_to_string(root().join(&file)).unwrap_or_default();
        // A sibling of the clone (the project's shared folder) is not in a user's clone.
        for needle in ["../shared", "/work/"] {
            if text.contains(needle) && !file.ends_with("book.rs") {
                wrong.push(format!("{}: names {needle}", file.display()));
            }
        }
        if file.extension().is_some_and(|e| e == "md") {
            for link in markdown_links(&text) {
                let target = link.split('#').next().unwrap_or("");
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                match inside(&file, target) {
                    Some(path) if root().join(&path).exists() => {}
                    Some(path) => {
                        wrong.push(format!("{}: links {link}, and {} does not exist", file.display(), path.display()))
                    }
                    None => wrong.push(format!("{}: links {link}, outside the repository", file.display())),
                }
            }
        }
    }
    assert!(wrong.is_empty(), "paths that leave the repository or do not exist:\n{}", wrong.join("\n"));
}

/// The targets of `[text](target)` and `![alt](target)` links.
fn markdown_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) if !after[..end].contains(char::is_whitespace) => links.push(after[..end].to_string()),
            _ => {}
        }
        rest = after;
    }
    links
}

#[test]
fn the_books_contents_name_every_chapter_once() {
    let summary = read("docs/src/SUMMARY.md");
    let listed: Vec<String> = markdown_links(&summary);
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), listed.len(), "a chapter listed twice in SUMMARY.md");
    let mut chapters = BTreeSet::new();
    for file in documents_and_scripts() {
        if let Ok(rel) = file.strip_prefix("docs/src") {
            if rel.extension().is_some_and(|e| e == "md") && rel != Path::new("SUMMARY.md") {
                chapters.insert(rel.to_string_lossy().to_string());
            }
        }
    }
    let listed: BTreeSet<String> = listed.into_iter().collect();
    assert_eq!(listed, chapters, "SUMMARY.md's chapters against docs/src's pages");
}

#[test]
fn the_readme_is_a_front_page_whose_commands_ci_runs() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md is {lines} lines; the front page keeps to 200, the rest is the book's");
    let blocks: Vec<&str> =
        readme.split("```sh\n").skip(1).map(|b| b.split("```").next().unwrap_or("").trim()).collect();
    let test = blocks.iter().find(|b| b.starts_with("cargo test")).expect("the README's test command");
    let ci = read(".ci/run");
    assert!(ci.lines().any(|l| l.trim() == *test), "the README's test command `{test}` is not a line of .ci/run");
    let setup = blocks.iter().find(|b| b.contains("cargo run")).expect("the README's setup command");
    let packages = setup
        .split("apt-get install -y ")
        .nth(1)
        .and_then(|rest| rest.split("&&").next())
        .expect("the setup command installs its packages");
    for package in packages.split_whitespace() {
        assert!(ci.contains(package), "the setup command's package {package} is not installed by .ci/run");
    }
}

#[test]
fn every_crate_carries_its_licences() {
    for dir in [".", "backend", "models", "meta", "pixels"] {
        for licence in ["LICENSE-MIT", "LICENSE-APACHE"] {
            let text = read(&format!("{dir}/{licence}"));
            assert_eq!(text, read(licence), "{dir}/{licence} differs from the root's");
        }
    }
    assert!(read("LICENSE-APACHE").contains("Apache License") && read("LICENSE-MIT").contains("MIT License"));
}
