//! Mission control's bench (issue 35), in a real headless Chromium. Each of `--runs`
//! runs measures, on relays of its own:
//!
//! - the state: `/console/api/state` on a relay holding 100,000 events over 1,000
//!   sessions, its first request (the fold of the store, then the answer);
//! - first full render: 100,000 events over 1,000 sessions in the relay, the page
//!   opened, until it lists every session; then the tab's memory: the JS heap
//!   (`performance.memory`, precise) and the resident memory of its renderer process;
//! - event-to-screen: `--latency` events POSTed one at a time (20 ms apart) to one
//!   session of that relay, each from just before its POST to its row changing in the
//!   page (a MutationObserver stamps the animation frame that draws it), beside the same
//!   events' arrival at an SSE reader of the SDK (`aep_async::subscribe`); p50 and p99;
//! - ingest: 300,000 events over 3,000 sessions posted in batches of 10,000, events/s,
//!   on a relay without a page, on one whose console state a client reads live (the
//!   fold's share of the cost), then on one with the console open and live.
//!
//! It prints each run, then the median and the spread (min..max) of each figure, and
//! the machine's load average before and after. `--screenshot PATH` first takes the
//! README's picture on a relay holding a small believable fleet: the sessions with a
//! timeline in the light theme above the inbox with its forms in the dark one.
//!
//! ```text
//! cargo run --release -p aep-relay --example console_bench -- [--runs 3] [--latency 300] [--screenshot docs/console.png]
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aep_relay::{Relay, RelayHandle};
use aep_test_support::browser::Browser;
use fantoccini::{Client, Locator};
use futures::StreamExt;
use serde_json::{json, Value};

const TOKEN: &str = "bench";

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

fn event(session: &str, seq: u64, ty: &str) -> String {
    json!({"aep": "0.1", "id": format!("{session}-{seq}"), "type": ty,
        "time": "2026-07-22T06:00:00.000Z", "source": "aep://bench/agent/a", "agent": "bench-agent",
        "session": session, "seq": seq, "data": {"phase": "working"}})
    .to_string()
}

async fn start_relay() -> RelayHandle {
    Relay::builder()
        .token(TOKEN)
        .console(true)
        .max_sessions(5_000)
        .start()
        .await
        .expect("relay")
}

async fn post(http: &reqwest::Client, relay: &RelayHandle, body: String) {
    let r = http
        .post(format!("{}/events", relay.url()))
        .header("aep-version", "0.1")
        .header("content-type", "application/x-ndjson")
        .bearer_auth(TOKEN)
        .body(body)
        .send()
        .await
        .expect("post");
    let status = r.status().as_u16();
    assert_eq!(status, 202, "{}", r.text().await.unwrap_or_default());
}

/// 100,000 events over 1,000 sessions (prefix `tag`), in batches of 10,000; events/s.
async fn load(http: &reqwest::Client, relay: &RelayHandle, tag: &str) -> f64 {
    let batches: Vec<String> = (0..10)
        .map(|chunk| {
            let mut body = String::new();
            for s in chunk * 100..(chunk + 1) * 100 {
                let session = format!("{tag}-{s:04}");
                for seq in 0..100 {
                    let ty = if seq == 0 {
                        "session.started"
                    } else {
                        "progress.status"
                    };
                    body.push_str(&event(&session, seq, ty));
                    body.push('\n');
                }
            }
            body
        })
        .collect();
    let t = Instant::now();
    for body in batches {
        post(http, relay, body).await;
    }
    100_000.0 / t.elapsed().as_secs_f64()
}

/// Ingest measured over three loads in a row (300,000 events over 3,000 sessions), so
/// one sample spans long enough for a busy machine's hiccups to even out; events/s.
async fn ingest(http: &reqwest::Client, relay: &RelayHandle, tag: &str) -> f64 {
    let t = Instant::now();
    for part in 0..3 {
        load(http, relay, &format!("{tag}-{part}")).await;
    }
    300_000.0 / t.elapsed().as_secs_f64()
}

fn pct(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let at = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(at).copied().unwrap_or(f64::NAN)
}

/// `median (min..max)` of `v`, each with `digits` decimals.
fn spread(v: &[f64], digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{:.digits$} ({:.digits$}..{:.digits$})",
        pct(v, 0.5),
        min,
        max
    )
}

fn uptime() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Waits until `css`'s text is `want`, polling; how long it took from `since`.
async fn wait_text(c: &Client, css: &str, want: &str, since: Instant) -> Duration {
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if e.text().await.is_ok_and(|t| t == want) {
                return since.elapsed();
            }
        }
        assert!(
            since.elapsed() < Duration::from_secs(180),
            "{css} never read {want}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn open_live(c: &Client, relay: &RelayHandle) {
    c.goto(&format!("{}/console#token={TOKEN}", relay.url()))
        .await
        .expect("goto");
    wait_text(c, "#status", "live", Instant::now()).await;
}

// ---- the tab's memory -------------------------------------------------------------

/// `(pid, parent pid)` of every process `/proc` shows.
fn processes() -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // the command name is in parentheses and may hold spaces: the fields follow it
        let rest = &stat[stat.rfind(')')? + 2..];
        let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
        Some((pid, ppid))
    })
    .collect()
}

/// The resident memory of the largest renderer process under `root` (the console's
/// tab), in MiB.
fn renderer_rss_mib(root: u32) -> f64 {
    let all = processes();
    let mut family = vec![root];
    let mut i = 0;
    while let Some(&p) = family.get(i) {
        family.extend(all.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    family
        .iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(15).any(|w| w == b"--type=renderer"))
        })
        .filter_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .fold(0.0, f64::max)
        / 1024.0
}

// ---- one run --------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Run {
    render_ms: f64,
    heap_mib: f64,
    rss_mib: f64,
    page_p50: f64,
    page_p99: f64,
    sse_p50: f64,
    sse_p99: f64,
    seen: (usize, usize),
    blank_rss_mib: f64,
    /// `/console/api/state` on a relay holding 100,000 events, its first request.
    state_ms: f64,
    ingest_closed: f64,
    ingest_open: f64,
    /// With the console's state running and read live by a client, no browser.
    ingest_api: f64,
    /// From the end of the ingest with the console open to the page listing it all.
    caught_up_ms: f64,
}

async fn run_once(http: &reqwest::Client, n: usize, latency: u64) -> Run {
    let mut out = Run::default();
    // the state alone: the first request folds what the relay holds, then answers
    let held = start_relay().await;
    load(http, &held, &format!("held{n}")).await;
    let t = Instant::now();
    let r = http
        .get(format!("{}/console/api/state", held.url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("state");
    assert_eq!(r.status().as_u16(), 200);
    let _ = r.bytes().await;
    out.state_ms = t.elapsed().as_secs_f64() * 1000.0;
    let _ = held.shutdown().await;
    // first full render, and the tab's memory then
    let relay = start_relay().await;
    load(http, &relay, &format!("load{n}")).await;
    let browser = Browser::start(1400, 900).await.expect("browser");
    let c = &browser.client;
    // what a tab weighs before it holds the console
    c.goto("about:blank").await.expect("blank");
    tokio::time::sleep(Duration::from_millis(300)).await;
    out.blank_rss_mib = renderer_rss_mib(browser.driver_pid());
    let t = Instant::now();
    c.goto(&format!("{}/console#token={TOKEN}", relay.url()))
        .await
        .expect("goto");
    out.render_ms = wait_text(c, "#count-sessions", "1000", t)
        .await
        .as_secs_f64()
        * 1000.0;
    // the frame after the list is drawn has settled
    tokio::time::sleep(Duration::from_millis(500)).await;
    out.heap_mib = c
        .execute(
            "return performance.memory ? performance.memory.usedJSHeapSize : null",
            vec![],
        )
        .await
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN)
        / 1048576.0;
    out.rss_mib = renderer_rss_mib(browser.driver_pid());

    // event-to-screen beside the SDK's SSE reader, on the same relay and page
    let session = format!("lat-{n}");
    post(
        http,
        &relay,
        format!("{}\n", event(&session, 0, "session.started")),
    )
    .await;
    c.execute(
        "const want = arguments[0]; window.__seen = {};
         const tb = document.querySelector('#sessions tbody');
         let shown = -1;
         new MutationObserver(() => {
           const t = performance.timeOrigin + performance.now();
           const tr = tb.querySelector('tr[data-session=\"' + want + '\"]');
           if (!tr) return;
           // an event is on screen once its row shows it or a later one: a frame
           // draws the latest state, however many events it took in
           const seq = Number(tr.dataset.pos.split(':')[1]);
           for (let s = shown + 1; s <= seq; s++) window.__seen['0:' + s] = t;
           shown = Math.max(shown, seq);
         }).observe(tb, {attributes: true, subtree: true, childList: true, attributeFilter: ['data-pos']});
         return true;",
        vec![json!(session)],
    )
    .await
    .expect("observer");
    let seen_sse: Arc<Mutex<HashMap<u64, f64>>> = Arc::default();
    let mut sub = aep_async::Client::new(relay.url()).token(TOKEN).subscribe(
        aep_async::SubscribeOptions::new()
            .filter(json!({ "session": session }))
            // seq 0 replayed says the reader is connected before the clock starts
            .from_all(),
    );
    let sink = seen_sse.clone();
    let reader = tokio::spawn(async move {
        while let Some(event) = sub.next().await {
            let at = now_ms();
            if let Some(seq) = event.seq() {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(seq, at);
            }
        }
    });
    // the reader holds seq 0 before the clock starts
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen_sse
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains_key(&0)
    {
        assert!(Instant::now() < deadline, "the SSE reader never connected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut posted = HashMap::new();
    for seq in 1..=latency {
        posted.insert(seq, now_ms());
        post(
            http,
            &relay,
            format!("{}\n", event(&session, seq, "progress.status")),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let seen = c
        .execute("return window.__seen", vec![])
        .await
        .expect("seen");
    let seen_sse = seen_sse
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let (mut page, mut sse) = (Vec::new(), Vec::new());
    for (seq, t0) in &posted {
        if let Some(t) = seen.get(format!("0:{seq}")).and_then(Value::as_f64) {
            page.push(t - t0);
        }
        if let Some(t) = seen_sse.get(seq) {
            sse.push(t - t0);
        }
    }
    reader.abort();
    (out.page_p50, out.page_p99) = (pct(&page, 0.5), pct(&page, 0.99));
    (out.sse_p50, out.sse_p99) = (pct(&sse, 0.5), pct(&sse, 0.99));
    out.seen = (page.len(), sse.len());
    let _ = relay.shutdown().await;

    // ingest: a relay nobody watches, one whose console's state a client reads live (the
    // fold's share), then one whose console is open and live in the browser
    let idle = start_relay().await;
    out.ingest_closed = ingest(http, &idle, &format!("idle{n}")).await;
    let _ = idle.shutdown().await;
    let read = start_relay().await;
    let mut stream = http
        .get(format!("{}/console/api/live", read.url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("live")
        .bytes_stream();
    // its first message: the state runs
    let _ = stream.next().await;
    let reader = tokio::spawn(async move { while let Some(Ok(_)) = stream.next().await {} });
    out.ingest_api = ingest(http, &read, &format!("api{n}")).await;
    reader.abort();
    let _ = read.shutdown().await;
    let watched = start_relay().await;
    open_live(c, &watched).await;
    out.ingest_open = ingest(http, &watched, &format!("open{n}")).await;
    // the page shows all of it before the next run starts
    out.caught_up_ms = wait_text(c, "#count-sessions", "3000", Instant::now())
        .await
        .as_secs_f64()
        * 1000.0;
    let _ = watched.shutdown().await;
    browser.close().await;
    out
}

// ---- the README's picture --------------------------------------------------------------

/// A small fleet as a person would see it: agents at work, one waiting on a permission,
/// one on a form, one failed, some done. Times are the last minutes before now.
fn fleet() -> Vec<Value> {
    let t0 = now_ms() - 14.0 * 60_000.0;
    let at = |min: f64| {
        let ms = (t0 + min * 60_000.0) as u64;
        let secs = ms / 1000;
        let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
        let days = secs / 86_400;
        // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let mo = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(mo <= 2);
        format!(
            "{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{:03}Z",
            ms % 1000
        )
    };
    let mut out = Vec::new();
    let mut session =
        |src: &str, agent: &str, name: &str, steps: Vec<(f64, &str, Value, Value)>| {
            for (seq, (min, ty, data, extra)) in steps.into_iter().enumerate() {
                let mut e = json!({"aep": "0.1", "id": format!("{name}-{seq}"), "type": ty,
                "time": at(min), "source": src, "agent": agent, "session": name,
                "seq": seq, "capture": "full", "data": data});
                if let Value::Object(extra) = extra {
                    for (k, v) in extra {
                        e[k] = v;
                    }
                }
                out.push(e);
            }
        };
    let run = |r: &str| json!({"run": r});
    let tool = |name: &str, call: &str| json!({"tool": {"name": name, "call_id": call}});
    session(
        "aep://ana-laptop/agent/claude-code",
        "claude-code",
        "deploy-billing-api",
        vec![
            (0.0, "session.started", json!({}), json!({})),
            (
                0.2,
                "run.started",
                json!({"trigger": "user", "prompt": "Ship billing-api 2.4 to prod-eu"}),
                run("r1"),
            ),
            (
                0.5,
                "tool.requested",
                tool("Bash", "t1"),
                json!({"run": "r1", "subject": "Bash"}),
            ),
            (
                1.3,
                "tool.completed",
                json!({"tool": {"name": "Bash", "call_id": "t1"}, "duration_ms": 47_800}),
                json!({"run": "r1", "subject": "Bash"}),
            ),
            (
                1.6,
                "tool.requested",
                tool("Edit", "t2"),
                json!({"run": "r1", "subject": "Edit"}),
            ),
            (
                1.7,
                "tool.completed",
                json!({"tool": {"name": "Edit", "call_id": "t2"}, "duration_ms": 2_100}),
                json!({"run": "r1", "subject": "Edit"}),
            ),
            (
                2.1,
                "progress.status",
                json!({"message": "terraform plan: 3 to change, 0 to destroy", "phase": "plan", "percent": 60}),
                run("r1"),
            ),
            (
                2.4,
                "tool.requested",
                tool("Bash", "t3"),
                json!({"run": "r1", "subject": "Bash"}),
            ),
            (
                2.5,
                "attention.requested",
                json!({"kind": "permission",
                "prompt": "Allow `terraform apply -auto-approve` in prod-eu? 3 resources change: the billing-api service, its autoscaler and a DNS record.",
                "options": [{"id": "allow", "label": "Allow once"}, {"id": "deny", "label": "Deny"}],
                "respond_via": ["control"]}),
                json!({"run": "r1", "subject": "Bash", "cause": "deploy-billing-api-7", "severity": "notice"}),
            ),
        ],
    );
    session(
        "aep://ci-runner-3/agent/codex",
        "codex",
        "release-2.4-notes",
        vec![
            (3.0, "session.started", json!({}), json!({})),
            (
                3.1,
                "run.started",
                json!({"trigger": "schedule"}),
                run("r1"),
            ),
            (4.0, "tool.requested", tool("Read", "c1"), run("r1")),
            (
                4.1,
                "tool.completed",
                json!({"tool": {"name": "Read", "call_id": "c1"}, "duration_ms": 300}),
                run("r1"),
            ),
            (
                6.2,
                "attention.requested",
                json!({"kind": "form",
                "prompt": "Confirm the release before I publish the notes",
                "fields": [
                    {"id": "version", "type": "string", "label": "Version", "required": true},
                    {"id": "channel", "type": "select", "label": "Channel", "required": true,
                     "choices": [{"id": "stable", "label": "Stable"}, {"id": "beta", "label": "Beta"}]},
                    {"id": "rollout", "type": "number", "label": "Rollout %", "min": 1, "max": 100},
                    {"id": "notify", "type": "boolean", "label": "Email customers"}
                ],
                "respond_via": ["control"]}),
                json!({"run": "r1", "severity": "notice"}),
            ),
        ],
    );
    session(
        "aep://ci-runner-1/agent/ci-fixer",
        "ci-fixer",
        "fix-flaky-checkout-test",
        vec![
            (5.0, "session.started", json!({}), json!({})),
            (5.1, "run.started", json!({"trigger": "webhook"}), run("r1")),
            (5.4, "tool.requested", tool("Bash", "f1"), run("r1")),
            (
                7.9,
                "tool.failed",
                json!({"tool": {"name": "Bash", "call_id": "f1"}, "error": {"type": "exit", "message": "cargo test: 1 failed"}, "duration_ms": 150_000}),
                json!({"run": "r1", "severity": "warning"}),
            ),
            (8.2, "tool.requested", tool("Edit", "f2"), run("r1")),
            (
                8.3,
                "tool.completed",
                json!({"tool": {"name": "Edit", "call_id": "f2"}, "duration_ms": 900}),
                run("r1"),
            ),
            (
                13.6,
                "progress.status",
                json!({"message": "re-running the suite 20 times", "phase": "verify", "percent": 45}),
                run("r1"),
            ),
        ],
    );
    session(
        "aep://ana-laptop/agent/claude-code",
        "claude-code",
        "refactor-auth-middleware",
        vec![
            (1.0, "session.started", json!({}), json!({})),
            (1.2, "run.started", json!({"trigger": "user"}), run("r1")),
            (
                9.0,
                "run.finished",
                json!({"duration_ms": 468_000, "summary": "moved token checks into one layer"}),
                run("r1"),
            ),
            (11.5, "run.started", json!({"trigger": "user"}), run("r2")),
            (13.9, "tool.requested", tool("Grep", "g1"), run("r2")),
        ],
    );
    session(
        "aep://support-1/agent/triage",
        "triage-bot",
        "triage-inbox-0722",
        vec![
            (0.5, "session.started", json!({}), json!({})),
            (
                0.6,
                "run.started",
                json!({"trigger": "schedule"}),
                run("r1"),
            ),
            (
                4.4,
                "run.finished",
                json!({"duration_ms": 228_000}),
                run("r1"),
            ),
            (
                4.5,
                "session.ended",
                json!({"reason": "normal", "runs": 1}),
                json!({}),
            ),
        ],
    );
    session(
        "aep://etl-2/agent/backfill",
        "etl-agent",
        "backfill-invoices-q2",
        vec![
            (2.0, "session.started", json!({}), json!({})),
            (2.1, "run.started", json!({"trigger": "api"}), run("r1")),
            (
                12.0,
                "error.raised",
                json!({"error": {"type": "timeout", "message": "warehouse query timed out"}, "fatal": true}),
                json!({"run": "r1", "severity": "error"}),
            ),
            (
                12.1,
                "run.failed",
                json!({"error": {"type": "timeout", "message": "warehouse query timed out"}}),
                run("r1"),
            ),
        ],
    );
    session(
        "aep://docs-1/agent/aider",
        "aider",
        "docs-link-sweep",
        vec![
            (6.0, "session.started", json!({}), json!({})),
            (6.1, "run.started", json!({"trigger": "user"}), run("r1")),
            (
                10.0,
                "run.finished",
                json!({"duration_ms": 234_000}),
                run("r1"),
            ),
        ],
    );
    out
}

/// The README's picture: the sessions with the permission request's timeline open in
/// the light theme, above the inbox with its forms in the dark one, one PNG.
async fn screenshot(http: &reqwest::Client, path: &str) {
    let relay = start_relay().await;
    // the two requests come from agents connected over WebSocket, so the roster and
    // each session's claim are the real ones; everything before them over HTTP
    let events = fleet();
    let asked = |e: &Value| e["type"] == "attention.requested";
    let body: String = events
        .iter()
        .filter(|e| !asked(e))
        .map(|e| format!("{e}\n"))
        .collect();
    post(http, &relay, body).await;
    let mut agents = Vec::new();
    for e in events.iter().filter(|e| asked(e)) {
        agents.push(agent_socket(&relay, e).await);
    }
    let (w, h) = (1280u32, 820u32);
    let browser = Browser::start(w, h).await.expect("browser");
    let c = &browser.client;
    // the theme is the origin's: set on a page of it first
    c.goto(&format!("{}/console/console.css", relay.url()))
        .await
        .expect("goto");
    c.execute(
        "localStorage.setItem('aep-theme', 'light'); return true",
        vec![],
    )
    .await
    .expect("theme");
    open_live(c, &relay).await;
    let row = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(
            r#"tr[data-session="deploy-billing-api"] button"#,
        ))
        .await
        .expect("the session's row");
    row.click().await.expect("open it");
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(r#"#timeline li[data-tool="t3"]"#))
        .await
        .expect("its timeline");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let light = c.screenshot().await.expect("screenshot");
    c.execute(
        "localStorage.setItem('aep-theme', 'dark'); document.documentElement.dataset.theme = 'dark';
         document.querySelector('#theme').textContent = 'Theme: dark';
         document.querySelector('.tab[data-view=inbox]').click(); return true",
        vec![],
    )
    .await
    .expect("dark inbox");
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(
            r#"#inbox li[data-session="release-2.4-notes"] input[data-field=version]"#,
        ))
        .await
        .expect("the form");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let dark = c.screenshot().await.expect("screenshot");
    // one picture: a page of the two, one above the other
    let dir = std::env::temp_dir().join(format!("console-shot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the picture's parts");
    std::fs::write(dir.join("light.png"), &light).expect("light");
    std::fs::write(dir.join("dark.png"), &dark).expect("dark");
    std::fs::write(
        dir.join("both.html"),
        "<!doctype html><body style=\"margin:0;background:#888\"><img src=\"light.png\" style=\"display:block\"><img src=\"dark.png\" style=\"display:block;margin-top:4px\"></body>",
    )
    .expect("page");
    // the window's height less the viewport's is the browser's own: the page gets both
    // pictures whole, nothing more
    let want = 2 * png_height(&light) + 4;
    c.set_window_size(w, want).await.expect("window");
    let inner = c
        .execute("return window.innerHeight", vec![])
        .await
        .ok()
        .and_then(|v| v.as_u64())
        .unwrap_or(u64::from(want)) as u32;
    c.set_window_size(w, want + want.saturating_sub(inner))
        .await
        .expect("window");
    c.goto(&format!("file://{}", dir.join("both.html").display()))
        .await
        .expect("the picture's page");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let both = c.screenshot().await.expect("screenshot");
    std::fs::write(path, both).expect("write the screenshot");
    let _ = std::fs::remove_dir_all(&dir);
    println!("screenshot: {path}");
    browser.close().await;
    drop(agents);
    let _ = relay.shutdown().await;
}

/// A PNG's height, from its IHDR chunk.
fn png_height(png: &[u8]) -> u32 {
    png.get(20..24)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// An agent connected to `relay` as an emitter (`hello` with its identity and the
/// commands it accepts) that sends `event`, claiming its session; held open until
/// dropped.
async fn agent_socket(
    relay: &RelayHandle,
    event: &Value,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let url = format!(
        "ws{}/socket?access_token={TOKEN}",
        relay.url().trim_start_matches("http")
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .expect("websocket");
    let instance = event["source"]
        .as_str()
        .and_then(|s| s.strip_prefix("aep://"))
        .and_then(|s| s.split('/').next())
        .unwrap_or("host");
    let hello = json!({"type": "hello", "versions": ["0.1"], "role": "emitter",
        "identity": {"agent": event["agent"], "instance": instance},
        "capabilities": {"control": {"accepts": ["control.attention.respond", "control.cancel", "control.pause"]}}});
    ws.send(Message::Text(hello.to_string().into()))
        .await
        .expect("hello");
    let _ = ws.next().await;
    ws.send(Message::Text(event.to_string().into()))
        .await
        .expect("the event");
    ws
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let runs: usize = arg("--runs").and_then(|v| v.parse().ok()).unwrap_or(3);
    let latency: u64 = arg("--latency").and_then(|v| v.parse().ok()).unwrap_or(300);
    if let Some(why) = Browser::missing() {
        eprintln!("console_bench needs a browser: {why}");
        std::process::exit(2);
    }
    let http = reqwest::Client::new();
    if let Some(path) = arg("--screenshot") {
        screenshot(&http, &path).await;
    }
    let load_before = uptime();
    let mut all = Vec::new();
    for n in 0..runs {
        let r = run_once(&http, n, latency).await;
        println!(
            "run {n}: state of 100,000 events {:.0} ms; first render {:.0} ms, JS heap {:.1} MiB, renderer RSS {:.0} MiB; \
             event-to-screen p50 {:.1} p99 {:.1} ms ({} seen), SSE reader p50 {:.1} p99 {:.1} ms ({} seen); \
             ingest {:.0} events/s without a page, {:.0} with the state read by a client, {:.0} with the console open (the page had it all {:.0} ms later)",
            r.state_ms, r.render_ms, r.heap_mib, r.rss_mib, r.page_p50, r.page_p99, r.seen.0,
            r.sse_p50, r.sse_p99, r.seen.1, r.ingest_closed, r.ingest_api, r.ingest_open, r.caught_up_ms
        );
        all.push(r);
    }
    let col = |f: fn(&Run) -> f64| all.iter().map(f).collect::<Vec<f64>>();
    println!("\n{runs} runs, {latency} events each for latency; median (min..max):");
    println!(
        "  the state's first answer, 100,000 events / 1,000 sessions folded: {} ms ({} events/s)",
        spread(&col(|r| r.state_ms), 0),
        spread(&col(|r| 100_000.0 / r.state_ms * 1000.0), 0)
    );
    println!(
        "  first full render, 100,000 events / 1,000 sessions: {} ms",
        spread(&col(|r| r.render_ms), 0)
    );
    println!(
        "  tab memory then: JS heap {} MiB, renderer RSS {} MiB (a blank tab's: {} MiB)",
        spread(&col(|r| r.heap_mib), 1),
        spread(&col(|r| r.rss_mib), 0),
        spread(&col(|r| r.blank_rss_mib), 0)
    );
    println!(
        "  event-to-screen p50 {} ms, p99 {} ms",
        spread(&col(|r| r.page_p50), 1),
        spread(&col(|r| r.page_p99), 1)
    );
    println!(
        "  SDK SSE reader  p50 {} ms, p99 {} ms",
        spread(&col(|r| r.sse_p50), 1),
        spread(&col(|r| r.sse_p99), 1)
    );
    println!(
        "  page minus reader, p50 {} ms",
        spread(&col(|r| r.page_p50 - r.sse_p50), 1)
    );
    println!(
        "  ingest without a page {} events/s, with the console open {} events/s",
        spread(&col(|r| r.ingest_closed), 0),
        spread(&col(|r| r.ingest_open), 0)
    );
    println!(
        "  ingest with the state read by a client (no browser) {} events/s",
        spread(&col(|r| r.ingest_api), 0)
    );
    println!(
        "  ingest with the console open / without: {}; with the state read by a client / without: {}",
        spread(&col(|r| r.ingest_open / r.ingest_closed), 3),
        spread(&col(|r| r.ingest_api / r.ingest_closed), 3)
    );
    println!(
        "  the open page listed all 300,000 events' sessions {} ms after the ingest ended",
        spread(&col(|r| r.caught_up_ms), 0)
    );
    println!(
        "load average (1, 5, 15 min): {load_before} before, {} after",
        uptime()
    );
}
