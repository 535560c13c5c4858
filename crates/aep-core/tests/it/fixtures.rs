//! The fixtures are byte-identical copies of the protocol's corpus, schemas and the
//! Python SDK's projection corpus (see NOTICE): this test holds the SHA-256 of every
//! file under `fixtures/`, so an accidental edit, addition or removal fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// `(path under fixtures/, SHA-256 hex)`, sorted by path. Update only when re-copying the
/// fixtures from `../shared` at a new `SPEC_VERSION`.
const CHECKSUMS: &[(&str, &str)] = &[
    (
        "conformance/attr-match/cases.json",
        "ac1a25a4b103a4498f71ef3cb8a02fdab6b49198161d94a7c9c4d90b9dd769a4",
    ),
    (
        "conformance/capture-gating/cases.json",
        "122264117a1faa88000d4f2a5ca8ea1e7d2be1dd6d52c406e157bbf833d19979",
    ),
    (
        "conformance/ce-roundtrip/ce-expected.jsonl",
        "1f90495f7a2b526f591bf6ca3b2dc79c60e1d811e2604fe02e1e8cfcfd4e3cfe",
    ),
    (
        "conformance/ce-roundtrip/inbound-cases.json",
        "c2110a91b368cf36cafcee0027b38f9cad811fa75f627eec2c7ee494db2dd1ba",
    ),
    (
        "conformance/downlevel/cases.json",
        "b48e89cc04fa8629fba00bcbf43b2dda75808cafe83fec4f34338cfe563c65ea",
    ),
    (
        "conformance/golden/golden.jsonl",
        "6042952b4611275c4714df41e5d01fddeb922ad9a4efe06ae7c2d7f24b00d3bb",
    ),
    (
        "conformance/invalid/cases.json",
        "3d8270ad978a42ab663eee541dbc6ea127c975bab2c4ceca1160028f38b5e68c",
    ),
    (
        "conformance/mappings/acp.json",
        "ba10b9ebf63a18051cb1456ed34f774f7763704ee33c33091f2bfd7a697715c6",
    ),
    (
        "conformance/mappings/agui.json",
        "c198d376afa9029617837962d4619d279329457e28db857a2bd2b95c24854fa1",
    ),
    (
        "conformance/mappings/antigravity.json",
        "057da6a64560eb604c362a9b95b5317655e4b17e00b53e044675f64fd992dd73",
    ),
    (
        "conformance/mappings/claude-code.json",
        "8077f55585b55323658c0e1515ebd353d4d5f60b7e5e6a0f574506da595ae3cc",
    ),
    (
        "conformance/mappings/cline.json",
        "b827b83dbc638714796d4d4dc88498f7798cba0a6b364d2a5faac40d3acd88e4",
    ),
    (
        "conformance/mappings/codex-otel.json",
        "18ada41bf85a3579c45a8b2a6f628e21badf13599f3681b16ea05dc1b63e1eed",
    ),
    (
        "conformance/mappings/codex.json",
        "e26e9b7fc3c7f6ef0066f89679aba68054d1fbabe607b9770810816782daddbb",
    ),
    (
        "conformance/mappings/gemini-cli.json",
        "2df842362e15165b317c4db3bab62e69782b15cb02b3d86529210718f4cb466b",
    ),
    (
        "conformance/mappings/hermes.json",
        "eea0d3efa593526278d150af0bc6edf440f14f77b90e11e3ce72c1e94ae3d0d7",
    ),
    (
        "conformance/mappings/kilocode.json",
        "c5c3cd9c75dcccf723d10aee562607428823563387e51e64becff347fe1c070e",
    ),
    (
        "conformance/mappings/kimi-code.json",
        "a74e1f4a8295ea4b3d82cb8f005515293ffca21b436500ba11eb1fd62e0d8819",
    ),
    (
        "conformance/mappings/opencode.json",
        "0709c829998897465e5fc1ab08bed0cf4b5da6fece68cc14ae066a4a9fc7ee3c",
    ),
    (
        "conformance/mappings/openhands.json",
        "33cf3644b478a54f1eb8f36d43824fae4275efed29741312d233ce18d2202281",
    ),
    (
        "conformance/mappings/pi.json",
        "52adb31debaa97cd30c2b324d425c2c9326fc608c45f49c59273e6daff685aea",
    ),
    (
        "conformance/mappings/qwen-code.json",
        "0fc15538536b6ac557ad11be039d85d0aa7aefeca6fe0abd48c53f2d2190e80a",
    ),
    (
        "conformance/mappings/vscode-otel.json",
        "5cab076adebda7e066922604af0e19d3981b492c61917bbade767d94ddeef58c",
    ),
    (
        "conformance/mappings/vscode.json",
        "2d8132c91cad125753ddbcaf24093e246b41c50f882c62d1ea8650d5cbc6b096",
    ),
    (
        "conformance/ocsf/ocsf-classes.json",
        "81098730dc2c818d6d5e0576b36bb22aeb09a61642b546d61c524bdc63a3dc88",
    ),
    (
        "conformance/ocsf/ocsf-expected.json",
        "38ba4099b18a94611231e126f76407ee3623478b3338d7bdbe6a5064ca4bb391",
    ),
    (
        "conformance/otlp/otlp-expected.json",
        "6c1e53d1d03228512e12781efd056b16fca6757ad2ed38dc994326e7c9da2eaa",
    ),
    (
        "conformance/redaction/cases.json",
        "f4dbfc46c1498f00a5d37c9d2fc85d091dc2d8c633dcb4359ed9543cbfbbc46f",
    ),
    (
        "projection/README.md",
        "d6f5fe598fa03650981f10470f97f20a7013ad7e9225953b904dfaa72f134b71",
    ),
    (
        "projection/events.jsonl",
        "4e6d136e88ba73f5e7e0d8fe711467005f2ada70852b26a1a977714bd851f57e",
    ),
    (
        "projection/expected.json",
        "2742dda7482cbb23f450befbda97cb4bfb66ef607e70f3e54d52ebc9e7bbcc16",
    ),
    (
        "schemas/aep-event.schema.json",
        "762668fdff05805606ae09b8631e8fd3631e1ad35749de30766b523bb2df2ac1",
    ),
    (
        "schemas/ci-check.sh",
        "92364d4808476aa6cf998bd4add7de41de62437394c809b6530a7de00d4bbc2e",
    ),
    (
        "schemas/registry/README.md",
        "63e472027faeedd59c4a4d55edafe635b9e84577c05cbf5985b035971fbecced",
    ),
    (
        "schemas/registry/capture.json",
        "d24ddcab3c3f5049474a0fcf2b6d27dea81db8406c5c15b7a1049a83dc9c2981",
    ),
    (
        "schemas/registry/categories.json",
        "d463e332b8ad5331b6aee14c86cc1820a880d9e613a949aeee47db5ffcfecd11",
    ),
    (
        "schemas/registry/nack-reasons.json",
        "88ad3c856e1b1c49b5a6815ae711a02512f955a97eb673c27d93b518423867f8",
    ),
    (
        "schemas/registry/severity.json",
        "f97d031e280cec7e7825d792dcb1a5fc72b088a02f63d071289bbe9942e17f7c",
    ),
    (
        "schemas/registry/types.json",
        "d9405d8b3147faa45523bc8563d9cd1813baa3a89eff001d0086ee19eb492270",
    ),
    (
        "schemas/types/agent.health.schema.json",
        "e2b405a811dc02532dd5043885f23b4ace1a08d357460503aed1a7835114340b",
    ),
    (
        "schemas/types/agent.heartbeat.schema.json",
        "932bf4534642b18d811f246a9de13feb431ecfa715e842d998589a62421a9f24",
    ),
    (
        "schemas/types/agent.idle.schema.json",
        "931bfea5712a57b16d5e68ea333ed762eb9351901bc12ca4755b050953980cb5",
    ),
    (
        "schemas/types/agent.presence.schema.json",
        "97b026ff117f1161f33a7ddf251c5694dfce0c0543a78057f8bc87005df9fa9c",
    ),
    (
        "schemas/types/assessment.evaluation.recorded.schema.json",
        "0dc33f9e6495a9ee5cac09f9ab3dafea94820871be4e16fcac463bde4e2923c4",
    ),
    (
        "schemas/types/assessment.feedback.received.schema.json",
        "6ee6690d420653cc6a9c9fab7ddfabae78b7beb0efb52deeaa299eff24f2ae09",
    ),
    (
        "schemas/types/assessment.guardrail.recorded.schema.json",
        "fb250ea8d745936079ffc6aba0d7f7979ee8f748d361e6ee30558a3c4ee67005",
    ),
    (
        "schemas/types/attention.answered.schema.json",
        "bf5fcde5ee15b1c6505f80461f53bd254de61ab6eff0394225c518072cf1a0b6",
    ),
    (
        "schemas/types/attention.requested.schema.json",
        "8c97301250df9793210062f056055918267b24a2520bbe2d26dd97f059beda94",
    ),
    (
        "schemas/types/attention.resolved.schema.json",
        "ce4be90b72e7bcbe4b3a64f34c82e29c30cc0f8030ab13066185069ca046fa4c",
    ),
    (
        "schemas/types/attention.routed.schema.json",
        "691e620da7c2461cc31b99f1f1a2a26bad2cd04752e9e7099d3405694aa4bedd",
    ),
    (
        "schemas/types/attention.timeout.schema.json",
        "96314d10f25fa74d26d19e19959074f9f698ce73020e25dade93b489b4fc4eb4",
    ),
    (
        "schemas/types/control.accepted.schema.json",
        "d9383caddb4b778fd81be6c376a1161864f64992adf5a280e38fca3b69d81c8c",
    ),
    (
        "schemas/types/control.attention.respond.schema.json",
        "35243843e62f1a43d9106b3b9031ca0b39e78766ceaf64e6fd635197889bda7c",
    ),
    (
        "schemas/types/control.cancel.schema.json",
        "154b62b9961990684bb9ea6944894cdc1c6709cbde924573b940a93e7fb0ee1c",
    ),
    (
        "schemas/types/control.pause.schema.json",
        "4e232f4c75a244204ccf27910335a12a49f6276f6b266efdead98b5ee84ca54e",
    ),
    (
        "schemas/types/control.rejected.schema.json",
        "32877cf67a75489187e29449df823cf383684daa719c28a3924ee0ddbe0d32a5",
    ),
    (
        "schemas/types/control.resume.schema.json",
        "9258ab7c05c685c8567667424d403f9f35077d8446ed92943b00385761698ab6",
    ),
    (
        "schemas/types/delegation.subagent.started.schema.json",
        "ef66fd7ca508c1a284bb54f6c07f3737e49f3a8cf0d466719f35726d2a48f8a4",
    ),
    (
        "schemas/types/delegation.subagent.stopped.schema.json",
        "134aedfe8056f52223aaaf66520fe52c16226b7d0a671f1214d0f5a66e087c70",
    ),
    (
        "schemas/types/error.raised.schema.json",
        "0fbb7bb5691f701643a131903e1df1f19b187e8085b7bbd313adadd2e51ea70f",
    ),
    (
        "schemas/types/progress.artifact.produced.schema.json",
        "eb5c21b7c2c4f2e6367dfac64fe6edaac4b99aab2288258e96f20abd1c69ecb4",
    ),
    (
        "schemas/types/progress.status.schema.json",
        "1562c7c6e54474dd00408b6badcd332baf64de8f15b410024d06262f815428cf",
    ),
    (
        "schemas/types/progress.task.completed.schema.json",
        "44b6740a9d92cdb288d13f2e42d76c8bc6ffabe9aa3d7d0cc11134dd71f9c46f",
    ),
    (
        "schemas/types/progress.task.planned.schema.json",
        "3f70e6a4a7d1b940edae43633cfdc332665e163358e1ce64a9f3434790052ea9",
    ),
    (
        "schemas/types/resource.citation.recorded.schema.json",
        "ee1f59a63dcdf1f19786f6b5227f9a75954a5a9b446a4dd9671b0397521e1479",
    ),
    (
        "schemas/types/resource.retrieval.requested.schema.json",
        "934e44cef0efea1e3a8f3d0eb9e62baf202de01edae8c0005f852fbc1dbc0098",
    ),
    (
        "schemas/types/resource.retrieval.reranked.schema.json",
        "316bfed35db2a64729cd9d0a065a8404222f7a6a6adddb9476b9534a15239f17",
    ),
    (
        "schemas/types/resource.retrieval.returned.schema.json",
        "af9ea5a1a38307f6438cece527b488a48cead9261fcab2708e8757ec97ad0fcf",
    ),
    (
        "schemas/types/run.cancelled.schema.json",
        "347e6e716f4eb2692ca4393e280cfc7ecd4d0fa808592ac32955ff5113acf99b",
    ),
    (
        "schemas/types/run.failed.schema.json",
        "0f61e6db012cf279b7747bd836cf52802dd402e775b76ab2d0bad1a3bf4fe82e",
    ),
    (
        "schemas/types/run.finished.schema.json",
        "1b9377557b96ce6cf0d361e68a6322af4c0cf26bc6b7ac2114bd27b9b9115193",
    ),
    (
        "schemas/types/run.started.schema.json",
        "a41476c4e641025ff233351a32393bf942fbbae25e942beb1c43fba4831a3129",
    ),
    (
        "schemas/types/run.step.finished.schema.json",
        "1a64d9a2a051dffeceecd8ef96b5eb1a5f7d8b98a5aa22c31b7746c3708eda32",
    ),
    (
        "schemas/types/run.step.started.schema.json",
        "3476ce08a72cb8d87fab9ffef2b1af02c433f5747dc5d4c33b1319cbc91fedcc",
    ),
    (
        "schemas/types/session.compacted.schema.json",
        "73938e9824d73a8d5600c48e7c06d4599da5155f002a4df0942ec9f9cc8e25d2",
    ),
    (
        "schemas/types/session.ended.schema.json",
        "75e27ce7aea698641461e395001645e0832101bd685d8be80d47ff4246d44a80",
    ),
    (
        "schemas/types/session.started.schema.json",
        "43b61b0bce0af64908a397a77c73bac0ef39d2fcd3c7e25d780848397af85937",
    ),
    (
        "schemas/types/state.delta.schema.json",
        "30292a5e11df10114200e79a6b55f379ba416c4351202f8742276a916241f859",
    ),
    (
        "schemas/types/state.snapshot.schema.json",
        "e39bf844fa20b8ac93f0bc621f2e3beaf009e013d1e1ccf085e05fd23f5d0ad6",
    ),
    (
        "schemas/types/tool.completed.schema.json",
        "bf0c9811eb335330f13b75f7a287e08e432efc6dc52c69d7a1539f8b3eb0bb76",
    ),
    (
        "schemas/types/tool.denied.schema.json",
        "ad55709c1caee93c1a4af6341b4d420670ece2320dc07eb3c19268a7e52bbda9",
    ),
    (
        "schemas/types/tool.failed.schema.json",
        "3a0252d481f6ecacfff48e696765f4639bd06f1fe58a44e173a83d9fc0825bb5",
    ),
    (
        "schemas/types/tool.requested.schema.json",
        "a38ff2b51fefc59ffbc578e2cb7d287d328b48d5c819585a98e545d223106f53",
    ),
];

fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            walk(&path, base, out);
        } else {
            let rel = path
                .strip_prefix(base)
                .expect("under fixtures/")
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.insert(rel, path);
        }
    }
}

#[test]
fn fixtures_are_byte_identical_copies() {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut found = BTreeMap::new();
    walk(&base, &base, &mut found);
    let mut problems = Vec::new();
    for (rel, want) in CHECKSUMS {
        match found.remove(*rel) {
            None => problems.push(format!("fixtures/{rel} is missing")),
            Some(path) => {
                let bytes = std::fs::read(&path).expect("readable fixture");
                let got = format!("{:x}", Sha256::digest(&bytes));
                if got != *want {
                    problems.push(format!(
                        "fixtures/{rel} changed (sha256 {got}, expected {want})"
                    ));
                }
            }
        }
    }
    for rel in found.keys() {
        problems.push(format!("fixtures/{rel} is not a known fixture"));
    }
    assert!(
        problems.is_empty(),
        "{}\n\nfixtures/ holds byte-identical copies of ../shared (spec/conformance/fixtures, \
         spec/schemas without codegen/ and gen/, reference/python-sdk/tests/fixtures/projection; \
         see NOTICE): restore the file with `git checkout -- fixtures/`, or re-copy it from \
         ../shared and update CHECKSUMS in this test when moving to a new SPEC_VERSION",
        problems.join("\n")
    );
}
