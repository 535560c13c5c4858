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
            3 | 5 | 7 => ("tool.completed", r#"{"tool":{"name":"read_file"},"duration_ms":42}"#),
            8 => ("attention.requested", r#"{"kind":"permission","prompt":"Allow read_file?","options":[{"id":"allow","label":"Allow"},{"id":"deny","label":"Deny"}]}"#),
            9 => ("attention.resolved", r#"{"resolution":"answered","latency_ms":2000}"#),
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
