//! The corpus this crate was built with, inside the binary (feature `embedded`), for a
//! runner installed with no repository beside it (`aep conformance`).
//!
//! The corpus is the fixture root of the repository (`fixtures/`: `conformance/`,
//! `schemas/`, `projection/`, byte-identical to the protocol's), about 0.7 MB; the
//! runner reads files, so [`write_to`] lays it out in a directory first.

use std::path::Path;

use include_dir::{include_dir, Dir};

static CORPUS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/corpus");

/// Writes the embedded corpus under `dir` (created if missing) as a fixture root to
/// hand to [`Runner::new`](crate::Runner::new).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("aep-embedded-doc-{}", std::process::id()));
/// aep_conformance::embedded::write_to(&dir)?;
/// let checks = aep_conformance::Runner::new(&dir).class("golden").unwrap().run();
/// assert!(checks.iter().all(|c| c.pass));
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_to(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    CORPUS.extract(dir)
}

/// How many files the embedded corpus holds.
///
/// ```
/// assert!(aep_conformance::embedded::files() > 50);
/// ```
pub fn files() -> usize {
    fn count(d: &Dir<'_>) -> usize {
        d.files().count() + d.dirs().map(count).sum::<usize>()
    }
    count(&CORPUS)
}
