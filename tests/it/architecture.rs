//! ARCHITECTURE.md names every file of every crate, and names no file that is gone.
//!
//! The map's convention (its "Reading the tables"): under a `## {crate}` heading, a
//! path in backticks that starts with `src/`, `tests/`, `benches/` or `examples/` is
//! relative to `crates/{crate}/` (under `## agenteventprotocol-sdk`, to the root);
//! `{a,b}` stands for each name in turn, and a path ending in `/` names every file
//! under it. Every file under those four directories of every crate, and of the root,
//! must be named.
//!
//! When this fails, add a row (or a name to a row) for each file listed, saying what
//! it owns; for a name that is no file, mend or drop the row.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// The directories of a crate (and of the root) whose every file the map names.
const MAPPED: &[&str] = &["src", "tests", "benches", "examples"];

/// The heading of the facade's section, whose paths are relative to the root.
const FACADE: &str = "agenteventprotocol-sdk";

/// Every file under `dir`, as `/`-separated paths relative to `root`.
fn files_under(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return; // a crate without benches or examples
    };
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            files_under(root, &path, out);
        } else {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let parts: Vec<_> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(parts.join("/"));
        }
    }
}

/// `a/{b,c}.rs` as `a/b.rs` and `a/c.rs`; several groups multiply.
fn expand(pattern: &str) -> Vec<String> {
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_owned()];
    };
    let Some(close) = pattern[open..].find('}').map(|i| open + i) else {
        return vec![pattern.to_owned()];
    };
    let (head, rest) = (&pattern[..open], &pattern[close + 1..]);
    pattern[open + 1..close]
        .split(',')
        .flat_map(|name| expand(&format!("{head}{name}{rest}")))
        .collect()
}

/// What the map names: files, and directories (ending in `/`) whose files it names
/// whole, each relative to the root.
fn named(map: &str, crates: &BTreeSet<String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut base: Option<String> = None;
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            let word = heading
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_end_matches(':');
            base = if word == FACADE {
                Some(String::new())
            } else if crates.contains(word) {
                Some(format!("crates/{word}/"))
            } else {
                None
            };
            continue;
        }
        let Some(base) = &base else { continue };
        for (i, span) in line.split('`').enumerate() {
            let in_backticks = i % 2 == 1;
            if in_backticks && MAPPED.iter().any(|d| span.starts_with(&format!("{d}/"))) {
                names.extend(expand(span).into_iter().map(|p| format!("{base}{p}")));
            }
        }
    }
    names
}

#[test]
fn the_map_names_every_file_and_no_file_that_is_gone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = fs::read_to_string(root.join("ARCHITECTURE.md"))
        .unwrap_or_else(|e| panic!("reading ARCHITECTURE.md: {e}"));
    let crates: BTreeSet<String> = fs::read_dir(root.join("crates"))
        .unwrap_or_else(|e| panic!("listing crates/: {e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let mut files = Vec::new();
    for dir in MAPPED {
        files_under(root, &root.join(dir), &mut files);
        for krate in &crates {
            files_under(root, &root.join("crates").join(krate).join(dir), &mut files);
        }
    }
    assert!(
        files.len() > 400,
        "found only {} files under {}: is this the workspace root?",
        files.len(),
        root.display()
    );
    let names = named(&map, &crates);
    let dirs: Vec<&String> = names.iter().filter(|n| n.ends_with('/')).collect();
    let unnamed: Vec<&String> = files
        .iter()
        .filter(|f| !names.contains(*f) && !dirs.iter().any(|d| f.starts_with(d.as_str())))
        .collect();
    let gone: Vec<&String> = names
        .iter()
        .filter(|n| !root.join(n.as_str()).exists())
        .collect();
    assert!(
        unnamed.is_empty() && gone.is_empty(),
        "ARCHITECTURE.md is out of date.\nfiles it does not name (add each to the row of \
         its module, or a row of its own):\n{}\nnames of no file (mend or drop the row):\n{}",
        unnamed
            .iter()
            .map(|f| format!("  {f}"))
            .collect::<Vec<_>>()
            .join("\n"),
        gone.iter()
            .map(|f| format!("  {f}"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
}

#[test]
fn braces_expand_and_paths_are_read_per_section() {
    assert_eq!(expand("src/a.rs"), ["src/a.rs"]);
    assert_eq!(expand("src/{a,b}.rs"), ["src/a.rs", "src/b.rs"]);
    assert_eq!(
        expand("src/{a,b}/{c,d}.rs"),
        ["src/a/c.rs", "src/a/d.rs", "src/b/c.rs", "src/b/d.rs"]
    );
    let crates = BTreeSet::from(["aep-core".to_owned()]);
    let map = "## aep-core: x\n| `src/{a,b}.rs`, `Event` | `tests/data/` |\n\
               ## Other\n`src/c.rs`\n## agenteventprotocol-sdk: y\n`examples/e.rs`\n";
    let names: Vec<String> = named(map, &crates).into_iter().collect();
    assert_eq!(
        names,
        [
            "crates/aep-core/src/a.rs",
            "crates/aep-core/src/b.rs",
            "crates/aep-core/tests/data/",
            "examples/e.rs"
        ]
    );
}
