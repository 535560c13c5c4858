//! `aep relay`: the relay binary's flags and first line, serving, a drained exit on
//! SIGTERM, and the refusals (a bad value, an address taken).

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::time::Duration;

use common::{aep, finish, history, run, seed, spawn, AepRelay, TOKEN};

#[cfg(unix)]
#[test]
fn serves_prints_its_address_first_and_drains_on_sigterm() {
    let relay = AepRelay::start(&["--buffer", "16"], &[("AEP_TOKEN", TOKEN)]);
    let first = &relay.first_line;
    assert!(
        first.starts_with("aep relay listening on http://127.0.0.1:")
            && first.contains("buffer 16/session, auth on"),
        "{first}"
    );
    assert!(
        !first.contains(TOKEN),
        "the token is never printed: {first}"
    );
    // the token came from AEP_TOKEN, the buffer from the flag: 20 events, 16 kept
    let ids = seed(&relay.url, "s-relay", 20);
    let kept: Vec<String> = history(&relay.url)
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(kept, ids[4..]);
    let r = relay.stop();
    r.expect(0);
    assert!(!r.stderr.contains(TOKEN), "{}", r.stderr);
}

#[test]
fn a_bad_value_is_a_usage_error_from_the_flag_or_its_variable() {
    let r = run(&["relay", "--buffer", "many"]);
    r.expect(2);
    r.stderr_has("--buffer");
    let mut cmd = aep();
    cmd.args(["relay", "--port", "0"])
        .env("AEP_FSYNC", "sometimes");
    let r = finish(spawn(cmd), b"", Duration::from_secs(30));
    r.expect(2);
    r.stderr_has("--fsync");
}

#[test]
fn an_address_taken_is_one_line_and_exit_6() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let mut cmd = aep();
    cmd.args(["relay", "--host", "127.0.0.1", "--port", &port])
        .env("RUST_LOG", "off");
    let r = finish(spawn(cmd), b"", Duration::from_secs(30));
    r.expect(6);
    assert!(r.stdout.is_empty(), "no listening line: {}", r.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    r.stderr_has(&format!("127.0.0.1:{port}"));
}

/// Beyond loopback without a token `aep relay` refuses to start, saying how to set a
/// token; the loud flag starts it.
#[test]
fn beyond_loopback_without_a_token_it_refuses_to_start() {
    let mut cmd = aep();
    cmd.args(["relay", "--host", "0.0.0.0", "--port", "0"])
        .env_remove("AEP_TOKEN")
        .env("RUST_LOG", "off");
    let r = finish(spawn(cmd), b"", Duration::from_secs(30));
    r.expect(6);
    assert!(r.stdout.is_empty(), "no listening line: {}", r.stdout);
    r.stderr_has("without a token");
    r.stderr_has("--token TOKEN or AEP_TOKEN");
    let open = AepRelay::start(&["--host", "0.0.0.0", "--insecure-open-relay"], &[]);
    assert!(
        open.first_line.contains("listening on http://0.0.0.0:"),
        "{}",
        open.first_line
    );
}

/// `aep relay --tls-cert --tls-key` serves HTTPS, and says so on its first line.
#[test]
fn with_a_certificate_it_names_an_https_address() {
    let dir = aep_test_support::disk::TempDir::new("aep-relay-tls");
    let paths = aep_test_support::tls::TestCa::new("aep relay test").write(dir.path(), "");
    let (cert, key) = (paths.cert.to_str().unwrap(), paths.key.to_str().unwrap());
    let relay = AepRelay::start(
        &["--tls-cert", cert, "--tls-key", key],
        &[("AEP_TOKEN", TOKEN)],
    );
    assert!(
        relay
            .first_line
            .starts_with("aep relay listening on https://127.0.0.1:"),
        "{}",
        relay.first_line
    );
}

/// The default build of `aep` runs a fleet: `aep relay --nats URL` joins the cluster
/// (issue 31 point 4: it used to answer that it was built without the feature).
#[test]
fn the_default_build_joins_a_cluster_with_nats() {
    let Some(server) = aep_test_support::nats::NatsServer::start_or_skip() else {
        return;
    };
    let stream = format!("CLI{}", std::process::id());
    let relay = AepRelay::start(
        &["--nats", &server.url(), "--nats-stream", &stream],
        &[("AEP_TOKEN", TOKEN)],
    );
    let ids = seed(&relay.url, "s-cluster", 3);
    let kept: Vec<String> = history(&relay.url)
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(kept, ids);
    relay.stop().expect(0);
}
