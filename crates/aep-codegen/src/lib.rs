//! `aep-codegen`: generates aep-core's payload types, capture annotations and registry
//! facts from the protocol's JSON Schema registry (`fixtures/schemas`).
//!
//! Three files come out, all committed and checked fresh by this crate's tests:
//!
//! - `crates/aep-core/src/payload/registered.rs`: one Rust type per registered type of
//!   `schemas/registry/types.json` (AEP-0002 §4), plus the [`Payload`]-style enum
//!   mapping a type name to its payload type;
//! - `crates/aep-core/src/schema/annotations.rs`: every field's `x-aep-capture`
//!   annotation (AEP-0002 §5.1) as a static tree, with the `[metadata*]` exception
//!   fields of AEP-0002 §5.3 marked, for the down-leveler of `aep_core::capture`;
//! - `crates/aep-core/src/types/registry.rs`: the categories of
//!   `schemas/registry/categories.json` (AEP-0002 §3) and every row of `types.json`
//!   (status, scope, schema, summary) as the statics `aep_core::types` re-exports.
//!
//! Each is a private submodule of a hand-written module of aep-core (`payload.rs`,
//! `schema.rs`, `types.rs`) that holds the module's docs and the types the generated
//! data is made of, and re-exports the generated items; the generator writes only what
//! the schemas decide.
//!
//! Output is deterministic: it depends on the schema files only (schema property order,
//! registry order), and it is passed through `rustfmt` with the workspace's
//! `rustfmt.toml` so the committed files are what `cargo fmt` would leave them as.
//!
//! ```no_run
//! let root = std::path::Path::new(".");
//! for file in aep_codegen::generate(root)? {
//!     std::fs::write(root.join(&file.path), &file.contents)?;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Payload`]: https://docs.rs/aep-sdk-core/latest/aep_core/payload/enum.Payload.html
#![warn(missing_docs)]

mod emit;
mod model;
mod registry;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The command that regenerates the committed files, quoted in their headers.
pub const RERUN: &str = "cargo run -p aep-codegen";

/// One generated file: where it goes (relative to the workspace root) and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the workspace root, e.g. `crates/aep-core/src/payload/registered.rs`.
    pub path: PathBuf,
    /// The formatted Rust source.
    pub contents: String,
}

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// A schema or registry file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// A schema or registry file is not JSON.
    #[error("{path} is not JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The schema uses a construct the generator does not model; extend the generator.
    #[error("{path}: {what}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What was found, and where.
        what: String,
    },
    /// `rustfmt` could not format the output (missing, or the output is not Rust).
    #[error("rustfmt failed: {0}; install it with `rustup component add rustfmt`")]
    Rustfmt(String),
}

/// Where the schema registry lives under the workspace root.
pub const SCHEMAS_DIR: &str = "fixtures/schemas";
/// Where the payload types go.
pub const PAYLOAD_RS: &str = "crates/aep-core/src/payload/registered.rs";
/// Where the capture annotations go.
pub const SCHEMA_RS: &str = "crates/aep-core/src/schema/annotations.rs";
/// Where the registry facts go.
pub const REGISTRY_RS: &str = "crates/aep-core/src/types/registry.rs";

/// Generates `payload/registered.rs`, `schema/annotations.rs` and `types/registry.rs` (in
/// that order) from the
/// schemas under `root/fixtures/schemas`.
///
/// ```no_run
/// let files = aep_codegen::generate(std::path::Path::new("."))?;
/// assert_eq!(files.len(), 3);
/// # Ok::<(), aep_codegen::CodegenError>(())
/// ```
pub fn generate(root: &Path) -> Result<Vec<GeneratedFile>, CodegenError> {
    let registry = model::load(&root.join(SCHEMAS_DIR))?;
    let payload = emit::payload_rs(&registry).map_err(|names| CodegenError::Unsupported {
        path: root.join(SCHEMAS_DIR),
        what: format!(
            "schema members map to clashing Rust names {names:?}; extend the naming rules of aep-codegen"
        ),
    })?;
    let schema = emit::schema_rs(&registry);
    let registry_facts = registry::registry_rs(&registry);
    let config = root.join("rustfmt.toml");
    Ok(vec![
        GeneratedFile {
            path: PAYLOAD_RS.into(),
            contents: rustfmt(&payload, &config)?,
        },
        GeneratedFile {
            path: SCHEMA_RS.into(),
            contents: rustfmt(&schema, &config)?,
        },
        GeneratedFile {
            path: REGISTRY_RS.into(),
            contents: rustfmt(&registry_facts, &config)?,
        },
    ])
}

fn rustfmt(source: &str, config: &Path) -> Result<String, CodegenError> {
    let mut cmd = Command::new(std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into()));
    cmd.args(["--edition", "2021", "--emit", "stdout", "--quiet"]);
    if config.is_file() {
        cmd.arg("--config-path").arg(config);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CodegenError::Rustfmt(e.to_string()))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| CodegenError::Rustfmt("no stdin".into()))?;
    // Write from a thread so a large output cannot deadlock against a full stdout pipe.
    let input = source.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| CodegenError::Rustfmt(e.to_string()))?;
    match writer.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(CodegenError::Rustfmt(e.to_string())),
        Err(_) => return Err(CodegenError::Rustfmt("stdin writer panicked".into())),
    }
    if !out.status.success() {
        return Err(CodegenError::Rustfmt(
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| CodegenError::Rustfmt(e.to_string()))
}
