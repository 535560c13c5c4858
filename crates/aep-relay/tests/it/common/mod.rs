//! Helpers shared by the integration tests: a relay on 127.0.0.1:0, a plain HTTP client,
//! an SSE reader, and a plain WebSocket client. Events and the SSE message parser are the
//! workspace's (`aep-test-support`).
#![allow(dead_code)]

use std::collections::VecDeque;
use std::time::Duration;

use aep_relay::{Relay, RelayBuilder, RelayConfig, RelayHandle};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

#[allow(unused_imports)] // each test file uses its own share of these
pub use aep_test_support::events::{
    id, json_command as command, json_event as ev, session_id as session, with,
};
pub use aep_test_support::sse::SseMessage;

pub const TOKEN: &str = "test-token";
pub const WAIT: Duration = Duration::from_secs(5);

/// The test relay's configuration: replay buffers of 8 events, and the token.
pub fn config() -> RelayConfig {
    RelayConfig::default().with_buffer(8).with_token(TOKEN)
}

pub fn builder() -> RelayBuilder {
    Relay::builder().config(config())
}

pub async fn relay() -> RelayHandle {
    builder().start().await.expect("relay starts")
}

/// The test relay holding a fresh session's `progress.status` events at seq `0..n`,
/// posted in one batch: the relay, the session and the events.
pub async fn relay_holding(n: u64) -> (RelayHandle, String, Vec<Value>) {
    let relay = relay().await;
    let s = session();
    let batch: Vec<Value> = (0..n).map(|i| ev("progress.status", &s, i)).collect();
    assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
    (relay, s, batch)
}

/// A fresh session, its `session.started` (seq 0) posted and accepted (202).
pub async fn started_session(relay: &RelayHandle) -> String {
    let s = session();
    let status = post_json(relay, &ev("session.started", &s, 0))
        .await
        .status();
    assert_eq!(status, 202, "session.started accepted");
    s
}

/// The agent's close of a request the console answered: `attention.resolved` with
/// resolution `answered`, about `request`, caused by the `command` that answered it
/// (AEP-0002 attention, AEP-0004 causality).
pub fn resolve_answered(session: &aep_async::SessionEmitter, request: &str, command: &str) {
    let opts = aep_async::EmitOptions::new()
        .subject(request)
        .cause(command);
    session
        .emit_with(
            "attention.resolved",
            json!({"resolution": "answered"}),
            opts,
        )
        .unwrap();
}

/// The members of the JSON array `list` (a roster's `entries`, the console's
/// `sessions`) about `session`.
pub fn about<'a>(list: &'a Value, session: &'a str) -> impl Iterator<Item = &'a Value> {
    let all = list.as_array().expect("a JSON array");
    all.iter().filter(move |e| e["session"] == session)
}

pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

pub async fn post_ndjson(relay: &RelayHandle, events: &[Value]) -> reqwest::Response {
    post_ndjson_at(relay.url(), events).await.expect("post")
}

pub async fn post_json(relay: &RelayHandle, event: &Value) -> reqwest::Response {
    post_json_text(relay, &event.to_string()).await
}

/// One `application/json` body, sent as written.
pub async fn post_json_text(relay: &RelayHandle, text: &str) -> reqwest::Response {
    post(relay.url(), "0.1", "application/json", text.to_owned())
        .await
        .expect("post")
}

/// One authorized `POST /events` to a relay at `base` with the given `AEP-Version` and
/// content type, the body sent as written; `None` when it got no answer.
pub async fn post(
    base: &str,
    version: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> Option<reqwest::Response> {
    client()
        .post(format!("{base}/events"))
        .bearer_auth(TOKEN)
        .header("aep-version", version)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .ok()
}

/// An authorized `GET` of `path` (with its query, if any) on a relay at `base`.
pub async fn get(base: &str, path: &str) -> reqwest::Response {
    client()
        .get(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("get")
}

/// A `GET` of `path` without a token.
pub async fn get_without_token(base: &str, path: &str) -> reqwest::Response {
    client()
        .get(format!("{base}{path}"))
        .send()
        .await
        .expect("get")
}

/// An authorized `GET` of `path`, its body read as JSON (`/healthz`, `/connections`).
pub async fn get_json(base: &str, path: &str) -> Value {
    body(get(base, path).await).await
}

/// A streaming SSE reader over a plain HTTP response.
pub struct Sse {
    response: reqwest::Response,
    buf: String,
    ready: VecDeque<SseMessage>,
    pub ended: bool,
}

impl Sse {
    pub async fn open(relay: &RelayHandle, query: &str) -> Sse {
        Sse::open_with(relay, query, &[]).await
    }

    pub async fn open_with(relay: &RelayHandle, query: &str, headers: &[(&str, &str)]) -> Sse {
        Sse::open_url(relay.url(), query, headers).await
    }

    /// [`Sse::open_with`] on a relay at `base` (`http://host:port`).
    pub async fn open_url(base: &str, query: &str, headers: &[(&str, &str)]) -> Sse {
        let mut request = client()
            .get(format!("{base}/stream?{query}"))
            .bearer_auth(TOKEN)
            .header("accept", "text/event-stream");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.expect("stream");
        assert_eq!(response.status(), 200, "stream status");
        Sse {
            response,
            buf: String::new(),
            ready: VecDeque::new(),
            ended: false,
        }
    }

    /// The next message, or `None` at the end of the stream or after `WAIT`.
    pub async fn next(&mut self) -> Option<SseMessage> {
        loop {
            if let Some(msg) = self.ready.pop_front() {
                return Some(msg);
            }
            if self.ended {
                return None;
            }
            match tokio::time::timeout(WAIT, self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    self.buf.push_str(&String::from_utf8_lossy(&chunk));
                    self.ready
                        .extend(aep_test_support::sse::take_messages(&mut self.buf));
                }
                _ => {
                    self.ended = true;
                }
            }
        }
    }

    /// The next message carrying an event.
    pub async fn next_event(&mut self) -> Option<SseMessage> {
        loop {
            let msg = self.next().await?;
            if msg.data.is_some() {
                return Some(msg);
            }
        }
    }

    /// Every message until the stream ends.
    pub async fn read_to_end(&mut self) -> Vec<SseMessage> {
        let mut all = Vec::new();
        while let Some(m) = self.next().await {
            all.push(m);
        }
        all
    }
}

/// A live=0 replay, read whole.
pub async fn replay(relay: &RelayHandle, query: &str) -> Vec<SseMessage> {
    replay_at(relay.url(), query).await
}

/// [`replay`] from a relay at `base` (`http://host:port`).
pub async fn replay_at(base: &str, query: &str) -> Vec<SseMessage> {
    Sse::open_url(base, &format!("live=0&{query}"), &[])
        .await
        .read_to_end()
        .await
}

/// One NDJSON POST to a relay at `base`; `None` when it got no answer.
pub async fn post_ndjson_at(base: &str, events: &[Value]) -> Option<reqwest::Response> {
    let body = aep_test_support::events::ndjson(events);
    post(base, "0.1", "application/x-ndjson", body).await
}

/// How many readers the relay counts (`/healthz`).
pub async fn subscribers(relay: &RelayHandle) -> u64 {
    get_json(relay.url(), "/healthz").await["subscribers"]
        .as_u64()
        .unwrap()
}

/// The query of a replay of `session` from its start.
pub fn from(session: &str) -> String {
    format!("from={}", q(&json!([{ "session": session }])))
}

/// The query of a replay of `session` strictly after `(epoch, seq)`.
pub fn from_after(session: &str, epoch: u64, seq: u64) -> String {
    format!(
        "from={}",
        q(&json!([{ "session": session, "epoch": epoch, "seq": seq }]))
    )
}

/// The query of a stream filtered to `session`.
pub fn only(session: &str) -> String {
    format!("filter={}", q(&json!({ "session": session })))
}

/// The stored lines a replay served, in order (its messages with `data`).
pub fn data(got: &[SseMessage]) -> Vec<String> {
    got.iter().filter_map(|m| m.data.clone()).collect()
}

/// The `seq` of each event a replay served, in order.
pub fn seqs(got: &[SseMessage]) -> Vec<u64> {
    got.iter()
        .filter(|m| m.data.is_some())
        .map(|m| m.json()["seq"].as_u64().unwrap())
        .collect()
}

/// Asserts that the relay holds no event at all: a replay of everything is only its end
/// marker.
pub async fn assert_nothing_held(relay: &RelayHandle) {
    let got = replay(relay, "from=all").await;
    assert!(got.iter().all(|m| m.data.is_none()), "{got:?}");
}

pub fn q(value: &Value) -> String {
    url_encode(&value.to_string())
}

pub fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A plain WebSocket client.
pub struct Ws {
    pub stream: WsStream,
}

impl Ws {
    pub async fn connect(relay: &RelayHandle) -> Ws {
        Ws::connect_url(&format!("{}?access_token={TOKEN}", relay.socket_url())).await
    }

    /// Connects to a `/socket` URL as given.
    pub async fn connect_url(url: &str) -> Ws {
        let (stream, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("ws connects");
        Ws { stream }
    }

    /// Connects and completes the hello exchange with `role` and `capabilities`.
    pub async fn hello(relay: &RelayHandle, role: &str, capabilities: Value) -> Ws {
        let mut ws = Ws::connect(relay).await;
        ws.send(&json!({
            "type": "hello", "versions": ["0.1"], "role": role,
            "identity": { "agent": format!("agent-{role}"), "instance": "i-1" },
            "capabilities": capabilities,
        }))
        .await;
        let reply = ws.recv().await.expect("hello reply");
        assert_eq!(reply["type"], "hello");
        ws
    }

    pub async fn send(&mut self, frame: &Value) {
        self.send_text(&frame.to_string()).await;
    }

    /// Sends `text` as written: spacing, key order and escapes kept.
    pub async fn send_text(&mut self, text: &str) {
        self.stream
            .send(Message::Text(text.into()))
            .await
            .expect("ws send");
    }

    /// The next text frame's raw text; `None` on close or after `WAIT`.
    pub async fn recv_text(&mut self) -> Option<String> {
        loop {
            match tokio::time::timeout(WAIT, self.stream.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => return Some(t.to_string()),
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
                _ => return None,
            }
        }
    }

    pub async fn recv(&mut self) -> Option<Value> {
        let text = self.recv_text().await?;
        Some(serde_json::from_str(&text).expect("frame is JSON"))
    }

    /// Frames until one satisfies `pred` (returned last).
    pub async fn recv_until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut got = Vec::new();
        while let Some(f) = self.recv().await {
            let done = pred(&f);
            got.push(f);
            if done {
                break;
            }
        }
        got
    }

    /// Asserts that the next frame is `frame`.
    pub async fn assert_next(&mut self, frame: Value) {
        assert_eq!(self.recv().await, Some(frame));
    }

    /// Sends a `ping` and asserts that its `pong` is the next frame: the connection is
    /// open and nothing was delivered to it before.
    pub async fn assert_pong_next(&mut self, why: &str) {
        self.send(&json!({ "type": "ping", "t": 1 })).await;
        assert_eq!(
            self.recv().await,
            Some(json!({ "type": "pong", "t": 1 })),
            "{why}"
        );
    }

    /// The close frame's code, reading past anything else.
    pub async fn close_code(&mut self) -> Option<u16> {
        loop {
            match tokio::time::timeout(WAIT, self.stream.next()).await {
                Ok(Some(Ok(Message::Close(frame)))) => return frame.map(|f| u16::from(f.code)),
                Ok(Some(Ok(_))) => continue,
                _ => return None,
            }
        }
    }
}

/// The response body as JSON.
pub async fn body(r: reqwest::Response) -> Value {
    serde_json::from_str(&r.text().await.expect("body")).expect("JSON body")
}

/// The relay binary run as a child process (killed when dropped), for what only a
/// process shows: its peak memory, its exit, its first line of output.
pub struct RelayProcess {
    pub child: std::process::Child,
    pub url: String,
    /// The first line it printed (`aep-relay listening on ...`).
    pub first_line: String,
    /// Where its stderr goes (a file: a pipe nobody reads could fill and stall it).
    stderr: std::path::PathBuf,
}

impl RelayProcess {
    /// Starts `aep-relay --port 0 --host 127.0.0.1 --token TOKEN` with `args`.
    pub fn start(args: &[&str]) -> RelayProcess {
        Self::try_start(args)
            .unwrap_or_else(|(status, err)| panic!("the relay did not start ({status:?}): {err}"))
    }

    /// [`RelayProcess::start`], or the exit status and output of a relay that exited
    /// without printing its address.
    pub fn try_start(
        args: &[&str],
    ) -> Result<RelayProcess, (Option<std::process::ExitStatus>, String)> {
        use std::io::BufRead;
        let stderr = std::env::temp_dir().join(format!("aep-relay-test-{}.log", id()));
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aep-relay"))
            .args(["--port", "0", "--host", "127.0.0.1", "--token", TOKEN])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("a log file"))
            .spawn()
            .expect("start the relay binary");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut first_line = String::new();
        let _ = stdout.read_line(&mut first_line);
        if !first_line.contains("listening on") {
            let status = child.wait().ok();
            let err = std::fs::read_to_string(&stderr).unwrap_or_default();
            let _ = std::fs::remove_file(&stderr);
            return Err((status, format!("{first_line}{err}")));
        }
        let url = first_line
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .expect("an address")
            .to_owned();
        Ok(RelayProcess {
            child,
            url,
            first_line,
            stderr,
        })
    }

    /// The WebSocket URL of `/socket`, with the token.
    pub fn socket_url(&self) -> String {
        format!(
            "ws{}/socket?access_token={TOKEN}",
            self.url.trim_start_matches("http")
        )
    }

    /// The peak resident memory of the relay process so far, in KiB (`VmHWM`); `None`
    /// where `/proc` does not tell.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Kills it at once (SIGKILL), as a crash would.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `/healthz`, authorized.
    pub async fn health(&self) -> Value {
        get_json(&self.url, "/healthz").await
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// An agent on the SDK, `agent` on `host`, connected over a `WsSink` to the relay at
/// `url`: its control target accepts every command of `types` and hands each to the
/// returned channel, for the test to see what a console or client sent.
pub fn accepting_agent(
    url: &str,
    token: &str,
    (agent, host): (&str, &str),
    types: &[&str],
) -> (
    aep_async::control::ControlTarget,
    aep_async::Emitter,
    tokio::sync::mpsc::UnboundedReceiver<aep_core::Event>,
) {
    let (accepted, received) = tokio::sync::mpsc::unbounded_channel();
    let target =
        aep_async::control::ControlTarget::builder(types.iter().copied()).handler(move |cmd| {
            let accepted = accepted.clone();
            async move {
                let command = cmd.event().clone();
                let _ = cmd.accept();
                let _ = accepted.send(command);
            }
        });
    let options =
        aep_async::WsSinkOptions::new(agent, format!("{host}/1")).command_hook(target.clone());
    let sink = aep_async::Client::new(url)
        .token(token)
        .ws_sink(options)
        .expect("the sink starts");
    (target, aep_async::Emitter::new(agent, host, sink), received)
}

/// A relay of the NATS fleet `cluster`, with the test configuration.
#[cfg(feature = "nats")]
pub async fn relay_on(cluster: &aep_relay::NatsCluster) -> RelayHandle {
    builder()
        .nats(cluster.clone())
        .start()
        .await
        .expect("a relay of the cluster starts")
}

/// An authorized `GET` of the console API's `path`: the status and the JSON answer.
pub async fn api_get(relay: &RelayHandle, path: &str) -> (u16, Value) {
    let r = get(relay.url(), path).await;
    let status = r.status().as_u16();
    (status, read_json(r).await)
}

/// An authorized JSON `POST` of `body` to the console API's `path`: the status and the
/// JSON answer.
pub async fn api_post(relay: &RelayHandle, path: &str, body: &Value) -> (u16, Value) {
    let r = client()
        .post(format!("{}{path}", relay.url()))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("post");
    let status = r.status().as_u16();
    (status, read_json(r).await)
}

/// The body as JSON; `null` when it is none.
pub async fn read_json(r: reqwest::Response) -> Value {
    let text = r.text().await.unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}
