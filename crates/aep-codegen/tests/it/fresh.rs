//! The committed generated files are exactly what the generator writes today.
//!
//! The generator formats with `rustfmt`, which a minimal toolchain lacks: there these
//! tests skip, saying so, unless `AEP_REQUIRE_EXTERNAL=1` (as `.ci/run` sets) makes that
//! a failure.

use std::path::PathBuf;

use aep_test_support::external;

/// The generated files, or `None` (having said why) when `rustfmt` cannot run here.
fn generate_or_skip(root: &std::path::Path) -> Option<Vec<aep_codegen::GeneratedFile>> {
    let rustfmt = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    if external::skip_for(external::program_missing(rustfmt).as_deref()) {
        return None;
    }
    Some(aep_codegen::generate(root).expect("generation succeeds"))
}

#[test]
fn committed_files_are_fresh() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(files) = generate_or_skip(&root) else {
        return;
    };
    assert_eq!(files.len(), 3);
    for file in files {
        let committed = std::fs::read_to_string(root.join(&file.path)).unwrap_or_default();
        if committed != file.contents {
            let line = committed
                .lines()
                .zip(file.contents.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| committed.lines().count().min(file.contents.lines().count()));
            panic!(
                "{} is stale (first difference at line {}); regenerate with `{}` and commit the result",
                file.path.display(),
                line + 1,
                aep_codegen::RERUN
            );
        }
    }
}

#[test]
fn generation_is_deterministic() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(a) = generate_or_skip(&root) else {
        return;
    };
    let b = aep_codegen::generate(&root).expect("generation succeeds");
    assert_eq!(a, b);
}

#[test]
fn every_registered_type_gets_a_payload_type() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(files) = generate_or_skip(&root) else {
        return;
    };
    let payload = &files[0].contents;
    let registry: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("fixtures/schemas/registry/types.json"))
            .expect("registry"),
    )
    .expect("registry JSON");
    let types = registry["types"].as_array().expect("types");
    assert_eq!(types.len(), 46);
    for t in types {
        let name = t["type"].as_str().expect("type");
        assert!(
            payload.contains(&format!("const EVENT_TYPE: &'static str = \"{name}\";")),
            "no payload type for {name}"
        );
    }
}
