//! `aep mcp`: an MCP server on stdio (newline-delimited JSON-RPC 2.0, tools only) with
//! the reference `aep-mcp`'s two tools: `emit_event` and `ask_human`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aep::control::{AskError, AttentionRequest, ControlTarget, RejectReason};
use aep::protocol::attention::AttentionKind;
use aep::protocol::envelope::new_ulid;
use aep::protocol::redact::{RedactOptions, Redactor};
use aep::protocol::types::{emit_scope, EmitScope};
use aep::protocol::{Capture, Severity};
use aep::{EmitOptions, Emitter, SessionEmitter, WsSinkOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::args::RelayArgs;
use crate::exit::{describe, Exit, Failure, Outcome};

/// Serve the AEP tools to a model over MCP on stdio.
///
/// Newline-delimited JSON-RPC 2.0 on stdin and stdout, tools capability only, two
/// tools: `emit_event` (an AEP event from the model: a milestone a fleet observer acts
/// on that nothing else emits; `control.*` refused) and `ask_human` (an
/// `attention.requested` that waits for a person's answer over the control round trip:
/// `aep respond SESSION REQUEST --option ID` answers it). Events go to the relay over
/// WebSocket, in a session of their own (`--session`, default `mcp-ULID`) opened with
/// `session.started` and closed with `session.ended` when stdin ends. Each run takes
/// the session's next epoch from the user's epoch store, so a second run with the same
/// `--session` writes after the first.
///
/// Logs go to stderr; stdout carries only the protocol. A message longer than 16 MiB
/// is answered with a parse error and skipped; a message that is not JSON-RPC 2.0 (no
/// `"jsonrpc":"2.0"`, an `id` that is neither a string nor an integer) or a call before
/// `initialize` gets the JSON-RPC error, its `id` not echoed. When stdin ends, each
/// `ask_human` still waiting is withdrawn (`attention.resolved`, `dismissed`) before the
/// session ends, and the server exits.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    relay: RelayArgs,
    /// The session the tools emit into [default: mcp-ULID].
    #[arg(long, value_name = "SESSION")]
    session: Option<String>,
    /// The agent the events are from.
    #[arg(long, value_name = "NAME", default_value = "aep-mcp")]
    agent: String,
    /// How long ask_human waits for an answer, in seconds, unless the call says.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    ask_timeout: u64,
    /// The longest wait a call may ask for with `timeout_s`, in seconds; a longer one
    /// is refused with a tool error that says so.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    max_ask_timeout: u64,
}

/// The MCP protocol revisions this server speaks; it answers with the client's when it
/// knows it, else the newest.
const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// The longest message read from the client: the relay takes no larger body (its
/// `--max-body` default), so no event of a longer one could be delivered. A longer line
/// is answered with a parse error and skipped, never held.
const MAX_MESSAGE: usize = 16 << 20;

/// JSON-RPC 2.0's error codes (its §5.1).
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the tools share.
struct Server {
    emitter: Emitter,
    /// The server's own session, attached to the control target.
    home: Arc<SessionEmitter>,
    /// Sessions the model named, with their own `seq`.
    others: Mutex<HashMap<String, SessionEmitter>>,
    /// Asks through the attention loop (`ask_human`).
    target: ControlTarget,
    ask_timeout: Duration,
    max_ask_timeout: u64,
    out: mpsc::UnboundedSender<Value>,
    /// `initialize` has been answered: calls other than `ping` are taken from then on.
    initialized: std::sync::atomic::AtomicBool,
    /// The `ask_human` calls waiting, aborted (and so withdrawn) when stdin ends.
    asks: Mutex<tokio::task::JoinSet<()>>,
}

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    crate::probe::discovery(&args.relay).await?;
    // Answers to the requests ask_human waits on go to the attention loop; what reaches
    // the handler answers nothing pending.
    let target = ControlTarget::new(["control.attention.respond"], |cmd| async move {
        let _ = cmd.reject(
            RejectReason::Invalid,
            "no ask_human of this server is waiting on that request",
        );
    });
    let instance = format!("{}/{}", crate::host(), std::process::id());
    let options = WsSinkOptions::new(&args.agent, instance)
        .command_hook(target.clone())
        .on_report(|r| crate::term::warn(format!("aep mcp: {r}")));
    let sink = args.relay.client().ws_sink(options).map_err(|e| {
        Failure::relay(format!(
            "cannot open the relay connection: {}",
            describe(&e)
        ))
    })?;
    let redactor = Redactor::new(RedactOptions::new())
        .map_err(|e| Failure::usage(format!("redaction: {e}")))?;
    let emitter = crate::epochs::from_store(Emitter::builder(&args.agent, crate::host()))
        .capture(Capture::Redacted)
        .redactor(redactor)
        .build(sink);
    let session = args
        .session
        .clone()
        .unwrap_or_else(|| format!("mcp-{}", new_ulid(SystemTime::now())));
    let home = target.attach(emitter.session(&session));
    home.emit(
        "session.started",
        json!({"client": {"name": "aep-mcp", "version": env!("CARGO_PKG_VERSION")}}),
    )
    .map_err(|e| Failure::relay(format!("session.started not emitted: {e}")))?;
    crate::term::note(format!(
        "aep mcp: serving on stdio, emitting into session {session} at {}",
        args.relay.base()
    ));

    let (out, mut out_rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(message) = out_rx.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let server = Arc::new(Server {
        emitter,
        home,
        others: Mutex::default(),
        target,
        ask_timeout: Duration::from_secs(args.ask_timeout.min(args.max_ask_timeout)),
        max_ask_timeout: args.max_ask_timeout,
        out,
        initialized: std::sync::atomic::AtomicBool::new(false),
        asks: Mutex::default(),
    });
    // lines as bytes: one that is not UTF-8 is the client's parse error (-32700), not
    // the end of stdin
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut limited = (&mut stdin).take(MAX_MESSAGE as u64 + 1);
        let read = match limited.read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(_) if line.len() > MAX_MESSAGE && line.last() != Some(&b'\n') => {
                server.error(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: a message over {} MiB", MAX_MESSAGE >> 20),
                );
                skip_line(&mut stdin).await
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = read {
            crate::term::warn(format!("aep mcp: stdin: {e}"));
            break;
        }
        if line.len() > MAX_MESSAGE || line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        server.clone().message(&line);
    }
    // stdin is closed: nobody can read an answer any more. Each ask still waiting is
    // withdrawn (its task aborted, which emits `attention.resolved` `dismissed`) before
    // the session ends: a session never ends with a request pending (AEP-0002 §7 rule 2).
    let mut asks = std::mem::take(&mut *lock(&server.asks));
    asks.abort_all();
    while asks.join_next().await.is_some() {}
    let _ = server
        .home
        .emit("session.ended", json!({"reason": "normal"}));
    // a relay gone for good must not hold the exit forever
    let _ = tokio::time::timeout(Duration::from_secs(10), server.emitter.close()).await;
    drop(server);
    let _ = writer.await;
    Ok(Exit::Success)
}

/// Reads past the rest of a line, holding none of it.
async fn skip_line(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|b| *b == b'\n') {
            Some(end) => {
                input.consume(end + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}

impl Server {
    fn reply(&self, id: Value, result: Value) {
        let _ = self
            .out
            .send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn error(&self, id: Value, code: i64, message: &str) {
        let _ = self
            .out
            .send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
    }

    /// One line from the client.
    fn message(self: Arc<Self>, line: &[u8]) {
        let message: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => return self.error(Value::Null, PARSE_ERROR, &format!("parse error: {e}")),
        };
        let Some(obj) = message.as_object() else {
            return self.error(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: a JSON-RPC message is an object (batches are not used by MCP)",
            );
        };
        // A response to a request of ours: we send none.
        if !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error"))
        {
            return;
        }
        // The id, only once it is one this server may echo: a string or an integer
        // (MCP; JSON-RPC 2.0 §4 has no fractions in ids); any other is answered `null`.
        let id = match obj.get("id") {
            None => None,
            Some(id @ Value::String(_)) => Some(id.clone()),
            Some(id @ Value::Number(n)) if n.is_i64() || n.is_u64() => Some(id.clone()),
            Some(_) => {
                return self.error(
                    Value::Null,
                    INVALID_REQUEST,
                    "invalid request: an id is a string or an integer",
                );
            }
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return self.error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "invalid request: `jsonrpc` must be \"2.0\"",
            );
        }
        let Some(method) = obj.get("method").and_then(Value::as_str) else {
            return self.error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "invalid request: no method",
            );
        };
        let Some(id) = id else {
            return; // a notification (notifications/initialized, cancelled, ...)
        };
        let params = obj.get("params").cloned().unwrap_or(Value::Null);
        let initialized = self.initialized.load(std::sync::atomic::Ordering::Acquire);
        if !initialized && !matches!(method, "initialize" | "ping") {
            return self.error(
                id,
                INVALID_REQUEST,
                &format!("invalid request: `{method}` before `initialize`; initialize first"),
            );
        }
        match method {
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str);
                let version = asked
                    .filter(|v| PROTOCOL_VERSIONS.contains(v))
                    .unwrap_or(PROTOCOL_VERSIONS[0]);
                self.initialized
                    .store(true, std::sync::atomic::Ordering::Release);
                self.reply(id, json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "aep", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "AEP tools: emit_event reports a milestone to the people watching this agent; ask_human asks them a question and waits for the answer.",
                }));
            }
            "ping" => self.reply(id, json!({})),
            "tools/list" => self.reply(id, json!({"tools": tools(self.max_ask_timeout)})),
            "tools/call" => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let arguments = params
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                match name.as_str() {
                    "emit_event" => {
                        let result = self.emit_event(&arguments);
                        self.reply(id, result);
                    }
                    "ask_human" => {
                        // waits for a person: answered on its own task, other calls go on
                        let server = self.clone();
                        let mut asks = lock(&self.asks);
                        while asks.try_join_next().is_some() {} // the settled ones
                        asks.spawn(async move {
                            let result = server.ask_human(&arguments).await;
                            server.reply(id, result);
                        });
                    }
                    other => self.error(
                        id,
                        INVALID_PARAMS,
                        &format!("unknown tool `{other}`: the tools are emit_event and ask_human"),
                    ),
                }
            }
            other => self.error(id, METHOD_NOT_FOUND, &format!("method not found: {other}")),
        }
    }

    fn emit_event(&self, args: &Value) -> Value {
        let text = |k: &str| args.get(k).and_then(Value::as_str);
        let Some(event_type) = text("type") else {
            return tool_error("`type` is required: a dotted AEP type such as `progress.milestone` or `x.vendor.thing.happened`");
        };
        // The SDK's emitters refuse commands and foreign events (EmitScope); the scope
        // says only which emitter to hand the event to.
        let scope = match emit_scope(event_type) {
            Ok(s) => s,
            Err(e) => return tool_error(&format!("{e}")),
        };
        if matches!(event_type, "session.started" | "session.ended") {
            // A session's start and end are its emitter's: this server starts and ends
            // its own, and another session is not the model's to open or close.
            return tool_error(&format!(
                "{event_type} is refused: this server starts and ends its own session ({}), \
                 and a session another emitter runs is not emit_event's to start or end",
                self.home.session()
            ));
        }
        let mut opts = EmitOptions::new();
        if let Some(s) = text("subject") {
            opts = opts.subject(s);
        }
        if let Some(r) = text("run") {
            opts = opts.run(r);
        }
        if let Some(s) = text("severity") {
            match s.parse::<Severity>() {
                Ok(level) => opts = opts.severity(level),
                Err(e) => return tool_error(&format!("severity: {e}")),
            }
        }
        let data = match args.get("data") {
            None | Some(Value::Null) => json!({}),
            Some(d @ Value::Object(_)) => d.clone(),
            Some(_) => return tool_error("`data` must be a JSON object"),
        };
        let emitted = if scope == EmitScope::Agent {
            self.emitter.emit_with(event_type, data, opts)
        } else {
            match text("session") {
                Some(s) if s != self.home.session() => {
                    let mut others = lock(&self.others);
                    let session = others
                        .entry(s.to_owned())
                        .or_insert_with(|| self.emitter.session(s));
                    session.emit_with(event_type, data, opts)
                }
                _ => self.home.emit_with(event_type, data, opts),
            }
        };
        match emitted {
            Ok(e) => tool_ok(
                json!({"id": e.id(), "type": e.event_type(), "session": e.session(), "seq": e.seq()}),
            ),
            Err(e) => tool_error(&e.to_string()),
        }
    }

    async fn ask_human(&self, args: &Value) -> Value {
        let request = match ask_request(args) {
            Ok(r) => r,
            Err(why) => return tool_error(&why),
        };
        let timeout = match args.get("timeout_s") {
            None | Some(Value::Null) => self.ask_timeout,
            Some(t) => match t
                .as_u64()
                .filter(|s| (1..=self.max_ask_timeout).contains(s))
            {
                Some(secs) => Duration::from_secs(secs),
                None => {
                    return tool_error(&format!(
                        "`timeout_s` is a whole number of seconds from 1 to {} (this server's \
                         --max-ask-timeout), not {t}",
                        self.max_ask_timeout
                    ));
                }
            },
        };
        // The SDK's attention loop: the answer checked against the request (AEP-0006,
        // AEP-0008), acked, recorded; attention.timeout past the deadline.
        match self.target.ask(&self.home, request.timeout(timeout)).await {
            Ok(answer) => tool_ok(json!({
                "answer": answer.to_payload(),
                "request_id": answer.request_id(),
            })),
            Err(AskError::TimedOut { request, after }) => tool_error(&format!(
                "no human answer within {} s (request {request}); decide without one, or ask again",
                after.as_secs()
            )),
            Err(e) => tool_error(&format!("ask_human: {e}")),
        }
    }
}

/// The attention request of an `ask_human` call: `kind` (default `input`; a permission
/// without options offers allow and deny, deny refusing), `prompt`, `options` (strings,
/// whose ids are their 1-based positions, or `{id, label}` objects).
fn ask_request(args: &Value) -> Result<AttentionRequest, String> {
    let Some(prompt) = args.get("prompt").and_then(Value::as_str) else {
        return Err("`prompt` is required: the question for the person".to_owned());
    };
    let kind = match args.get("kind") {
        None | Some(Value::Null) => AttentionKind::Input,
        Some(k) => serde_json::from_value::<AttentionKind>(k.clone()).map_err(|_| {
            format!("`kind` {k} is not one of permission, input, auth, review, other")
        })?,
    };
    let options = args
        .get("options")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if kind == AttentionKind::Permission && options.is_empty() {
        return Ok(AttentionRequest::permission(prompt));
    }
    let mut request = AttentionRequest::new(kind, prompt);
    for (i, o) in options.iter().enumerate() {
        request = match o {
            Value::String(label) => request.option((i + 1).to_string(), label),
            Value::Object(m) => match (m.get("id"), m.get("label")) {
                (Some(Value::String(id)), Some(Value::String(label))) => request.option(id, label),
                (Some(Value::String(id)), None) => request.option(id, id),
                _ => {
                    return Err(format!(
                        "option {} needs a string `id` (and a `label`)",
                        i + 1
                    ))
                }
            },
            _ => {
                return Err(format!(
                    "option {} is neither a string nor an {{id, label}} object",
                    i + 1
                ))
            }
        };
    }
    request.check().map_err(|e| e.to_string())?;
    Ok(request)
}

fn tool_ok(value: Value) -> Value {
    json!({"content": [{"type": "text", "text": value.to_string()}], "structuredContent": value, "isError": false})
}

fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// The two tools, as `tools/list` declares them; `max_wait` bounds `timeout_s`.
fn tools(max_wait: u64) -> Value {
    json!([
        {
            "name": "emit_event",
            "description": "Emit an AEP event: a milestone that a person or system watching this agent would act on, and that nothing else already emits. Do not repeat events your runtime's adapter emits on its own (tool calls, runs, sessions): this is for what only you know. control.* types are refused.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "description": "The AEP event type, e.g. progress.milestone, or x.VENDOR.thing.happened"},
                    "data": {"type": "object", "description": "The payload"},
                    "subject": {"type": "string", "description": "What the event is about (a file, a ticket, an id)"},
                    "severity": {"type": "string", "enum": ["debug", "info", "notice", "warning", "error", "critical"]},
                    "session": {"type": "string", "description": "Another session to emit into (default: this server's)"},
                    "run": {"type": "string", "description": "The run the event belongs to"}
                },
                "required": ["type"]
            }
        },
        {
            "name": "ask_human",
            "description": "Ask the person supervising this agent a question and wait for the answer (an AEP attention request answered over the control round trip). Returns the answer, or an error when nobody answers in time.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "The question"},
                    "options": {"type": "array", "description": "Choices: strings, or {id, label} objects", "items": {}},
                    "kind": {"type": "string", "enum": ["permission", "input", "auth", "review", "other"], "default": "input"},
                    "timeout_s": {"type": "integer", "minimum": 1, "maximum": max_wait, "description": "How long to wait, in seconds"}
                },
                "required": ["prompt"]
            }
        }
    ])
}
