//! The committed generated files are exactly what the generator writes today.

use std::path::PathBuf;

#[test]
fn committed_files_are_fresh() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = aep_codegen::generate(&root).expect("generation succeeds");
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
    let a = aep_codegen::generate(&root).expect("generation succeeds");
    let b = aep_codegen::generate(&root).expect("generation succeeds");
    assert_eq!(a, b);
}

#[test]
fn every_registered_type_gets_a_payload_type() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = aep_codegen::generate(&root).expect("generation succeeds");
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
