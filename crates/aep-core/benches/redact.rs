//! Redacting a 4 KiB text with the default AEP-0003 §9.4 pipeline (PERFORMANCE.md, aep-core),
//! plus the clean, hostile and digest variants that bound it.
//!
//! `cargo bench -p aep-sdk-core --bench redact -- --warm-up-time 1 --measurement-time 3`

use aep_core::redact::{ContentDigest, RedactOptions, Redactor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const SIZE: usize = 4096;

/// Repeats `unit` up to exactly `SIZE` bytes (units are ASCII, so any cut is a boundary).
fn fill(unit: &str) -> String {
    unit.repeat(SIZE / unit.len() + 1)[..SIZE].to_owned()
}

/// Tool output with a secret, a credential assignment, a home path, an e-mail address and
/// a phone number in every 512 bytes, among ordinary prose, versions and timestamps.
fn mixed() -> String {
    let unit = "2026-07-03T10:15:04Z ran 42 tests in 3.1s with node 22.11.0; all green.\n\
                reading /home/alice/project/src/app.ts (1.2 KiB) and writing build/out.js\n\
                export API_KEY=sk_live_abcdef123456 && curl -H 'Authorization: Bearer abc123.DEF'\n\
                notify jane.doe@example.co.uk or call +1 (555) 123-4567 if it fails again\n\
                the quick brown fox jumps over the lazy dog while the build cache warms up\n\
                clone with ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345 then run the suite twice. \n\
                ";
    fill(unit)
}

fn clean() -> String {
    fill("The agent read the file, ran the tests and reported 42 passing cases in 3.1s. ")
}

/// Near-misses for every rule: unterminated PEM headers, digit runs that are not phones,
/// assignments without values, `@` without domains.
fn hostile() -> String {
    fill("-----BEGIN A----- 1 2 3 4 5 6 7 8 9 0 token= password: @@x. eyJ.eyJ. /home/ Bearer ")
}

fn bench(c: &mut Criterion) {
    let redactor =
        Redactor::new(RedactOptions::default().home("/home/op")).expect("builtin patterns");
    let mut group = c.benchmark_group("redact_text_4KiB");
    group.throughput(Throughput::Bytes(SIZE as u64));
    for (name, text) in [
        ("mixed", mixed()),
        ("clean", clean()),
        ("hostile", hostile()),
    ] {
        assert_eq!(text.len(), SIZE);
        group.bench_with_input(BenchmarkId::from_parameter(name), &text, |b, text| {
            b.iter(|| redactor.redact_text(std::hint::black_box(text)).len())
        });
    }
    group.finish();
    let text = mixed();
    c.bench_function("digest_text_4KiB", |b| {
        b.iter(|| ContentDigest::of_text(std::hint::black_box(&text)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
