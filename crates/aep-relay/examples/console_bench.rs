//! Mission control's bench (issue 35), in a real headless Chromium, one run:
//!
//! - event-to-screen: each event POSTed, to its session's row changing in the page
//!   (a MutationObserver in the page stamps it), beside the same event's arrival at an
//!   SSE reader of the relay; p50 and p99 of both;
//! - first full render: 100,000 events over 1,000 sessions in the relay, page opened,
//!   until every session is listed; the tab's JS heap then;
//! - ingest: 100,000 events posted in batches of 10,000, events/s, with the console
//!   open and without, alternated `--runs` times.
//!
//! ```text
//! cargo run --release -p aep-relay --example console_bench -- [--runs 3] [--latency 300] [--screenshot docs/console.png]
//! ```

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aep_relay::{Relay, RelayHandle};
use aep_test_support::browser::Browser;
use fantoccini::Locator;
use futures::StreamExt;
use serde_json::json;

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
        "session": session, "seq": seq, "data": {"message": "working"}})
    .to_string()
}

async fn relay() -> RelayHandle {
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
    assert_eq!(r.status().as_u16(), 202);
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

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(at).copied().unwrap_or(f64::NAN)
}

fn median_spread(v: &mut [f64]) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    format!(
        "median {:.0}, min {:.0}, max {:.0}",
        pct(v, 0.5),
        v.first().copied().unwrap_or(0.0),
        v.last().copied().unwrap_or(0.0)
    )
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
    let count: u64 = arg("--latency").and_then(|v| v.parse().ok()).unwrap_or(300);
    if let Some(why) = Browser::missing() {
        eprintln!("console_bench needs a browser: {why}");
        std::process::exit(2);
    }
    let http = reqwest::Client::new();

    // ---- first full render and the tab's memory ------------------------------------
    let relay = relay().await;
    load(&http, &relay, "load").await;
    let browser = Browser::start(1400, 900).await.expect("browser");
    let c = &browser.client;
    let t = Instant::now();
    c.goto(&format!("{}/console#token={TOKEN}", relay.url()))
        .await
        .expect("goto");
    loop {
        let n = c
            .find(Locator::Id("count-sessions"))
            .await
            .ok()
            .map(|e| async move { e.text().await.unwrap_or_default() });
        if let Some(n) = n {
            if n.await == "1000" {
                break;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(120), "never rendered");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first_render = t.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let heap = c
        .execute(
            "return performance.memory ? performance.memory.usedJSHeapSize : null",
            vec![],
        )
        .await
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN);
    println!(
        "first full render, 100,000 events / 1,000 sessions: {:.0} ms; JS heap {:.1} MiB",
        first_render.as_secs_f64() * 1000.0,
        heap / 1048576.0
    );
    if let Some(path) = arg("--screenshot") {
        // a session with a pending request for the picture
        let mut body = event("deploy-7", 0, "session.started");
        body.push('\n');
        body.push_str(&json!({"aep": "0.1", "id": "deploy-7-1", "type": "attention.requested",
            "time": "2026-07-22T06:00:01.000Z", "source": "aep://bench/agent/a", "agent": "bench-agent",
            "session": "deploy-7", "seq": 1, "severity": "notice", "subject": "Bash",
            "data": {"kind": "permission", "prompt": "Allow `terraform apply` in prod?",
                "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}],
                "respond_via": ["control"]}}).to_string());
        post(&http, &relay, body).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Ok(row) = c
            .find(Locator::Css(r#"tr[data-session="load-0999"] button"#))
            .await
        {
            let _ = row.click().await;
        }
        tokio::time::sleep(Duration::from_millis(800)).await;
        let png = c.screenshot().await.expect("screenshot");
        std::fs::write(&path, png).expect("write the screenshot");
        println!("screenshot: {path}");
    }

    // ---- event-to-screen beside an SSE reader ---------------------------------------
    post(
        &http,
        &relay,
        format!("{}\n", event("lat", 0, "session.started")),
    )
    .await;
    c.execute(
        "window.__seen = {}; const tb = document.querySelector('#sessions tbody');
         new MutationObserver((ms) => { const t = performance.timeOrigin + performance.now();
           for (const m of ms) { const tr = m.target.closest ? m.target.closest('tr') : null;
             if (tr && tr.dataset.session === 'lat' && !(tr.dataset.pos in window.__seen)) window.__seen[tr.dataset.pos] = t; } })
           .observe(tb, {attributes: true, subtree: true, childList: true, attributeFilter: ['data-pos']});
         return true;",
        vec![],
    )
    .await
    .expect("observer");
    let sse = http
        .get(format!(
            "{}/stream?filter={}",
            relay.url(),
            "%7B%22session%22%3A%22lat%22%7D"
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("sse");
    let seen_sse = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
    let sink = seen_sse.clone();
    let reader = tokio::spawn(async move {
        let mut body = sse.bytes_stream();
        let mut buf = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            let at = now_ms();
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(i) = buf.find('\n') {
                let line: String = buf.drain(..=i).collect();
                if let Some(id) = line.strip_prefix("id: ") {
                    // {session}:{epoch}:{seq}
                    if let Some(seq) = id
                        .trim()
                        .rsplit(':')
                        .next()
                        .and_then(|s| s.parse::<u64>().ok())
                    {
                        sink.lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .insert(seq, at);
                    }
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut posted = std::collections::HashMap::new();
    for seq in 1..=count {
        posted.insert(seq, now_ms());
        post(
            &http,
            &relay,
            format!("{}\n", event("lat", seq, "progress.status")),
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
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let (mut page, mut sse) = (Vec::new(), Vec::new());
    for (seq, t0) in &posted {
        if let Some(t) = seen.get(format!("0:{seq}")).and_then(|v| v.as_f64()) {
            page.push(t - t0);
        }
        if let Some(t) = seen_sse.get(seq) {
            sse.push(t - t0);
        }
    }
    println!(
        "event-to-screen over {} events: page p50 {:.1} ms p99 {:.1} ms ({} seen); SSE reader p50 {:.1} ms p99 {:.1} ms ({} seen)",
        count,
        pct(&mut page, 0.5),
        pct(&mut page, 0.99),
        page.len(),
        pct(&mut sse, 0.5),
        pct(&mut sse, 0.99),
        sse.len()
    );
    reader.abort();

    // ---- ingest, console open and not, alternated -----------------------------------
    let (mut open, mut closed) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let idle = relay_pair_run(&http, false, run).await;
        closed.push(idle);
        let busy = ingest_with_page(&http, &browser, run).await;
        open.push(busy);
    }
    println!(
        "ingest without a console: {} events/s",
        median_spread(&mut closed)
    );
    println!(
        "ingest with a console open: {} events/s",
        median_spread(&mut open)
    );
    browser.close().await;
    let _ = relay.shutdown().await;
}

async fn relay_pair_run(http: &reqwest::Client, _page: bool, run: usize) -> f64 {
    let relay = relay().await;
    let rate = load(http, &relay, &format!("idle{run}")).await;
    let _ = relay.shutdown().await;
    rate
}

async fn ingest_with_page(http: &reqwest::Client, browser: &Browser, run: usize) -> f64 {
    let relay = relay().await;
    let c = &browser.client;
    c.goto(&format!("{}/console#token={TOKEN}", relay.url()))
        .await
        .expect("goto");
    // the page is live before the flood
    for _ in 0..200 {
        if let Ok(e) = c.find(Locator::Id("status")).await {
            if e.text().await.unwrap_or_default() == "live" {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let rate = load(http, &relay, &format!("open{run}")).await;
    let _ = relay.shutdown().await;
    rate
}
