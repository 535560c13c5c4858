//! Control routing (AEP-0004 §4): token required, `no-route`, `ambiguous`, `unsupported`
//! refused toward the sender with `cause`; commands forwarded byte-identically to exactly
//! one target, fanned out for audit, never buffered.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use common::*;
use serde_json::{json, Value};

async fn claim(relay: &aep_relay::RelayHandle, session: &str, accepts: Value) -> Ws {
    let mut target = Ws::hello(
        relay,
        "emitter",
        json!({ "control": { "accepts": accepts } }),
    )
    .await;
    target.send(&ev("session.started", session, 0)).await;
    claims_landed(relay, session, 1).await;
    target
}

/// Waits until `n` connections claim `session`: a claim lands once its event is
/// buffered, which the roster shows (one entry per claiming connection).
async fn claims_landed(relay: &aep_relay::RelayHandle, session: &str, n: usize) {
    let mut probe = Ws::hello(relay, "consumer", json!({})).await;
    for _ in 0..100 {
        probe
            .send(&json!({ "type": "roster", "id": "probe" }))
            .await;
        let reply = probe.recv().await.unwrap();
        let claims = about(&reply["entries"], session).count();
        if claims >= n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{n} claims on {session} never landed");
}

async fn sender(relay: &aep_relay::RelayHandle) -> Ws {
    Ws::hello(relay, "consumer", json!({})).await
}

/// An SSE reader of `session`'s control traffic: the relay's audit copy (AEP-0004 §4).
async fn audit(relay: &aep_relay::RelayHandle, session: &str) -> Sse {
    let filter = json!({ "session": session, "type": "control.*" });
    Sse::open(relay, &format!("filter={}", q(&filter))).await
}

/// Sends `cmd` from `console` and reads the refusal, which names it as its `cause`.
async fn refused(console: &mut Ws, cmd: &Value) -> Value {
    console.send(cmd).await;
    let err = console.recv().await.unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["cause"], cmd["id"]);
    err
}

/// A relay where a target claims a fresh session accepting `control.pause`, with an
/// audit reader of the session's control traffic and a console to send from.
struct Routed {
    relay: aep_relay::RelayHandle,
    s: String,
    target: Ws,
    audit: Sse,
    console: Ws,
}

impl Routed {
    async fn new() -> Routed {
        let relay = relay().await;
        let s = session();
        let target = claim(&relay, &s, json!(["control.pause"])).await;
        let audit = audit(&relay, &s).await;
        let console = sender(&relay).await;
        Routed {
            relay,
            s,
            target,
            audit,
            console,
        }
    }

    /// Sends `text` from the console; the target and the audit copy get it as written.
    async fn assert_forwarded_as_written(&mut self, text: &str) {
        self.console.send_text(text).await;
        assert_eq!(self.target.recv_text().await.unwrap(), text);
        assert_eq!(
            self.audit.next_event().await.unwrap().data.as_deref(),
            Some(text)
        );
    }
}

#[tokio::test]
async fn command_is_forwarded_byte_identically_to_one_target_and_audited_not_buffered() {
    let mut routed = Routed::new().await;
    let s = routed.s.clone();
    // unusual spacing and key order: forwarding must not re-serialize
    let cmd = command("control.pause", &s);
    let text = format!("{{ \"data\" : {{}} ,{}", &cmd.to_string()[1..]);
    routed.assert_forwarded_as_written(&text).await;
    let types: Vec<Value> = replay(&routed.relay, &from(&s))
        .await
        .iter()
        .filter(|m| m.data.is_some())
        .map(|m| m.json()["type"].clone())
        .collect();
    assert_eq!(
        types,
        vec![json!("session.started")],
        "commands are never buffered"
    );
    routed.relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn command_without_a_live_claimant_is_refused_no_route() {
    let relay = relay().await;
    let s = session();
    post_json(&relay, &ev("session.started", &s, 0)).await;
    let mut console = sender(&relay).await;
    let err = refused(&mut console, &command("control.pause", &s)).await;
    assert_eq!(err["code"], "no-route");
    relay.shutdown().await.unwrap();
}

/// Two claimants, or any more, make a command ambiguous; the refusal counts them all
/// (AEP-0004 §4, item 5).
#[tokio::test]
async fn command_with_two_claimants_is_refused_ambiguous() {
    for claimants in [2, 3] {
        let relay = relay().await;
        let s = session();
        let mut held = Vec::new();
        for _ in 0..claimants {
            let mut ws = Ws::hello(&relay, "emitter", json!({})).await;
            ws.send(&ev("session.started", &s, 0)).await;
            held.push(ws);
        }
        claims_landed(&relay, &s, claimants).await;
        let mut console = sender(&relay).await;
        let err = refused(&mut console, &command("control.pause", &s)).await;
        assert_eq!(err["code"], "ambiguous");
        assert_eq!(
            err["detail"],
            format!("{claimants} connected emitters claim session {s}")
        );
        drop(held); // the claims held until here
        relay.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn undeclared_command_type_is_refused_unsupported() {
    let relay = relay().await;
    let s = session();
    let mut target = claim(&relay, &s, json!(["control.attention.respond"])).await;
    let mut console = sender(&relay).await;
    let err = refused(&mut console, &command("control.pause", &s)).await;
    assert_eq!(err["code"], "unsupported");
    target
        .assert_pong_next("nothing delivered to the target")
        .await;
    relay.shutdown().await.unwrap();
}

/// A relay refuses on a target's behalf only a declaration it knows (AEP-0004 §4.2): a
/// target that declared no `accepts` gets the command and decides it itself.
#[tokio::test]
async fn a_target_without_an_accepts_declaration_decides_for_itself() {
    let relay = relay().await;
    let s = session();
    let mut target = Ws::hello(&relay, "emitter", json!({ "control": {} })).await;
    target.send(&ev("session.started", &s, 0)).await;
    claims_landed(&relay, &s, 1).await;
    let mut console = sender(&relay).await;
    let cmd = command("control.pause", &s);
    console.send(&cmd).await;
    let got = target.recv().await.unwrap();
    assert_eq!(got, cmd, "forwarded to the target");
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn control_needs_a_token_even_on_localhost() {
    let relay = aep_relay::Relay::builder().start().await.unwrap();
    let s = session();
    let url = relay.socket_url();
    let (stream, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let mut target = Ws { stream };
    target
        .send(
            &json!({ "type": "hello", "versions": ["0.1"], "role": "emitter",
            "capabilities": { "control": { "accepts": ["control.pause"] } } }),
        )
        .await;
    target.recv().await.unwrap();
    target.send(&ev("session.started", &s, 0)).await;
    let (stream, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let mut console = Ws { stream };
    console
        .send(&json!({ "type": "hello", "versions": ["0.1"], "role": "consumer" }))
        .await;
    console.recv().await.unwrap();
    let err = refused(&mut console, &command("control.pause", &s)).await;
    assert_eq!(err["code"], "unauthorized");
    target.assert_pong_next("the command never flowed").await;
    relay.shutdown().await.unwrap();
}

/// `s` with its first character written as a `\u` escape: the same JSON string, but text
/// the relay's in-place reading does not take, so it is parsed instead.
fn escaped(s: &str) -> String {
    let mut chars = s.chars();
    let first = chars.next().unwrap();
    format!("\\u{:04x}{}", u32::from(first), chars.as_str())
}

#[tokio::test]
async fn command_written_with_escapes_is_routed_and_refused_by_its_decoded_attributes() {
    let mut routed = Routed::new().await;
    let s = routed.s.clone();
    // routed by the session it decodes to, forwarded as written
    let cmd = command("control.pause", &s);
    let id = cmd["id"].as_str().unwrap().to_owned();
    let text = cmd
        .to_string()
        .replace(&format!("\"{s}\""), &format!("\"{}\"", escaped(&s)))
        .replace(&format!("\"{id}\""), &format!("\"{}\"", escaped(&id)));
    assert_ne!(text, cmd.to_string());
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), cmd);
    routed.assert_forwarded_as_written(&text).await;
    let Routed {
        relay,
        mut target,
        mut console,
        ..
    } = routed;
    // a declared type written with an escape is routed too, and forwarded as written
    let cmd = command("control.pause", &s);
    let text = cmd
        .to_string()
        .replace("\"control.pause\"", "\"control\\u002epause\"");
    console.send_text(&text).await;
    assert_eq!(target.recv_text().await.unwrap(), text);
    // refused with the decoded id as `cause`, so the sender can match it (AEP-0004 §4.2)
    let other = session();
    let cmd = command("control.pause", &other);
    let id = cmd["id"].as_str().unwrap().to_owned();
    let text = cmd
        .to_string()
        .replace(&format!("\"{id}\""), &format!("\"{}\"", escaped(&id)));
    console.send_text(&text).await;
    let err = console.recv().await.unwrap();
    assert_eq!(err["code"], "no-route");
    assert_eq!(err["cause"], json!(id));
    // an undeclared type is judged by its decoded value too
    let cmd = command("control.cancel", &s);
    let text = cmd
        .to_string()
        .replace("\"control.cancel\"", "\"control\\u002ecancel\"");
    console.send_text(&text).await;
    let err = console.recv().await.unwrap();
    assert_eq!(err["code"], "unsupported");
    assert_eq!(err["cause"], cmd["id"]);
    let detail = err["detail"].as_str().unwrap();
    assert!(detail.contains("control.cancel"), "named decoded: {detail}");
    relay.shutdown().await.unwrap();
}
