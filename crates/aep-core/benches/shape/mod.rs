//! The benchmark stream shared by the projection and dedupe benches: 100,000 events in
//! 1,000 sessions (10 emitters of 100 sessions each, 100 events per session), with the
//! payload sizes of the golden corpus, interleaved across sessions as a relay delivers
//! them.

use aep_core::Event;

pub const SESSIONS: usize = 1_000;
pub const PER_SESSION: usize = 100;

fn kind_of(i: usize) -> (&'static str, &'static str) {
    match i {
        0 => ("session.started", r#"{"client":{"name":"bench"}}"#),
        99 => ("session.ended", r#"{"reason":"normal","runs":3}"#),
        _ => match i % 11 {
            1 => ("run.started", r#"{"trigger":"user"}"#),
            0 | 2 | 4 | 6 => ("tool.requested", r#"{"tool":{"name":"read_file"}}"#),
            3 | 5 | 7 => (
                "tool.completed",
                r#"{"tool":{"name":"read_file"},"duration_ms":42}"#,
            ),
            8 => (
                "attention.requested",
                r#"{"kind":"permission","prompt":"Allow read_file?","options":[{"id":"allow","label":"Allow"},{"id":"deny","label":"Deny"}]}"#,
            ),
            9 => (
                "attention.resolved",
                r#"{"resolution":"answered","latency_ms":2000}"#,
            ),
            _ => ("run.finished", r#"{"duration_ms":6000}"#),
        },
    }
}

/// The events, interleaved: event `i` of every session, then event `i + 1`.
pub fn events() -> Vec<Event> {
    let mut out = Vec::with_capacity(SESSIONS * PER_SESSION);
    for i in 0..PER_SESSION {
        for s in 0..SESSIONS {
            let (ty, data) = kind_of(i);
            let run = i / 11;
            let line = format!(
                r#"{{"aep":"0.1","id":"01J{s:05}{i:03}ABCDEFGHJKMNPQRS","type":"{ty}","time":"2026-07-22T06:{m:02}:{sec:02}.000Z","source":"aep://bench/adapter-{src}","agent":"agent-{src}","session":"01JSESSION{s:05}","run":"r{run}","subject":"01J{s:05}{prev:03}ABCDEFGHJKMNPQRS","seq":{i},"data":{data}}}"#,
                m = i / 60,
                sec = i % 60,
                src = s % 10,
                prev = i.saturating_sub(1),
            );
            out.push(line.parse().expect("bench event"));
        }
    }
    out
}

/// Time this thread spent on a CPU (Linux `/proc/thread-self/schedstat`), so a figure
/// is what one core does, not how long the run queue of a shared machine made the
/// wall clock wait. Elsewhere, or if the file is unreadable, it reads 0 and the
/// benches fall back to wall time (see [`criterion`]).
pub mod oncpu {
    use criterion::measurement::{Measurement, ValueFormatter};
    use criterion::Throughput;

    fn now_ns() -> u64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
            .unwrap_or(0)
    }

    /// Whether on-CPU time can be read here.
    pub fn available() -> bool {
        now_ns() > 0
    }

    /// Criterion measurement of on-CPU nanoseconds.
    #[derive(Debug)]
    pub struct OnCpu;

    struct Nanos;

    impl ValueFormatter for Nanos {
        fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
            let (div, unit) = match typical {
                t if t < 1e3 => (1.0, "ns"),
                t if t < 1e6 => (1e3, "µs"),
                t if t < 1e9 => (1e6, "ms"),
                _ => (1e9, "s"),
            };
            values.iter_mut().for_each(|v| *v /= div);
            unit
        }

        fn scale_throughputs(
            &self,
            _: f64,
            throughput: &Throughput,
            values: &mut [f64],
        ) -> &'static str {
            let n = match throughput {
                Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => {
                    *n as f64
                }
            };
            values.iter_mut().for_each(|v| *v = n * 1e3 / *v);
            "Melem/s (on-CPU)"
        }

        fn scale_for_machines(&self, _: &mut [f64]) -> &'static str {
            "ns"
        }
    }

    impl Measurement for OnCpu {
        type Intermediate = u64;
        type Value = u64;
        fn start(&self) -> u64 {
            now_ns()
        }
        fn end(&self, start: u64) -> u64 {
            now_ns().saturating_sub(start)
        }
        fn add(&self, a: &u64, b: &u64) -> u64 {
            a + b
        }
        fn zero(&self) -> u64 {
            0
        }
        fn to_f64(&self, v: &u64) -> f64 {
            *v as f64
        }
        fn formatter(&self) -> &dyn ValueFormatter {
            &Nanos
        }
    }
}

/// The `main` of a bench that runs twice: `wall` measured in wall time, `oncpu` in this
/// thread's time on a CPU ([`oncpu::OnCpu`]).
macro_rules! wall_and_oncpu_main {
    ($wall:path, $oncpu:path) => {
        criterion::criterion_group!(wall, $wall);
        criterion::criterion_group! {
            name = oncpu;
            config = criterion::Criterion::default().with_measurement($crate::shape::oncpu::OnCpu);
            targets = $oncpu
        }
        criterion::criterion_main!(wall, oncpu);
    };
}
pub(crate) use wall_and_oncpu_main;
