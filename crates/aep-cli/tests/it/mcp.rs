//! `aep mcp` driven by a scripted MCP client over stdio (newline-delimited JSON-RPC
//! 2.0): the handshake, both tools, and the protocol's error answers.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::io::Write;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use crate::permission::requested;
use common::{
    aep, dead_relay_url, eventually, finish, history, line_channel, relay, run, spawn, TOKEN,
};
use serde_json::{json, Value};

/// A scripted MCP client: writes requests, reads the server's lines.
struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Client {
    fn start(url: &str, session: &str) -> Client {
        let mut cmd = aep();
        cmd.args(["mcp", "--url", url, "--token", TOKEN, "--session", session]);
        let mut child = spawn(cmd);
        let stdin = child.stdin.take().unwrap();
        let lines = line_channel(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(20))
            .expect("a reply within 20 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout: {line}: {e}"))
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let reply = self.recv();
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    /// Calls the `ask_human` tool without waiting: its reply comes once a person answers.
    fn ask_human(&mut self, id: u64, arguments: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_human", "arguments": arguments}}));
    }

    /// Ends the client's input: the server ends its session and exits 0.
    fn close(self) {
        drop(self.stdin);
        finish(self.child, b"", Duration::from_secs(20)).expect(0);
    }

    fn tool(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.call(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    }
}

fn handshake(c: &mut Client) {
    let init = c.call(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "scripted", "version": "0"}
        }),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    assert_eq!(init["result"]["serverInfo"]["name"], "aep");
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

#[test]
fn handshake_tools_and_emit_event() {
    let relay = relay();
    let mut c = Client::start(relay.url(), "mcp-a");
    handshake(&mut c);
    let list = c.call(2, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["emit_event", "ask_human"]);
    assert_eq!(c.call(3, "ping", json!({}))["result"], json!({}));

    let ok = c.tool(4, "emit_event", json!({"type": "x.test.milestone.reached", "data": {"step": 3}, "subject": "build", "severity": "notice"}));
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    let id = ok["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = c.tool(5, "emit_event", json!({"type": "control.pause"}));
    assert_eq!(refused["result"]["isError"], true);
    assert!(refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("control"));
    let malformed = c.tool(6, "emit_event", json!({"type": "Not A Type"}));
    assert_eq!(malformed["result"]["isError"], true);
    let no_type = c.tool(7, "emit_event", json!({}));
    assert_eq!(no_type["result"]["isError"], true);

    // the protocol's own errors
    let unknown_tool = c.tool(8, "rm_rf", json!({}));
    assert_eq!(unknown_tool["error"]["code"], -32602);
    let unknown = c.call(9, "resources/list", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
    c.send_raw("{not json");
    assert_eq!(c.recv()["error"]["code"], -32700);
    c.send_raw("[1, 2]");
    assert_eq!(c.recv()["error"]["code"], -32600);
    c.send(&json!({"jsonrpc": "2.0", "id": 20}));
    let no_method = c.recv();
    assert_eq!(
        (no_method["id"].clone(), no_method["error"]["code"].clone()),
        (json!(20), json!(-32600))
    );
    // a line that is not UTF-8 is a parse error like any other, and the server goes on
    c.stdin.write_all(b"{\"id\": \"\xff\"}\n").unwrap();
    c.stdin.flush().unwrap();
    assert_eq!(c.recv()["error"]["code"], -32700);
    assert_eq!(c.call(21, "ping", json!({}))["result"], json!({}));
    // a line longer than any message is refused unread past the bound, and skipped
    let mut endless =
        br#"{"jsonrpc": "2.0", "id": 22, "method": "ping", "params": {"x": ""#.to_vec();
    endless.resize(17 << 20, b'x');
    endless.extend_from_slice(b"\"}}\n");
    c.stdin.write_all(&endless).unwrap();
    c.stdin.flush().unwrap();
    let refused = c.recv();
    assert_eq!(refused["error"]["code"], -32700, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("over 16 MiB"),
        "{refused}"
    );
    assert_eq!(c.call(23, "ping", json!({}))["result"], json!({}));

    eventually("the event at the relay", Duration::from_secs(10), || {
        history(relay.url()).iter().any(|e| e.id() == id)
    });
    let held = history(relay.url());
    let e = held.iter().find(|e| e.id() == id).unwrap();
    assert_eq!((e.session(), e.subject()), (Some("mcp-a"), Some("build")));
    assert!(held
        .iter()
        .any(|e| e.event_type() == "session.started" && e.session() == Some("mcp-a")));

    c.close();
    assert!(history(relay.url())
        .iter()
        .any(|e| e.event_type() == "session.ended" && e.session() == Some("mcp-a")));
}

#[test]
fn ask_human_waits_for_the_answer_and_reports_a_timeout() {
    let relay = relay();
    let mut c = Client::start(relay.url(), "mcp-b");
    handshake(&mut c);
    let options = json!([{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}]);
    c.ask_human(
        10,
        json!({"prompt": "Deploy to production?", "options": options}),
    );
    // a person sees the request and answers it with the CLI
    let request = requested(relay.url(), "mcp-b").id().to_owned();
    let r = run(&[
        "respond",
        "mcp-b",
        &request,
        "--option",
        "yes",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
    ]);
    r.expect(0);
    let reply = c.recv();
    assert_eq!(reply["id"], 10);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["answer"],
        json!({"option": "yes"})
    );
    assert_eq!(
        reply["result"]["structuredContent"]["request_id"],
        request.as_str()
    );
    eventually("answered and resolved", Duration::from_secs(10), || {
        let held = history(relay.url());
        ["attention.answered", "attention.resolved"]
            .iter()
            .all(|t| {
                held.iter()
                    .any(|e| e.event_type() == *t && e.subject() == Some(request.as_str()))
            })
    });
    // an answer to a request nobody waits on is refused
    run(&[
        "respond",
        "mcp-b",
        "no-such-request",
        "--text",
        "hm",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
    ])
    .expect(3);

    let timed_out = c.tool(
        11,
        "ask_human",
        json!({"prompt": "Anyone?", "timeout_s": 1}),
    );
    assert_eq!(timed_out["result"]["isError"], true);
    assert!(timed_out["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no human answer"));
    eventually(
        "attention.timeout at the relay",
        Duration::from_secs(10),
        || {
            history(relay.url())
                .iter()
                .any(|e| e.event_type() == "attention.timeout")
        },
    );
    c.close();
}

#[test]
fn a_relay_that_is_down_is_exit_5() {
    let r = run(&["mcp", "--url", &dead_relay_url()]);
    r.expect(5);
    assert!(r.stdout.is_empty(), "stdout carries only the protocol");
}

/// Epoch continuity (AEP-0001 §7.2): two runs of `aep mcp --session same`, the second's
/// events all after the first's, none at a position the first used.
#[test]
fn a_second_run_into_the_same_session_writes_after_the_first() {
    let relay = relay();
    for run in 0..2 {
        let mut c = Client::start(relay.url(), "mcp-same");
        handshake(&mut c);
        let ok = c.tool(
            2,
            "emit_event",
            json!({"type": "x.test.milestone.reached", "data": {"run": run}}),
        );
        assert_eq!(ok["result"]["isError"], false, "{ok}");
        c.close();
    }
    let mut held: Vec<_> = history(relay.url())
        .into_iter()
        .filter(|e| e.session() == Some("mcp-same"))
        .collect();
    held.sort_by_key(|e| (e.epoch(), e.seq()));
    let types: Vec<&str> = held.iter().map(|e| e.event_type()).collect();
    assert_eq!(
        types,
        [
            "session.started",
            "x.test.milestone.reached",
            "session.ended",
            "session.started",
            "x.test.milestone.reached",
            "session.ended"
        ],
        "the first run whole, then the second, in (epoch, seq) order"
    );
    assert_eq!(held[1].data().unwrap()["run"], 0);
    assert_eq!(held[4].data().unwrap()["run"], 1);
    let (first, second) = held.split_at(3);
    assert!(first.iter().all(|e| e.epoch() == first[0].epoch()));
    assert!(second.iter().all(|e| e.epoch() == second[0].epoch()));
    assert!(
        second[0].epoch() > first[0].epoch(),
        "a new epoch, never reused"
    );
    assert_eq!(second[0].seq(), Some(0));
}

/// ask_human on the SDK's attention loop: an answer that does not answer the request is
/// nacked `invalid` and the call keeps waiting; text naming an option is that option.
#[test]
fn ask_human_checks_answers_against_the_request() {
    let relay = relay();
    let mut c = Client::start(relay.url(), "mcp-check");
    handshake(&mut c);
    c.ask_human(30, json!({"prompt": "Ship it?", "kind": "permission"}));
    let request = requested(relay.url(), "mcp-check").id().to_owned();
    let respond = |flag: &str, value: &str| {
        run(&[
            "respond",
            "mcp-check",
            &request,
            flag,
            value,
            "--url",
            relay.url(),
            "--token",
            TOKEN,
        ])
    };
    // Not an option of the request: nacked, still pending.
    respond("--option", "maybe").expect(3).stderr_has("invalid");
    // The word names the option (AEP-0008).
    respond("--text", " Allow ").expect(0);
    let reply = c.recv();
    assert_eq!(reply["id"], 30);
    assert_eq!(
        reply["result"]["structuredContent"]["answer"],
        json!({"option": "allow"}),
        "{reply}"
    );
    c.close();
}

/// Invalid JSON-RPC gets the JSON-RPC error, with `id` `null` where the id itself is
/// not one: never the client's object or float echoed back.
#[test]
fn invalid_json_rpc_is_answered_with_its_error() {
    let relay = relay();
    let mut c = Client::start(relay.url(), "mcp-rpc");
    // a call before initialize (a ping is allowed)
    let early = c.call(1, "tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(early["error"]["message"]
        .as_str()
        .unwrap()
        .contains("initialize"));
    assert_eq!(c.call(2, "ping", json!({}))["result"], json!({}));
    handshake(&mut c);
    for id in [json!({"a": 1}), json!(1.5), json!([7]), json!(true)] {
        c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let reply = c.recv();
        assert_eq!(reply["id"], Value::Null, "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        assert!(reply.get("result").is_none(), "{reply}");
    }
    for version in [json!("1.0"), Value::Null] {
        c.send(&json!({"jsonrpc": version, "id": 30, "method": "ping"}));
        let reply = c.recv();
        assert_eq!(
            (reply["id"].clone(), reply["error"]["code"].clone()),
            (json!(30), json!(-32600)),
            "{reply}"
        );
    }
    c.send_raw(r#"{"id": 31, "method": "ping"}"#);
    assert_eq!(c.recv()["error"]["code"], -32600);
    // and the server goes on
    assert_eq!(c.call(32, "ping", json!({}))["result"], json!({}));
    c.close();
}

/// `emit_event` neither starts nor ends a session: the server's own is its own, and
/// another is its emitter's.
#[test]
fn emit_event_starts_and_ends_no_session() {
    let relay = relay();
    let mut c = Client::start(relay.url(), "mcp-own");
    handshake(&mut c);
    let mut id = 2;
    for ty in ["session.ended", "session.started"] {
        for session in [Some("someone-elses"), Some("mcp-own"), None] {
            let mut args = json!({"type": ty, "data": {"reason": "normal"}});
            if let Some(s) = session {
                args["session"] = json!(s);
            }
            let refused = c.tool(id, "emit_event", args);
            id += 1;
            assert_eq!(refused["result"]["isError"], true, "{refused}");
        }
    }
    let fine = c.tool(
        id,
        "emit_event",
        json!({"type": "progress.status", "session": "someone-elses", "data": {"message": "hi"}}),
    );
    assert_eq!(fine["result"]["isError"], false, "{fine}");
    c.close();
    let held = history(relay.url());
    assert!(!held
        .iter()
        .any(|e| e.session() == Some("someone-elses") && e.event_type().starts_with("session.")));
    let ended = held
        .iter()
        .filter(|e| e.event_type() == "session.ended" && e.session() == Some("mcp-own"))
        .count();
    assert_eq!(ended, 1, "the server's own end, once");
}

/// `timeout_s` is bounded: `u64::MAX`, zero or a fraction is refused with the bound.
#[test]
fn ask_human_refuses_a_timeout_past_the_bound() {
    let relay = relay();
    let mut c = Client::start(relay.url(), "mcp-bound");
    handshake(&mut c);
    for (id, t) in [
        (2, json!(u64::MAX)),
        (3, json!(0)),
        (4, json!(1.5)),
        (5, json!("60")),
    ] {
        let refused = c.tool(id, "ask_human", json!({"prompt": "?", "timeout_s": t}));
        assert_eq!(refused["result"]["isError"], true, "{refused}");
        let text = refused["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("from 1 to 3600"), "{text}");
    }
    let list = c.call(6, "tools/list", json!({}));
    let ask = &list["result"]["tools"][1];
    assert_eq!(
        ask["inputSchema"]["properties"]["timeout_s"]["maximum"],
        3600
    );
    c.close();
    assert!(!history(relay.url())
        .iter()
        .any(|e| e.event_type() == "attention.requested"));
}

/// stdin closed while `ask_human` waits: the request is withdrawn (`attention.resolved`
/// `dismissed`) before the session ends, and the server exits at once, not when the
/// ask would have timed out.
#[test]
fn the_end_of_stdin_withdraws_a_pending_ask_and_exits() {
    let relay = relay();
    let mut c = Client::start(relay.url(), "mcp-eof");
    handshake(&mut c);
    c.ask_human(2, json!({"prompt": "Still there?", "timeout_s": 3600}));
    let request = requested(relay.url(), "mcp-eof").id().to_owned();
    drop(c.stdin);
    // well before the hour the ask allowed
    finish(c.child, b"", Duration::from_secs(30)).expect(0);
    let held = history(relay.url());
    let of_session: Vec<_> = held
        .iter()
        .filter(|e| e.session() == Some("mcp-eof"))
        .collect();
    let dismissed = of_session
        .iter()
        .find(|e| e.event_type() == "attention.resolved" && e.subject() == Some(request.as_str()))
        .expect("the request withdrawn");
    assert_eq!(dismissed.data().unwrap()["resolution"], "dismissed");
    let ended = of_session
        .iter()
        .find(|e| e.event_type() == "session.ended")
        .expect("the session ended");
    assert!(
        dismissed.seq() < ended.seq(),
        "the request closed before the session"
    );
    assert!(!of_session
        .iter()
        .any(|e| e.event_type() == "attention.timeout"));
}
