//! No crate of the workspace has an import circle: inside each crate, the modules'
//! imports run one way, so that each module can be read, and changed, knowing only what
//! it uses.
//!
//! What it checks: a module is a file (`lib.rs`/`main.rs` is the crate root; `foo.rs` or
//! `foo/mod.rs` is `foo`, and owns the folder `foo/`). Module A depends on module B when
//! a `use` item of A, or a `crate::`/`super::`/`self::` path written in its code, names
//! B or an item of B; a path that stops at a folder's owner and names an item it
//! re-exports (`pub use child::Item`) is followed to the file that defines the item. A
//! folder's owner declaring, re-exporting and calling the modules of its own folder is
//! how it owns the folder, not a dependency: the circles looked for are between modules
//! of which neither owns the other (siblings, cousins, or a module and its owner's
//! siblings). Comments, doc comments, string literals and the
//! unit tests after a column-0 `#[cfg(test)]` are not read. A circle is a set of two or
//! more modules that reach each other through these dependencies (a strongly connected
//! component); each is reported with the lines that close it.
//!
//! When this fails, break the circle so that the wiring runs one way: move the type both
//! sides need down to the module that owns it, or declare a small trait or struct beside
//! the lower module and have the upper one fill it in.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module: its path from the crate root (`[]` for the root itself).
type Module = Vec<String>;

/// One dependency: the module it goes to, and the line that makes it.
#[derive(Debug, Clone)]
struct Edge {
    to: Module,
    line: usize,
}

/// The module of one source file.
#[derive(Debug, Default)]
struct Source {
    file: PathBuf,
    /// Every path the module names, with its line; `reexport` for `pub use`.
    paths: Vec<(Vec<String>, usize, bool)>,
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The module a file of `src/` is, or `None` for a file outside the crate's tree.
fn module_of(src: &Path, file: &Path) -> Option<Module> {
    let relative = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None; // each binary is a crate root of its own, with its own tree
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    match stem {
        "lib" | "main" if parts.is_empty() => {}
        "mod" => {}
        _ => parts.push(stem.to_owned()),
    }
    Some(parts)
}

/// The code of a file without its comments and string literals (each replaced by
/// spaces, so lines keep their numbers), cut before its unit tests.
fn code_of(text: &str) -> String {
    let cut = text
        .lines()
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len() + 1;
            Some((start, line))
        })
        .find(|(_, line)| line.starts_with("#[cfg(test)]"))
        .map_or(text.len(), |(start, _)| start);
    let bytes = &text.as_bytes()[..cut];
    let mut out = String::with_capacity(cut);
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                out.push(' ');
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < bytes.len() {
                if bytes[i..].starts_with(b"/*") {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if bytes[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(if bytes[i] == b'\n' { '\n' } else { ' ' });
                    i += 1;
                }
            }
        } else if bytes[i] == b'"' {
            // A string (raw strings in this workspace hold no `"` they would end at).
            out.push(' ');
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                if bytes[i] == b'\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < bytes.len() {
                    out.push(if bytes[i] == b'\n' { '\n' } else { ' ' });
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if bytes[i] == b'\'' && bytes.get(i + 2) == Some(&b'\'') {
            out.push_str("   "); // a char literal such as '"'
            i += 3;
        } else if bytes[i] == b'\'' && bytes.get(i + 1) == Some(&b'\\') {
            // an escaped char literal such as '\''
            let end = bytes[i + 2..]
                .iter()
                .position(|&b| b == b'\'')
                .map_or(bytes.len(), |p| i + 3 + p);
            out.extend(std::iter::repeat_n(' ', end - i));
            i = end;
        } else {
            let len = utf8_len(bytes[i]);
            out.push_str(std::str::from_utf8(&bytes[i..i + len]).unwrap_or(" "));
            i += len;
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// `a::{b, c::{d, self}}` as `a::b`, `a::c::d` and `a::c`; `as` renames dropped.
fn expand_tree(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = split_path(&tree[..open]);
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_tree(&base, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_tree(&base, &inner[start..], out);
        return;
    }
    let tree = tree.split(" as ").next().unwrap_or("").trim();
    if tree.is_empty() {
        return;
    }
    let mut path = prefix.to_vec();
    for part in split_path(tree) {
        if part != "self" || path.is_empty() {
            path.push(part);
        }
    }
    out.push(path);
}

fn split_path(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every path the code names: each `use` item expanded, and each `crate::`, `super::`
/// or `self::` path written elsewhere.
fn paths_of(code: &str) -> Vec<(Vec<String>, usize, bool)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut in_use = Vec::new(); // byte ranges of `use` items
    let bytes = code.as_bytes();
    let word_at = |i: usize, word: &str| {
        code[i..].starts_with(word)
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
    };
    for (i, _) in code.match_indices("use ") {
        if !word_at(i, "use ") {
            continue;
        }
        let Some(end) = code[i..].find(';').map(|e| i + e) else {
            continue;
        };
        let before = code[..i].trim_end();
        let reexport = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let mut trees = Vec::new();
        expand_tree(&[], &code[i + 4..end], &mut trees);
        for path in trees {
            out.push((path, line_of(i), reexport));
        }
        in_use.push(i..end);
    }
    for root in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(root) {
            if !word_at(i, root) || in_use.iter().any(|r| r.contains(&i)) {
                continue;
            }
            let len = code[i..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - i);
            out.push((split_path(&code[i..i + len]), line_of(i), false));
        }
    }
    out
}

/// `path`, named in `from`, as a path from the crate root; `None` for another crate's.
fn absolute(from: &Module, path: &[String]) -> Option<Vec<String>> {
    let mut at: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super") | Some("self") => from.clone(),
        _ => return None,
    };
    let mut rest = path;
    if rest.first().is_some_and(|p| p == "crate") {
        rest = &rest[1..];
    }
    while let Some(first) = rest.first() {
        match first.as_str() {
            "super" => {
                at.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// The deepest module `path` goes through, and what follows it.
fn longest_module<'a>(
    modules: &BTreeMap<Module, Source>,
    path: &'a [String],
) -> (Module, &'a [String]) {
    (0..=path.len())
        .rev()
        .find(|&n| modules.contains_key(&path[..n]))
        .map_or((Vec::new(), path), |n| (path[..n].to_vec(), &path[n..]))
}

/// Where each module's `pub use` of its own folder takes a name: `(owner, name)` to the
/// module that defines it.
fn reexports(modules: &BTreeMap<Module, Source>) -> BTreeMap<(Module, String), Module> {
    let mut out = BTreeMap::new();
    for (module, source) in modules {
        for (path, _, reexport) in &source.paths {
            if !*reexport {
                continue;
            }
            let mut relative = vec!["self".to_owned()];
            relative.extend(path.iter().cloned());
            let absolute = if path
                .first()
                .is_some_and(|p| ["crate", "super", "self"].contains(&p.as_str()))
            {
                absolute(module, path)
            } else {
                absolute(module, &relative)
            };
            let Some(absolute) = absolute else { continue };
            let (target, rest) = longest_module(modules, &absolute);
            if target.len() > module.len() && target.starts_with(module) {
                if let Some(name) = path.last() {
                    if rest.len() == 1 {
                        out.insert((module.clone(), name.clone()), target);
                    }
                }
            }
        }
    }
    out
}

/// The dependencies of each module of one crate.
fn edges(modules: &BTreeMap<Module, Source>) -> BTreeMap<Module, Vec<Edge>> {
    let reexported = reexports(modules);
    let mut out: BTreeMap<Module, Vec<Edge>> = BTreeMap::new();
    for (module, source) in modules {
        for (path, line, _) in &source.paths {
            // Paths from another crate (or relative to the module itself: its own
            // folder, which it owns) are no dependency among the crate's modules.
            if absolute(module, path).is_none() {
                continue;
            }
            push_edge(modules, &reexported, module, path, *line, &mut out);
        }
    }
    out
}

fn push_edge(
    modules: &BTreeMap<Module, Source>,
    reexported: &BTreeMap<(Module, String), Module>,
    module: &Module,
    path: &[String],
    line: usize,
    out: &mut BTreeMap<Module, Vec<Edge>>,
) {
    let Some(absolute) = absolute(module, path) else {
        return;
    };
    let (mut target, mut rest) = longest_module(modules, &absolute);
    // Follow re-exports to the file that defines the item.
    while let Some(next) = rest
        .first()
        .and_then(|name| reexported.get(&(target.clone(), name.clone())))
    {
        target = next.clone();
        rest = &rest[1..];
        if rest.is_empty() {
            break;
        }
    }
    // The owner using its own folder is how it owns it.
    if !target.starts_with(module) {
        out.entry(module.clone())
            .or_default()
            .push(Edge { to: target, line });
    }
}

/// The strongly connected components of two or more modules (Tarjan).
fn circles(graph: &BTreeMap<Module, Vec<Edge>>, nodes: &[Module]) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Module, Vec<Edge>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        on_stack: BTreeSet<Module>,
        found: Vec<Vec<Module>>,
    }
    fn visit(w: &mut Walk<'_>, v: &Module) {
        let i = w.index.len();
        w.index.insert(v.clone(), i);
        w.low.insert(v.clone(), i);
        w.stack.push(v.clone());
        w.on_stack.insert(v.clone());
        let targets: Vec<Module> = w
            .graph
            .get(v)
            .map(|es| es.iter().map(|e| e.to.clone()).collect())
            .unwrap_or_default();
        for t in targets {
            if !w.index.contains_key(&t) {
                visit(w, &t);
                let low = w.low[v].min(w.low[&t]);
                w.low.insert(v.clone(), low);
            } else if w.on_stack.contains(&t) {
                let low = w.low[v].min(w.index[&t]);
                w.low.insert(v.clone(), low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(top) = w.stack.pop() {
                w.on_stack.remove(&top);
                let done = &top == v;
                component.push(top);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for n in nodes {
        if !w.index.contains_key(n) {
            visit(&mut w, n);
        }
    }
    w.found
}

/// Every import circle of the crate whose sources are under `src`, one line each.
fn circles_of(root: &Path, src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(src, &file) else {
            continue;
        };
        let text =
            fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let paths = paths_of(&code_of(&text));
        modules.insert(module, Source { file, paths });
    }
    let graph = edges(&modules);
    let nodes: Vec<Module> = modules.keys().cloned().collect();
    let shown = |m: &Module| {
        modules[m]
            .file
            .strip_prefix(root)
            .unwrap_or(&modules[m].file)
            .display()
            .to_string()
    };
    circles(&graph, &nodes)
        .into_iter()
        .map(|component| {
            let members: BTreeSet<&Module> = component.iter().collect();
            let mut lines = Vec::new();
            for m in &component {
                for e in graph.get(m).into_iter().flatten() {
                    if members.contains(&e.to) {
                        lines.push(format!("{}:{} -> {}", shown(m), e.line, shown(&e.to)));
                    }
                }
            }
            lines.sort();
            lines.dedup();
            format!(
                "circle among {} modules:\n    {}",
                component.len(),
                lines.join("\n    ")
            )
        })
        .collect()
}

#[test]
fn no_crate_has_an_import_circle() {
    // `AEP_IMPORT_ROOT` checks another checkout (e.g. an older commit's) the same way.
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = std::env::var_os("AEP_IMPORT_ROOT").map_or(here, PathBuf::from);
    let root = root.as_path();
    let mut crates = vec![root.join("src")];
    let mut members: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("listing crates/")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    members.sort();
    crates.extend(members);
    let found: Vec<String> = crates
        .iter()
        .flat_map(|src| circles_of(root, src))
        .collect();
    assert!(
        found.is_empty(),
        "{} import circle(s); break each so the wiring runs one way:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn a_circle_is_found_and_a_one_way_chain_is_not() {
    let dir = std::env::temp_dir().join(format!("aep-import-circles-{}", std::process::id()));
    let src = dir.join("src");
    fs::create_dir_all(src.join("a")).unwrap();
    fs::write(src.join("lib.rs"), "mod a;\npub use a::Thing;\n").unwrap();
    fs::write(src.join("a.rs"), "mod b;\nmod c;\npub use b::Thing;\n").unwrap();
    // b -> c through a `use` tree, c -> b through a path in code: one circle.
    fs::write(
        src.join("a/b.rs"),
        "use super::{c::{self, Other}};\npub struct Thing;\n// use crate::a::c; a comment\n",
    )
    .unwrap();
    fs::write(
        src.join("a/c.rs"),
        "pub struct Other;\nfn f() { let _ = super::Thing; let _ = \"super::b\"; }\n",
    )
    .unwrap();
    let found = circles_of(&dir, &src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("src/a/b.rs:1 -> src/a/c.rs"), "{found:?}");
    assert!(found[0].contains("src/a/c.rs:2 -> src/a/b.rs"), "{found:?}");

    // One way: c no longer names b.
    fs::write(src.join("a/c.rs"), "pub struct Other;\n").unwrap();
    assert_eq!(circles_of(&dir, &src), Vec::<String>::new());
    fs::remove_dir_all(&dir).unwrap();
}
