//! Mission control's API without a browser (issue 35): the token's wall, the state
//! answered once the store is folded, the list sending what changed, the commands'
//! outcomes as statuses, and every refusal typed (never a `2xx` for what was not done).

use std::sync::Arc;
use std::time::Duration;

use aep_async::control::{ControlTarget, RejectReason};
use aep_async::{Emitter, WsSinkOptions};
use aep_relay::{RelayConfig, RelayHandle};
use serde_json::{json, Value};

use crate::common::*;

async fn console_relay(max_sessions: usize) -> RelayHandle {
    aep_relay::Relay::builder()
        .config(
            RelayConfig::default()
                .with_token(TOKEN)
                .with_console(true)
                .with_max_sessions(max_sessions),
        )
        .start()
        .await
        .expect("relay starts")
}

/// A live stream's messages, one JSON value a line.
struct Live {
    response: reqwest::Response,
    buf: Vec<u8>,
}

impl Live {
    async fn open(relay: &RelayHandle, query: &str) -> Live {
        let response = get(relay.url(), &format!("/console/api/live?{query}")).await;
        assert_eq!(response.status(), 200);
        Live {
            response,
            buf: Vec::new(),
        }
    }

    /// The next message that is not a keepalive or a progress line.
    async fn next(&mut self) -> Value {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let v: Value = serde_json::from_slice(&line).expect("a JSON line");
                if v.get("keepalive").is_none() && v.get("loading").is_none() {
                    return v;
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.response.chunk())
                .await
                .expect("a message within 30 s")
                .expect("the stream reads")
                .expect("the stream is open");
            self.buf.extend_from_slice(&chunk);
        }
    }
}

fn ask(session: &str, seq: u64, data: Value) -> Value {
    with(ev("attention.requested", session, seq), "data", data)
}

fn source_of(session: &str) -> String {
    format!("aep://test/agent/a/session/{session}")
}

#[tokio::test]
async fn the_page_is_public_its_api_is_behind_the_token_and_both_carry_the_csp() {
    let relay = console_relay(500).await;
    let page = get_without_token(relay.url(), "/console").await;
    assert_eq!(page.status(), 200);
    let h = page.headers();
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'self'")
            && !csp.contains("unsafe")
            && !csp.contains("data:"),
        "{csp}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
    assert_eq!(h["cross-origin-opener-policy"], "same-origin");
    for path in [
        "/console/api/state",
        "/console/api/live",
        "/console/api/timeline?session=s",
    ] {
        assert_eq!(
            get_without_token(relay.url(), path).await.status(),
            401,
            "{path}"
        );
        let wrong = client()
            .get(format!("{}{path}", relay.url()))
            .bearer_auth("not-the-token")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401, "{path}");
    }
    let r = get(relay.url(), "/console/api/state").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert!(r.headers().contains_key("content-security-policy"));
    // a relay without its console serves neither
    let off = relay_without_console().await;
    assert_eq!(get_without_token(off.url(), "/console").await.status(), 401);
    assert_eq!(get(off.url(), "/console/api/state").await.status(), 404);
    off.shutdown().await.unwrap();
    relay.shutdown().await.unwrap();
}

async fn relay_without_console() -> RelayHandle {
    relay().await
}

/// The first request starts the state: it is answered once the whole store is folded,
/// never with the empty state of a fold that has not read it yet.
#[tokio::test]
async fn the_state_is_answered_once_the_store_is_folded_never_empty_before() {
    let relay = console_relay(3_000).await;
    let mut sessions = Vec::new();
    for chunk in 0..4 {
        let mut batch = Vec::new();
        for _ in 0..500 {
            let s = session();
            for seq in 0..10 {
                batch.push(ev("progress.status", &s, seq));
            }
            sessions.push(s);
        }
        assert_eq!(post_ndjson(&relay, &batch).await.status(), 202, "{chunk}");
    }
    let (status, state) = api_get(&relay, "/console/api/state").await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state["counts"]["sessions"], 2_000, "{}", state["counts"]);
    assert_eq!(state["counts"]["events"], 20_000);
    assert_eq!(state["sessions"].as_array().unwrap().len(), 2_000);
    // a live page opened now gets the whole state first, too
    let mut live = Live::open(&relay, "").await;
    let first = live.next().await;
    assert_eq!(first["full"], true);
    assert_eq!(first["sessions"].as_array().unwrap().len(), 2_000);
    relay.shutdown().await.unwrap();
}

/// After the whole state, a message holds the sessions that changed, not the others.
#[tokio::test]
async fn a_live_page_is_sent_only_the_sessions_that_changed() {
    let relay = console_relay(500).await;
    let batch: Vec<Value> = (0..50)
        .flat_map(|_| {
            let s = session();
            (0..3).map(move |seq| ev("progress.status", &s, seq))
        })
        .collect();
    assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
    let mut live = Live::open(&relay, "").await;
    let first = live.next().await;
    assert_eq!(first["sessions"].as_array().unwrap().len(), 50);
    let s = batch[30]["session"].as_str().unwrap().to_owned();
    let mut run = ev("run.started", &s, 3);
    run["run"] = json!("r1");
    assert_eq!(post_json(&relay, &run).await.status(), 202);
    let next = live.next().await;
    assert_eq!(next["full"], false);
    let changed = next["sessions"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{next}");
    assert_eq!(changed[0]["session"], s);
    assert_eq!(changed[0]["status"], "running");
    assert_eq!(changed[0]["position"], json!({"epoch": 0, "seq": 3}));
    // a filtered page is told a session that changed out of its filter is gone
    let mut waiting = Live::open(&relay, "q=deploy").await;
    let first = waiting.next().await;
    assert_eq!(first["sessions"].as_array().unwrap().len(), 0);
    let question = ask(&s, 4, json!({"kind": "input", "prompt": "deploy now?"}));
    assert_eq!(post_json(&relay, &question).await.status(), 202);
    let next = waiting.next().await;
    assert_eq!(next["sessions"][0]["status"], "waiting", "{next}");
    assert_eq!(next["inbox"][0]["request"]["prompt"], "deploy now?");
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn every_refusal_is_typed_and_none_is_a_2xx() {
    let relay = console_relay(500).await;
    let s = session();
    let src = source_of(&s);
    let q_oob = ask(
        &s,
        1,
        json!({"kind": "input", "prompt": "call me", "respond_via": ["oob"]}),
    );
    let q_open = ask(&s, 2, json!({"kind": "input", "prompt": "name?"}));
    let events = [ev("session.started", &s, 0), q_oob.clone(), q_open.clone()];
    assert_eq!(post_ndjson(&relay, &events).await.status(), 202);
    let url = |path: &str| format!("{}{path}", relay.url());
    let respond = |request: &Value| json!({"source": src, "session": s, "request": request["id"], "answer": {"text": "x"}});

    // not JSON, or not said to be: 415 before anything is read
    let r = client()
        .post(url("/console/api/respond"))
        .bearer_auth(TOKEN)
        .header("content-type", "text/plain")
        .body(respond(&q_open).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let post_raw = |body: Vec<u8>| {
        client()
            .post(url("/console/api/respond"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = post_raw(b"{\"source\": ".to_vec()).await.unwrap();
    assert_eq!(r.status(), 400);
    let detail = read_json(r).await;
    assert!(
        detail["detail"].as_str().unwrap().contains("not JSON"),
        "{detail}"
    );
    assert_eq!(post_raw(b"[1, 2]".to_vec()).await.unwrap().status(), 400);
    // past 64 KiB: said by its length, or found while read
    let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(200_000));
    let r = post_raw(huge.clone().into_bytes()).await.unwrap();
    assert_eq!(r.status(), 413);
    let chunks = futures::stream::iter(
        huge.into_bytes()
            .chunks(8192)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    );
    let r = client()
        .post(url("/console/api/respond"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await;
    if let Ok(r) = r {
        assert_eq!(r.status(), 413);
    }

    // members: missing or of the wrong type
    let cases = [
        json!({"session": s, "request": "r", "answer": {"text": "x"}}),
        json!({"source": src, "session": s, "request": "r"}),
        json!({"source": src, "session": s, "request": "r", "answer": {}}),
        json!({"source": src, "session": s, "request": "r", "answer": {"option": 3}}),
        json!({"source": src, "session": s, "request": "r", "answer": {"html": "<b>"}}),
    ];
    for body in &cases {
        let (status, answer) = api_post(&relay, "/console/api/respond", body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"], "bad-request");
        assert!(answer["detail"].as_str().is_some_and(|d| !d.is_empty()));
    }
    // an unknown session, a request not pending, one answered out of band only
    let mut unknown = respond(&q_open);
    unknown["session"] = json!("no-such-session");
    let mut gone = respond(&q_open);
    gone["request"] = json!("never-asked");
    for (body, refusal) in [
        (unknown, (404, Some("unknown-session"))),
        (gone, (409, Some("not-pending"))),
        (respond(&q_oob), (409, Some("not-answerable"))),
    ] {
        let (status, answer) = api_post(&relay, "/console/api/respond", &body).await;
        assert_eq!((status, answer["error"].as_str()), refusal, "{body}");
    }
    // pending and answerable, but no agent holds the session: the relay's no-route
    let (status, answer) = api_post(&relay, "/console/api/respond", &respond(&q_open)).await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["outcome"], "rejected");
    assert_eq!(answer["by"], "relay");
    assert!(
        answer["detail"].as_str().unwrap().contains("no-route"),
        "{answer}"
    );

    // cancel: members, an unknown session, a known one nobody holds
    let bad = [
        json!({"session": s}),
        json!({"session": s, "run": "r1", "reason": 5}),
        json!({"session": s, "run": "r1", "source": ""}),
    ];
    for body in &bad {
        let (status, _) = api_post(&relay, "/console/api/cancel", body).await;
        assert_eq!(status, 400, "{body}");
    }
    let (status, answer) = api_post(
        &relay,
        "/console/api/cancel",
        &json!({"session": "no-such-session", "run": "r1"}),
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (404, Some("unknown-session"))
    );
    let (status, answer) = api_post(
        &relay,
        "/console/api/cancel",
        &json!({"session": s, "run": "r1", "reason": "stop"}),
    )
    .await;
    assert_eq!(
        (status, answer["by"].as_str()),
        (409, Some("relay")),
        "{answer}"
    );

    // reads: parameters, unknown sessions, methods, paths
    for (path, code) in [
        ("/console/api/timeline", 400),
        ("/console/api/timeline?session=s&limit=many", 400),
        ("/console/api/timeline?session=s&after=1", 400),
        ("/console/api/timeline?session=no-such-session", 404),
        ("/console/api/state?severity=loud", 400),
        ("/console/api/live?type=a..b", 400),
        ("/console/api/nope", 404),
        ("/console/api/respond", 405),
    ] {
        let (status, answer) = api_get(&relay, path).await;
        assert_eq!(status, code, "{path}: {answer}");
        assert!(answer["detail"].is_string(), "{path}: {answer}");
    }
    let r = client()
        .post(url("/console/api/state"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "GET");
    let (status, t) = api_get(
        &relay,
        &format!("/console/api/timeline?session={s}&source={src}"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(t["events"].as_array().unwrap().len(), 3);
    assert_eq!(t["state"]["pending"].as_array().unwrap().len(), 2);
    assert_eq!(t["incomplete"], false);
    relay.shutdown().await.unwrap();
}

/// An agent on the SDK that accepts an answer naming `ok` and rejects any other.
async fn picky_agent(url: &str, session: &str) -> (Emitter, Arc<aep_async::SessionEmitter>) {
    let target = ControlTarget::builder(["control.attention.respond"]).handler(|cmd| async move {
        let answer = cmd
            .event()
            .data()
            .and_then(|d| d.get("answer").cloned())
            .unwrap_or_default();
        if answer["option"] == "ok" {
            let _ = cmd.accept();
        } else {
            let _ = cmd.reject(RejectReason::Refused, "only ok will do");
        }
    });
    let sink = aep_async::Client::new(url)
        .token(TOKEN)
        .ws_sink(WsSinkOptions::new("picky", "host/1").command_hook(target.clone()))
        .unwrap();
    let emitter = Emitter::new("picky", "host", sink);
    let s = target.attach(emitter.session(session));
    (emitter, s)
}

#[tokio::test]
async fn a_command_is_200_only_when_the_agent_accepted_it() {
    let relay = console_relay(500).await;
    let s = session();
    let (emitter, handle) = picky_agent(relay.url(), &s).await;
    handle.emit("session.started", json!({})).unwrap();
    let asked = handle
        .emit(
            "attention.requested",
            json!({"kind": "approval", "prompt": "ok?", "options": [{"id": "ok", "label": "OK"}, {"id": "no", "label": "No"}]}),
        )
        .unwrap();
    emitter.flush().await;
    let body = |option: &str| json!({"source": asked.source(), "session": s, "request": asked.id(), "answer": {"option": option}});
    // the state has it once folded; the first answer may race the fold of the request
    let mut tries = 0;
    let (status, answer) = loop {
        let got = api_post(&relay, "/console/api/respond", &body("no")).await;
        if got.0 != 409 || got.1["error"] != "not-pending" || tries > 100 {
            break got;
        }
        tries += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status, 409, "{answer}");
    assert_eq!(
        (answer["by"].as_str(), answer["reason"].as_str()),
        (Some("target"), Some("refused"))
    );
    assert_eq!(answer["detail"], "only ok will do");
    let (status, answer) = api_post(&relay, "/console/api/respond", &body("ok")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["outcome"], "accepted");
    emitter.close().await;
    relay.shutdown().await.unwrap();
}

/// `n` `progress.status` events of `session` (seq `0..n`), each carrying `pad` as its
/// message: traffic heavy enough to fill a socket's buffers.
fn padded(session: &str, n: u64, pad: &str) -> Vec<Value> {
    (0..n)
        .map(|seq| {
            with(
                ev("progress.status", session, seq),
                "data",
                json!({"message": pad}),
            )
        })
        .collect()
}

/// A page that opens the live stream and never reads holds nothing up: ingest goes on,
/// and another page sees every event.
#[tokio::test]
async fn a_page_that_never_reads_holds_up_neither_ingest_nor_other_pages() {
    use tokio::io::AsyncWriteExt;
    let relay = console_relay(2_000).await;
    let addr = relay.url().trim_start_matches("http://").to_owned();
    let mut stuck = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET /console/api/live HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    );
    stuck.write_all(request.as_bytes()).await.unwrap();
    // sessions with long names and payloads, so the messages outgrow the socket's buffers
    let pad = "p".repeat(2_000);
    for _ in 0..10 {
        let batch: Vec<Value> = (0..100)
            .flat_map(|_| padded(&format!("{}-{}", session(), "n".repeat(200)), 5, &pad))
            .collect();
        let r = tokio::time::timeout(Duration::from_secs(30), post_ndjson(&relay, &batch))
            .await
            .expect("ingest is never held by a page that does not read");
        assert_eq!(r.status(), 202);
    }
    let (status, state) = api_get(&relay, "/console/api/state").await;
    assert_eq!(status, 200);
    assert_eq!(state["counts"]["sessions"], 1_000);
    drop(stuck);
    relay.shutdown().await.unwrap();
}

/// The relay binary serves mission control unless told not to, its API behind the token.
#[cfg(feature = "cli")]
#[tokio::test]
async fn the_relay_binary_serves_the_console_unless_told_not_to() {
    let on = RelayProcess::start(&[]);
    assert!(
        on.first_line.contains("console at /console"),
        "{}",
        on.first_line
    );
    assert_eq!(get_without_token(&on.url, "/console").await.status(), 200);
    assert_eq!(
        get_without_token(&on.url, "/console/api/state")
            .await
            .status(),
        401
    );
    assert_eq!(get(&on.url, "/console/api/state").await.status(), 200);
    on.kill();
    let off = RelayProcess::start(&["--console", "off"]);
    assert!(!off.first_line.contains("console"), "{}", off.first_line);
    assert_eq!(get(&off.url, "/console").await.status(), 404);
    off.kill();
}

/// The console's own subscription is not a reader held to the relay's backpressure
/// bounds (AEP-0003 §8.4 is for the relay's readers): with bounds far below one batch
/// and no lag grace, a reader that folds slower than the relay ingests would lag, lose
/// its `info` events and read the whole store again; the console's state keeps its
/// generation and has every event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_keeps_up_with_a_flood_under_reader_bounds_far_below_one_batch() {
    let relay = aep_relay::Relay::builder()
        .config(
            RelayConfig::default()
                .with_token(TOKEN)
                .with_console(true)
                .with_max_sessions(500)
                .with_soft_backpressure(4 << 10)
                .with_hard_backpressure(64 << 10)
                .with_lag_grace(Duration::ZERO),
        )
        .start()
        .await
        .unwrap();
    let mut live = Live::open(&relay, "").await;
    let first = live.next().await;
    let generation = first["generation"].clone();
    let pad = "p".repeat(500);
    for _ in 0..10 {
        let batch: Vec<Value> = (0..20).flat_map(|_| padded(&session(), 50, &pad)).collect();
        // 1,000 events of 700 bytes: past the hard bound of any reader of this relay
        assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let m = live.next().await;
        assert_eq!(
            m["generation"], generation,
            "the state was read again, at {}",
            m["counts"]
        );
        if m["counts"]["events"] == 10_000 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", m["counts"]);
    }
    relay.shutdown().await.unwrap();
}
