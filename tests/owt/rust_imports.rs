//! A reader of a crate's Rust sources that finds which file imports which: every `use` and
//! every `crate::`, `super::` or `self::` path outside comments and strings, resolved to the
//! file that defines what it names (through re-exports, a `#[macro_export]` macro to the file
//! that writes it). What the layer and circle tests in `layers.rs` stand on. A reader, not a
//! compiler: it sees every `cfg`, and paths that start with a child module's name; it does
//! not see glob re-exports or `#[path]` attributes, which no crate here uses.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// One import of one file: the file it reaches and the text that reaches it.
#[derive(Debug, Clone)]
pub struct Import {
    /// The file imported from, relative to the crate's `src`.
    pub to: String,
    /// The path as written, segments joined by `::` (`crate::mesh::MeshDevice`).
    pub text: String,
    /// Its line in the importing file.
    pub line: usize,
}

/// A crate's sources: each file (relative to `src`, `/`-separated) and its imports of other
/// files of the crate, the first of each per target file.
#[derive(Debug, Default)]
pub struct CrateImports {
    /// Per file, its imports of other files (one per file imported, the first met).
    pub files: BTreeMap<String, Vec<Import>>,
}

/// One path met in a file: segments as resolved against the crate root, the text, the line.
struct Met {
    path: Vec<String>,
    text: String,
    line: usize,
}

/// What one file says: the paths it names, and the names its top scope binds (by `use`) to a
/// path, which other files' paths through this module resolve by.
struct FileFacts {
    met: Vec<Met>,
    bindings: HashMap<String, Vec<String>>,
    macros: Vec<String>,
}

/// Reads the crate whose sources are under `src` (its `lib.rs` tree; a `main.rs` beside a
/// `lib.rs` is a program of its own and is left out).
pub fn read_crate(src: &Path) -> CrateImports {
    let mut paths = Vec::new();
    walk(src, src, &mut paths);
    let has_lib = paths.iter().any(|p| p == "lib.rs");
    paths.retain(|p| !(has_lib && p == "main.rs") && !p.starts_with("bin/"));
    let modules: HashMap<Vec<String>, String> = paths.iter().map(|p| (module_of(p), p.clone())).collect();
    let facts: HashMap<String, FileFacts> = paths
        .iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(src.join(p)).unwrap_or_else(|e| panic!("{}: {e}", src.join(p).display()));
            (p.clone(), facts_of(&text, &module_of(p), &modules))
        })
        .collect();
    let mut macros = HashMap::new();
    for (file, f) in &facts {
        for m in &f.macros {
            macros.insert(m.clone(), file.clone());
        }
    }
    let bindings: HashMap<Vec<String>, &HashMap<String, Vec<String>>> =
        facts.iter().map(|(file, f)| (module_of(file), &f.bindings)).collect();
    let mut out = CrateImports::default();
    for file in &paths {
        let mut seen = BTreeSet::new();
        let mut imports = Vec::new();
        for met in &facts[file].met {
            let Some(to) = file_of(&met.path, &modules, &bindings, &macros) else { continue };
            if &to != file && seen.insert(to.clone()) {
                imports.push(Import { to, text: met.text.clone(), line: met.line });
            }
        }
        out.files.insert(file.clone(), imports);
    }
    out
}

/// Every `.rs` file under `dir`, relative to `root`.
fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap();
            out.push(rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"));
        }
    }
}

/// The module a file is: `comm/along.rs` is `[comm, along]`, `comm/mod.rs` and `lib.rs` their
/// folder's.
pub fn module_of(file: &str) -> Vec<String> {
    let mut segs: Vec<String> = file.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(segs.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        segs.pop();
    }
    segs
}

/// The file that defines what `path` names: the deepest module file on it, followed through
/// the names that module binds by `use` (at most 16 steps: bindings may chain).
fn file_of(
    path: &[String],
    modules: &HashMap<Vec<String>, String>,
    bindings: &HashMap<Vec<String>, &HashMap<String, Vec<String>>>,
    macros: &HashMap<String, String>,
) -> Option<String> {
    let mut path = path.to_vec();
    for _ in 0..16 {
        let k = (0..=path.len()).rev().find(|&k| modules.contains_key(&path[..k]))?;
        if k == path.len() {
            return Some(modules[&path[..k]].clone());
        }
        let item = &path[k];
        if k == 0 {
            if let Some(file) = macros.get(item) {
                return Some(file.clone());
            }
        }
        match bindings.get(&path[..k]).and_then(|b| b.get(item)) {
            Some(target) if target[..] != path[..=k] => path = [target.clone(), path[k + 1..].to_vec()].concat(),
            _ => return Some(modules[&path[..k]].clone()),
        }
    }
    None
}

/// Blanks comments, string literals and char literals (keeping line breaks), so that what is
/// left is code.
pub fn code_of(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, s: &[char]| out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    let mut i = 0;
    while i < c.len() {
        let ident_before = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            let end = c[i..].iter().position(|&ch| ch == '\n').map_or(c.len(), |p| i + p);
            blank(&mut out, &c[i..end]);
            i = end;
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &c[i..j]);
            i = j;
        } else if !ident_before && (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) && {
            let s = if c[i] == 'b' { i + 2 } else { i + 1 };
            let hashes = c[s..].iter().take_while(|&&ch| ch == '#').count();
            c.get(s + hashes) == Some(&'"')
        } {
            let s = if c[i] == 'b' { i + 2 } else { i + 1 };
            let hashes = c[s..].iter().take_while(|&&ch| ch == '#').count();
            let mut j = s + hashes + 1;
            while j < c.len()
                && !(c[j] == '"' && c[j + 1..].iter().take(hashes).filter(|&&ch| ch == '#').count() == hashes)
            {
                j += 1;
            }
            let end = (j + 1 + hashes).min(c.len());
            blank(&mut out, &c[i..end]);
            i = end;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(c.len());
            blank(&mut out, &c[i..end]);
            i = end;
        } else if c[i] == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '\n', '\u{..}', '\''); a lifetime ('a) has no closing quote.
            let mut j = i + 1;
            if c[j] == '\\' {
                j += 2;
            }
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            let end = (j + 1).min(c.len());
            blank(&mut out, &c[i..end]);
            i = end;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The paths of one `use` tree (`a::{b, c::d as e, self}`): each as (segments, bound name).
pub fn use_tree(tree: &str) -> Vec<(Vec<String>, String)> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand(tree.trim(), &mut Vec::new(), &mut out);
    out
}

fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim().trim_start_matches("::");
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> =
            tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let n = prefix.len();
        prefix.extend(head);
        let (mut depth, mut start) = (0, 0);
        for (i, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], prefix, out);
        prefix.truncate(n);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut segs = prefix.clone();
    segs.extend(path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
    if segs.last().is_some_and(|s| s == "self") {
        segs.pop();
    }
    let name = alias.unwrap_or_else(|| segs.last().cloned().unwrap_or_default());
    out.push((segs, name));
}

/// `segs` as a path from the crate root, seen from module `scope`, or `None` for another
/// crate's path.
fn resolve(segs: &[String], scope: &[String], modules: &HashMap<Vec<String>, String>) -> Option<Vec<String>> {
    let first = segs.first()?;
    match first.as_str() {
        "crate" => Some(segs[1..].to_vec()),
        "super" | "self" => {
            let mut base = scope.to_vec();
            let mut rest = segs;
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            Some([base, rest.to_vec()].concat())
        }
        _ => {
            // A child module of this file's, or an item this scope names: only the first
            // is a file of the crate; anything else is another crate's or a local name.
            let child = [scope.to_vec(), vec![first.clone()]].concat();
            modules.contains_key(&child).then(|| [scope.to_vec(), segs.to_vec()].concat())
        }
    }
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// What file `src`, module `module`, names and binds.
fn facts_of(src: &str, module: &[String], modules: &HashMap<Vec<String>, String>) -> FileFacts {
    let code = code_of(src);
    let c: Vec<char> = code.chars().collect();
    let line_at = |i: usize| c[..i].iter().filter(|&&ch| ch == '\n').count() + 1;
    let mut facts = FileFacts { met: Vec::new(), bindings: HashMap::new(), macros: Vec::new() };
    // Inline modules open at a brace depth; the scope is the file's module plus them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let word_at = |i: usize| -> String { c[i..].iter().take_while(|&&ch| is_ident(ch)).collect() };
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let starts_word = is_ident(ch) && (i == 0 || !(is_ident(c[i - 1]) || c[i - 1] == ':'));
        if ch == '{' {
            if let Some(name) = pending_mod.take() {
                inline.push((name, depth));
            }
            depth += 1;
            i += 1;
        } else if ch == '}' {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            i += 1;
        } else if ch == ';' {
            pending_mod = None;
            i += 1;
        } else if starts_word {
            let word = word_at(i);
            let scope: Vec<String> = module.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
            match word.as_str() {
                "mod" => {
                    let j = i + 3 + c[i + 3..].iter().take_while(|ch| ch.is_whitespace()).count();
                    pending_mod = Some(word_at(j));
                    i = j;
                }
                "macro_rules" => {
                    let before: String = c[i.saturating_sub(200)..i].iter().collect();
                    let j = i + 12 + c[i + 12..].iter().take_while(|ch| ch.is_whitespace()).count();
                    if before.trim_end().ends_with("#[macro_export]") {
                        facts.macros.push(word_at(j));
                    }
                    i = j;
                }
                "use" => {
                    let end = c[i..].iter().position(|&ch| ch == ';').map_or(c.len(), |p| i + p);
                    let tree: String = c[i + 3..end].iter().collect();
                    for (segs, name) in use_tree(&tree) {
                        let text = segs.join("::");
                        if let Some(path) = resolve(&segs, &scope, modules) {
                            if inline.is_empty() && name != "*" && name != "_" {
                                facts.bindings.insert(name, path.clone());
                            }
                            facts.met.push(Met { path, text, line: line_at(i) });
                        }
                    }
                    i = end;
                }
                "crate" | "super" | "self" if c.get(i + word.len()) == Some(&':') => {
                    let mut j = i;
                    let mut segs = Vec::new();
                    loop {
                        let w = word_at(j);
                        if w.is_empty() {
                            break;
                        }
                        segs.push(w.clone());
                        j += w.len();
                        let k = j + c[j..].iter().take_while(|ch| ch.is_whitespace()).count();
                        if c.get(k) == Some(&':') && c.get(k + 1) == Some(&':') {
                            j = k + 2 + c[k + 2..].iter().take_while(|ch| ch.is_whitespace()).count();
                        } else {
                            break;
                        }
                    }
                    if let Some(path) = resolve(&segs, &scope, modules) {
                        facts.met.push(Met { path, text: segs.join("::"), line: line_at(i) });
                    }
                    i = j.max(i + 1);
                }
                _ => i += word.len(),
            }
        } else {
            i += 1;
        }
    }
    facts
}

/// The import circles among `graph`'s files: each strongly connected set of two or more files,
/// as one loop through it (`a.rs -> b.rs -> a.rs`, each step with the import that makes it).
pub fn circles(graph: &CrateImports) -> Vec<String> {
    let names: Vec<&String> = graph.files.keys().collect();
    let index: HashMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> =
        names.iter().map(|n| graph.files[*n].iter().filter_map(|imp| index.get(&imp.to).copied()).collect()).collect();
    let mut out = Vec::new();
    for set in strongly_connected(&edges) {
        if set.len() < 2 {
            continue;
        }
        let inside: BTreeSet<usize> = set.iter().copied().collect();
        // A loop: from the set's first file, a shortest way back to it inside the set.
        let start = *inside.iter().next().unwrap();
        let mut came_from: HashMap<usize, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut back = None;
        while let Some(v) = queue.pop_front() {
            for &w in &edges[v] {
                if w == start {
                    back = Some(v);
                    break;
                }
                if inside.contains(&w) && !came_from.contains_key(&w) {
                    came_from.insert(w, v);
                    queue.push_back(w);
                }
            }
            if back.is_some() {
                break;
            }
        }
        let mut chain = vec![start];
        let mut v = back.expect("a strongly connected set of two has a loop");
        while v != start {
            chain.push(v);
            v = came_from[&v];
        }
        chain[1..].reverse();
        chain.push(start);
        let steps: Vec<String> = chain
            .windows(2)
            .map(|w| {
                let imp = graph.files[names[w[0]]].iter().find(|i| &i.to == names[w[1]]).unwrap();
                format!("{} -> {} (line {}: {})", names[w[0]], names[w[1]], imp.line, imp.text)
            })
            .collect();
        out.push(steps.join(", "));
    }
    out
}

/// Tarjan's strongly connected components of a graph given as adjacency lists.
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.edges[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut set = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                set.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(set);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}
