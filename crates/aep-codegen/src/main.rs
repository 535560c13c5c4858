//! `aep-codegen`: regenerates aep-core's payload types
//! (`crates/aep-core/src/payload/registered.rs`), capture annotations
//! (`crates/aep-core/src/schema/annotations.rs`) and registry facts
//! (`crates/aep-core/src/types/registry.rs`) from `fixtures/schemas`.
//!
//! Run from anywhere in the workspace: `cargo run -p aep-codegen` writes the files;
//! `cargo run -p aep-codegen -- --check` only reports whether they are stale.
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().skip(1).any(|a| a == "--check");
    // The workspace root is two levels above this crate's manifest.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = match aep_codegen::generate(&root) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("aep-codegen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stale = false;
    for file in files {
        let path = root.join(&file.path);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == file.contents {
            println!("up to date: {}", file.path.display());
            continue;
        }
        if check {
            eprintln!(
                "stale: {} (run `{}`)",
                file.path.display(),
                aep_codegen::RERUN
            );
            stale = true;
        } else if let Err(e) = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, &file.contents))
        {
            eprintln!("aep-codegen: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        } else {
            println!("wrote {}", file.path.display());
        }
    }
    if stale {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
