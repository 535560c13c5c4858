//! WebSocket message decoding (AEP-0003 §2): the relay and every WS consumer run this on
//! each inbound message, so the event path must cost little beyond the envelope parse.

#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

const EVENT: &str = r#"{"aep":"0.1","id":"01JX9YB7ACK00000000000GOLD","type":"tool.completed","time":"2026-07-03T10:15:09.150Z","source":"aep://host-a/agent/claude-code/session/s_8f2c","agent":"claude-code","session":"s_8f2c","run":"r_0044","seq":5,"epoch":0,"cause":"01JX9YB6CMD00000000000GOLD","severity":"notice","capture":"metadata","data":{"tool":"Bash","status":"ok","duration_ms":1234,"exit_code":0}}"#;
const SUBSCRIBE: &str = r#"{"type":"subscribe","id":"sub-1","filter":{"type":["attention.*"],"severity":{"gte":"notice"}},"from":[{"session":"s_8f2c","epoch":3,"seq":187}],"capture":"metadata"}"#;
const PING: &str = r#"{"type":"ping","t":1764460800000}"#;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(1));
    g.bench_function("event via frame::decode", |b| {
        b.iter(|| aep_core::frame::decode(black_box(EVENT)))
    });
    g.bench_function("event via Event::from_str (baseline)", |b| {
        b.iter(|| black_box(EVENT).parse::<aep_core::Event>())
    });
    g.bench_function("subscribe frame", |b| {
        b.iter(|| aep_core::frame::decode(black_box(SUBSCRIBE)))
    });
    g.bench_function("ping frame", |b| {
        b.iter(|| aep_core::frame::decode(black_box(PING)))
    });
    g.finish();
    let ping = aep_core::frame::Frame::ping(1_764_460_800_000u64);
    c.bench_function("encode ping", |b| b.iter(|| black_box(&ping).to_json()));
}

criterion_group!(benches, bench);
criterion_main!(benches);
