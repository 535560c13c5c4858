//! `aep` against relays that lie and inputs without end (issue 32): `tail` and `sink`
//! say on stderr what a hostile stream did and stay bounded; `emit` refuses an endless
//! line with its number; no message shows a secret pasted into `--url`.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{aep, dead_relay_url, finish, run, run_with, scratch, spawn, terminate, TOKEN};

/// A relay that answers discovery with 404 (a relay without the document) and
/// `GET /stream` with `stream(n, socket)` for the `n`th stream request; counts them.
fn hostile_relay(
    stream: impl Fn(usize, TcpStream) + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let streams = Arc::new(AtomicUsize::new(0));
    let counted = streams.clone();
    let stream = Arc::new(stream);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let (stream, counted) = (stream.clone(), counted.clone());
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                if head.starts_with(b"GET /stream") {
                    let n = counted.fetch_add(1, Ordering::SeqCst);
                    stream(n, conn);
                } else {
                    let _ = conn.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                }
            });
        }
    });
    (url, streams)
}

const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";

/// The peak resident set of a process, in KiB (Linux).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Waits until `child`'s stderr has said `needle`; returns what it said.
fn stderr_until(child: &mut std::process::Child, needle: &str) -> String {
    let mut err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut seen = String::new();
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            let _ = tx.send(seen.clone());
        }
    });
    let mut seen = String::new();
    while !seen.contains(needle) {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(s) => seen = s,
            Err(_) => panic!("{needle:?} not on stderr within 30 s; stderr:\n{seen}"),
        }
    }
    seen
}

/// One endless `data:` line: `tail` and `sink` drop the connection at the line bound,
/// say so, and come back on the backoff, without growing past it.
#[test]
fn an_endless_line_is_dropped_at_the_bound_by_tail_and_sink() {
    let (url, streams) = hostile_relay(|_, mut conn| {
        let _ = conn.write_all(SSE_HEAD);
        let _ = conn.write_all(b"data: ");
        let piece = vec![b'x'; 256 * 1024];
        while conn.write_all(&piece).is_ok() {}
    });
    let dir = scratch();
    for sub in ["tail", "sink"] {
        let before = streams.load(Ordering::SeqCst);
        let mut cmd = aep();
        cmd.args([sub, "--url", &url, "--token", TOKEN]);
        if sub == "sink" {
            cmd.arg("--out").arg(dir.path());
        } else {
            cmd.arg("--no-resume");
        }
        let mut child = spawn(cmd);
        let said = stderr_until(&mut child, "max_line");
        assert!(said.contains("16778240 bytes"), "{said}");
        common::eventually("a reconnect", Duration::from_secs(30), || {
            streams.load(Ordering::SeqCst) >= before + 2
        });
        if let Some(peak) = peak_rss_kib(child.id()) {
            // the bound (16 MiB) and the process itself: nowhere near the gigabytes an
            // unbounded reader reached
            assert!(peak < 256 * 1024, "{sub}: peak RSS {peak} KiB");
        }
        terminate(&child);
        let r = finish(child, b"", Duration::from_secs(20));
        assert_eq!(r.code(), 0, "{sub}: {}", r.stderr);
    }
}

/// A page that is not an SSE stream: `tail` says what it got and stops (exit 5) rather
/// than retrying in silence.
#[test]
fn a_page_that_is_not_an_sse_stream_is_said_and_is_exit_5() {
    let (url, _) = hostile_relay(|_, mut conn| {
        let _ = conn.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nhello",
        );
    });
    let r = run(&["tail", "--url", &url, "--no-resume"]);
    r.expect(5)
        .stderr_has("not an SSE stream")
        .stderr_has("`text/html`");
}

/// A stream cut in the middle of an event after the connection was made: a warning
/// each time, and the tail goes on.
#[test]
fn a_stream_cut_mid_event_is_a_warning_each_time() {
    let (url, streams) = hostile_relay(|_, mut conn| {
        let _ = conn.write_all(SSE_HEAD);
        let _ = conn.write_all(b": ping\n\nevent: progress.status\ndata: {\"aep\":");
    });
    let mut cmd = aep();
    cmd.args(["tail", "--url", &url, "--no-resume"]);
    let mut child = spawn(cmd);
    let said = stderr_until(&mut child, "middle of an event");
    assert!(said.contains("warning:"), "{said}");
    common::eventually("the tail retried", Duration::from_secs(30), || {
        streams.load(Ordering::SeqCst) >= 2
    });
    terminate(&child);
    finish(child, b"", Duration::from_secs(20)).expect(0);
}

#[test]
fn emit_refuses_an_endless_line_with_its_number() {
    let relay = common::relay();
    let dir = scratch();
    let path = dir.path().join("big.jsonl");
    let ok = common::line("e1", "tool.requested", "s", 0, serde_json::json!({}));
    let mut text = format!("{ok}\n");
    text.push_str(&"x".repeat(4096));
    std::fs::write(&path, text).unwrap();
    let r = run(&[
        "emit",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
        "--max-line",
        "1024",
        path.to_str().unwrap(),
    ]);
    r.expect(6)
        .stderr_has("big.jsonl:2: a line longer than 1024 bytes");
    // a line without end, from a device that never gives one
    if std::path::Path::new("/dev/zero").exists() {
        let r = run_with(
            &["emit", "--url", relay.url(), "--token", TOKEN, "/dev/zero"],
            b"",
            Duration::from_secs(60),
        );
        r.expect(6)
            .stderr_has("/dev/zero:1: a line longer than 16777216 bytes");
    }
}

/// A secret in the URL, as userinfo or a token parameter, shows in no message of
/// `tail`, `emit`, `roster`, `mcp` or `doctor`.
#[test]
fn a_secret_in_the_url_is_in_no_message() {
    let dead = dead_relay_url();
    let with_userinfo = dead.replace("http://", "http://ops:SECRET-1@");
    let with_query = format!("{dead}/?token=SECRET-2&access_token=SECRET-3");
    let dir = scratch();
    let file = dir.path().join("one.jsonl");
    let ok = common::line("e1", "tool.requested", "s", 0, serde_json::json!({}));
    std::fs::write(&file, format!("{ok}\n")).unwrap();
    for url in [&with_userinfo, &with_query] {
        let runs = [
            run(&["tail", "--url", url, "--no-resume"]),
            run(&["emit", "--url", url, file.to_str().unwrap()]),
            run(&["roster", "--url", url]),
            run(&["mcp", "--url", url]),
            run(&["doctor", url]),
            run(&["doctor", url, "--json"]),
        ];
        for r in &runs {
            assert_ne!(r.code(), 0, "{}", r.stderr);
            for secret in ["SECRET-1", "SECRET-2", "SECRET-3"] {
                r.stderr_lacks(secret);
                assert!(!r.stdout.contains(secret), "{}", r.stdout);
            }
        }
        runs[0].stderr_has("[REDACTED:secret]");
    }
}
