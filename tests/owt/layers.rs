//! The workspace's import structure, read from its sources (`rust_imports`): owt-hybrid's
//! folders stand in the layers its README's map gives, each importing only from the layers
//! below it; and no crate has files that import each other in a circle.

use std::path::PathBuf;

use crate::rust_imports::{circles, code_of, read_crate, use_tree, CrateImports};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The layers of owt-hybrid's map (`backend/README.md`, between its `layers` markers), top
/// first: each row's folders (`ops/`) and root files (`backend.rs`), as written.
fn layers(readme: &str) -> Vec<Vec<String>> {
    let start = readme.find("<!-- layers -->").expect("backend/README.md has a <!-- layers --> marker");
    let end = readme.find("<!-- /layers -->").expect("backend/README.md has a <!-- /layers --> marker");
    readme[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|row| {
            let cell = row.split('|').nth(1).unwrap();
            cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
        })
        .collect()
}

/// The layer a file of owt-hybrid's `src` stands in: its folder (`ops/`) or itself (`backend.rs`).
fn unit_of(file: &str) -> String {
    match file.split_once('/') {
        Some((folder, _)) => format!("{folder}/"),
        None => file.to_string(),
    }
}

/// Every import in `graph` from a file to one in a layer above its own, in words; and every
/// file in no layer.
fn upward_imports(graph: &CrateImports, layers: &[Vec<String>]) -> Vec<String> {
    let height = |file: &str| {
        let unit = unit_of(file);
        layers.iter().position(|l| l.contains(&unit)).map(|top_down| layers.len() - top_down)
    };
    let mut found = Vec::new();
    for (file, imports) in &graph.files {
        let Some(mine) = height(file) else {
            found.push(format!("{file} is in no layer of the map ({} is not in it)", unit_of(file)));
            continue;
        };
        for imp in imports {
            let Some(theirs) = height(&imp.to) else { continue };
            if theirs > mine {
                found.push(format!(
                    "{file} (layer {}) imports {} (line {}) from {}, in layer {} above it",
                    unit_of(file),
                    imp.text,
                    imp.line,
                    imp.to,
                    unit_of(&imp.to)
                ));
            }
        }
    }
    found
}

#[test]
fn owt_hybrids_folders_import_only_from_the_layers_below_them() {
    let readme = std::fs::read_to_string(root().join("backend/README.md")).unwrap();
    let layers = layers(&readme);
    assert!(layers.len() >= 10, "the map lists {} layers: {layers:?}", layers.len());
    let graph = read_crate(&root().join("backend/src"));
    let mut units: Vec<String> = graph.files.keys().map(|f| unit_of(f)).collect();
    units.dedup();
    for listed in layers.iter().flatten() {
        assert!(units.contains(listed), "the map lists {listed}, which owt-hybrid's src does not have");
    }
    let upward = upward_imports(&graph, &layers);
    assert!(upward.is_empty(), "owt-hybrid's layers (backend/README.md's map) are broken:\n{}", upward.join("\n"));
}

/// The source folders of the workspace's crates (its `members`, each one's `src`).
fn workspace_sources() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest.lines().find(|l| l.trim_start().starts_with("members")).expect("a workspace members line");
    let list = &line[line.find('[').unwrap() + 1..line.rfind(']').unwrap()];
    list.split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root().join(m).join("src"))
        .collect()
}

#[test]
fn no_crate_of_the_workspace_has_files_that_import_each_other_in_a_circle() {
    let sources = workspace_sources();
    assert!(sources.len() >= 5, "{sources:?}");
    let mut found = Vec::new();
    for src in &sources {
        let graph = read_crate(src);
        assert!(graph.files.len() > 1, "{}: no sources read", src.display());
        for circle in circles(&graph) {
            found.push(format!("{}: {circle}", src.strip_prefix(root()).unwrap().display()));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// Writes `files` (path, text) under a fresh directory and reads them as a crate.
fn crate_of(files: &[(&str, &str)]) -> (tempfile::TempDir, CrateImports) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let graph = read_crate(dir.path());
    (dir, graph)
}

fn imports_of<'a>(graph: &'a CrateImports, file: &str) -> Vec<&'a str> {
    graph.files[file].iter().map(|i| i.to.as_str()).collect()
}

#[test]
fn the_reader_follows_re_exports_super_and_macros_and_skips_comments_and_strings() {
    let (_dir, graph) = crate_of(&[
        ("lib.rs", "mod low;\nmod high;\npub use low::keys::Key;\n"),
        ("low/mod.rs", "mod keys;\nmod counts;\npub use keys::Key;\npub(crate) use counts::{Count as Tally};\n"),
        ("low/keys.rs", "/// [`crate::high::Top`] in a doc\npub struct Key;\nconst S: &str = \"crate::high::Top\";\n"),
        ("low/counts.rs", "use super::Key;\npub struct Count(Key);\n#[macro_export]\nmacro_rules! said { () => {} }\n"),
        (
            "high/mod.rs",
            "pub struct Top;\nfn f() { let _ = crate::low::Tally; crate::said!(); }\nmod inner { use super::super::Key; }\n",
        ),
    ]);
    assert_eq!(imports_of(&graph, "low/keys.rs"), Vec::<&str>::new(), "a doc comment and a string import nothing");
    assert_eq!(imports_of(&graph, "low/counts.rs"), vec!["low/keys.rs"], "super::Key is keys.rs's, through mod.rs");
    let mut high = imports_of(&graph, "high/mod.rs");
    high.sort();
    assert_eq!(high, vec!["low/counts.rs", "low/keys.rs"], "an aliased re-export, a macro, an inline module's super");
    assert_eq!(imports_of(&graph, "low/mod.rs"), vec!["low/keys.rs", "low/counts.rs"]);
    assert!(circles(&graph).is_empty(), "{:?}", circles(&graph));
}

#[test]
fn a_circle_and_an_upward_import_are_found_and_named() {
    let (_dir, graph) = crate_of(&[
        ("lib.rs", "mod low;\nmod high;\n"),
        ("low/mod.rs", "mod a;\nmod b;\n"),
        ("low/a.rs", "use super::b::B;\npub struct A;\n"),
        ("low/b.rs", "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::low::a::A;\n}\n"),
        ("high/mod.rs", "pub struct Top;\n"),
    ]);
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("low/a.rs -> low/b.rs (line 1: super::b::B)"), "{}", found[0]);
    assert!(found[0].contains("low/b.rs -> low/a.rs (line 4: crate::low::a::A)"), "{}", found[0]);

    let (_dir, graph) = crate_of(&[
        ("lib.rs", "mod low;\nmod high;\n"),
        ("low/mod.rs", "use crate::high::Top;\n"),
        ("high/mod.rs", "pub struct Top;\n"),
    ]);
    let layers = vec![vec!["lib.rs".to_string()], vec!["high/".to_string()], vec!["low/".to_string()]];
    let found = upward_imports(&graph, &layers);
    assert_eq!(
        found,
        vec!["low/mod.rs (layer low/) imports crate::high::Top (line 1) from high/mod.rs, in layer high/ above it"]
    );
    let found = upward_imports(&graph, &layers[..2]);
    assert_eq!(found, vec!["low/mod.rs is in no layer of the map (low/ is not in it)"]);
}

#[test]
fn code_is_what_is_left_without_comments_strings_and_chars() {
    let src = "let a = 'x'; /* crate::a /* nested */ */ let s = r#\"crate::b \"# ; // crate::c\nfn f<'a>(x: &'a str) { crate::d }";
    let code = code_of(src);
    assert!(!code.contains("crate::a") && !code.contains("crate::b") && !code.contains("crate::c"), "{code}");
    assert!(code.contains("crate::d") && code.contains("fn f<'a>(x: &'a str)"), "{code}");
    assert_eq!(code.lines().count(), 2, "line breaks kept");
    assert_eq!(
        use_tree("crate::{a::{B, c as D}, e::self, f::*}"),
        vec![
            (vec!["crate".into(), "a".into(), "B".into()], "B".to_string()),
            (vec!["crate".into(), "a".into(), "c".into()], "D".to_string()),
            (vec!["crate".into(), "e".into()], "e".to_string()),
            (vec!["crate".into(), "f".into(), "*".into()], "*".to_string()),
        ]
    );
}
