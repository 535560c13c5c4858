//! `aep doctor`: lanes, findings with remedies, and its exit codes.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use common::{dead_relay_url, relay, relay_with, run, TOKEN};
use serde_json::Value;

#[test]
fn a_healthy_relay_has_no_findings() {
    let relay = relay();
    let r = run(&["doctor", relay.url(), "--token", TOKEN]);
    r.expect(0);
    for lane in [
        "reach",
        "auth is on",
        r#"/.well-known/aep: ["0.1"]"#,
        // the relay's capabilities.replay.buffer, read as core's Discovery reads it
        "replay buffer 10000",
        "sse",
        "cors",
        "websocket",
        "0 finding(s)",
    ] {
        assert!(r.stderr.contains(lane), "{lane}: {}", r.stderr);
    }
    let r = run(&["doctor", "--url", relay.url(), "--token", TOKEN, "--json"]);
    r.expect(0);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["findings"], 0);
    assert!(doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["lane"] == "websocket" && l["level"] == "ok"));
}

#[test]
fn a_missing_or_wrong_token_is_a_finding_with_its_remedy() {
    let relay = relay();
    let r = run(&["doctor", relay.url()]);
    r.expect(1);
    r.stderr_has("requires a token and none was given");
    r.stderr_has("remedy: pass --token or set AEP_TOKEN");
    let r = run(&["doctor", relay.url(), "--token", "wrong"]);
    r.expect(1);
    r.stderr_has("refused the token");
    r.stderr_lacks("wrong");
}

#[test]
fn an_open_relay_on_loopback_is_a_warning_not_a_finding() {
    let relay = relay_with(aep::relay::Relay::builder());
    let r = run(&["doctor", relay.url()]);
    r.expect(0);
    r.stderr_has("auth is off (on loopback");
}

/// This machine's address on its default route, if it has one (what a relay on 0.0.0.0
/// answers on beyond loopback).
fn outward_ipv4() -> Option<std::net::IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("192.0.2.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// An open relay (no token) that answers beyond loopback is a finding, whether doctor
/// reaches it at that address or on loopback; the remedy names the token.
#[test]
fn an_open_relay_beyond_loopback_is_a_finding() {
    let Some(outward) = outward_ipv4() else {
        println!("skipped: an_open_relay_beyond_loopback_is_a_finding because this machine has no IPv4 address beyond loopback");
        return;
    };
    let relay = common::AepRelay::start(&["--host", "0.0.0.0", "--insecure-open-relay"], &[]);
    let port = relay.url.rsplit(':').next().unwrap().to_owned();
    for url in [
        format!("http://127.0.0.1:{port}"),
        format!("http://{outward}:{port}"),
    ] {
        let r = run(&["doctor", &url]);
        r.expect(1);
        r.stderr_has("an open relay answers beyond loopback");
        r.stderr_has("remedy: start the relay with a token");
    }
    drop(relay);
}

#[test]
fn nothing_listening_is_a_finding_and_a_bad_url_is_usage() {
    let r = run(&["doctor", &dead_relay_url(), "--json"]);
    r.expect(1);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    let lines = doc["lines"].as_array().unwrap();
    assert!(lines.iter().any(|l| l["level"] == "finding"
        && l["message"]
            .as_str()
            .unwrap()
            .contains("nothing accepts connections")
        && l["remedy"].as_str().unwrap().contains("aep relay")));
    run(&["doctor", "not a url"]).expect(2);
    run(&["doctor", "ftp://127.0.0.1:1"]).expect(2);
}

#[test]
fn a_web_server_that_is_no_relay_is_a_discovery_finding() {
    // JSON at every path, but no discovery document: `aep emit` would refuse it, so
    // `doctor` says why
    let not_a_relay = common::scripted_relay(Some(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 8\r\nconnection: close\r\n\r\n{\"ok\":1}",
    ));
    let r = run(&["doctor", &not_a_relay]);
    r.expect(1);
    r.stderr_has("/.well-known/aep is no AEP discovery document (AEP-0003 §3.4)");
}
