//! The relay's listener (issue 31 point 1, issue 32 point 3): it listens on loopback
//! unless told otherwise, refuses to listen beyond it without a token unless told so
//! loudly, and bounds what one peer holds so that a legitimate client gets through
//! while another floods it with idle sockets.

use crate::common;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use aep_relay::{Relay, RelayConfig};
use aep_test_support::process::RelayProcess;
use aep_test_support::wait;
use common::*;

/// `aep-relay ARGS` exactly (no `--host`, no token of the helpers').
fn relay_binary(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aep-relay"));
    command
        .args(args)
        .env("RUST_LOG", "warn")
        .env_remove("AEP_HOST")
        .env_remove("AEP_TOKEN")
        .env_remove("AEP_INSECURE_OPEN_RELAY");
    command
}

/// A relay that must not start: its exit status and stderr, and that it printed nothing.
fn refused_start(mut command: Command) -> (std::process::ExitStatus, String) {
    let out = command
        .stdin(Stdio::null())
        .output()
        .expect("run the relay binary");
    assert!(
        out.stdout.is_empty(),
        "a refused relay said it listens: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Without `--host` the binary listens on loopback, and so does `Relay::builder()`.
#[tokio::test]
async fn the_default_address_is_loopback() {
    assert_eq!(
        RelayConfig::default().addr(),
        "127.0.0.1:8787".parse::<SocketAddr>().unwrap()
    );
    let relay = RelayProcess::spawn(relay_binary(&["--port", "0"])).unwrap();
    assert!(
        relay.url().starts_with("http://127.0.0.1:"),
        "{}",
        relay.url()
    );
    let embedded = Relay::builder().start().await.unwrap();
    assert!(embedded.local_addr().ip().is_loopback());
    embedded.shutdown().await.unwrap();
}

/// Beyond loopback without a token the relay refuses to start, saying how to set a
/// token, whether the address came from the flag or the variable; the builder refuses
/// alike.
#[tokio::test]
async fn beyond_loopback_without_a_token_the_start_is_refused() {
    let (status, stderr) = refused_start(relay_binary(&["--port", "0", "--host", "0.0.0.0"]));
    assert!(!status.success());
    for says in [
        "refusing to listen on 0.0.0.0",
        "--token",
        "AEP_TOKEN",
        "--insecure-open-relay",
    ] {
        assert!(stderr.contains(says), "{says:?} not in {stderr}");
    }
    let mut by_env = relay_binary(&["--port", "0"]);
    by_env.env("AEP_HOST", "::");
    let (status, stderr) = refused_start(by_env);
    assert!(
        !status.success() && stderr.contains("AEP_TOKEN"),
        "{stderr}"
    );

    let e = Relay::builder()
        .bind("0.0.0.0:0")
        .start()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
    assert!(e.to_string().contains("RelayBuilder::token"), "{e}");
    let served = aep_relay::Server::open(RelayConfig::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let e = served.run(listener, async {}).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
}

/// The loud flag starts an open relay, and it says so at every start; a token starts
/// one beyond loopback too, warned that it crosses the network in clear.
#[tokio::test]
async fn the_loud_flag_starts_an_open_relay_that_says_so() {
    for open in [
        relay_binary(&["--port", "0", "--host", "0.0.0.0", "--insecure-open-relay"]),
        {
            let mut by_env = relay_binary(&["--port", "0", "--host", "0.0.0.0"]);
            by_env.env("AEP_INSECURE_OPEN_RELAY", "true");
            by_env
        },
    ] {
        let relay = RelayProcess::spawn(open).unwrap();
        assert!(
            relay.url().starts_with("http://0.0.0.0:"),
            "{}",
            relay.url()
        );
        let port = relay.url().rsplit(':').next().unwrap().to_owned();
        let health = get_without_token(&format!("http://127.0.0.1:{port}"), "/healthz").await;
        assert_eq!(health.status(), 200);
        wait::until("the open-relay warning", || {
            relay.log().contains("OPEN RELAY")
        })
        .await;
    }
    let guarded = RelayProcess::spawn(relay_binary(&[
        "--port", "0", "--host", "0.0.0.0", "--token", TOKEN,
    ]))
    .unwrap();
    wait::until("the clear-text warning", || {
        guarded.log().contains("in clear")
    })
    .await;
    assert!(!guarded.log().contains("OPEN RELAY"));

    let open = Relay::builder()
        .bind("0.0.0.0:0")
        .insecure_open_relay()
        .start()
        .await
        .unwrap();
    open.shutdown().await.unwrap();
}

/// A TCP connection to `relay` from `source` (a loopback address other than
/// 127.0.0.1 is another peer); `None` where `source` cannot be bound.
async fn connect_from(source: &str, relay: SocketAddr) -> Option<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket.bind(format!("{source}:0").parse().ok()?).ok()?;
    socket.connect(relay).await.ok()
}

/// Waits until `/healthz` counts `n` connections refused past the per-peer bound.
async fn until_refused_per_peer(base: &str, n: u64) {
    let deadline = tokio::time::Instant::now() + wait::PATIENCE;
    loop {
        let counted = get_json(base, "/healthz").await["refused_connections"]["per_peer"]
            .as_u64()
            .unwrap();
        if counted == n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{counted} refused per peer, not {n}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One peer (127.0.0.2) opens far more idle sockets than the relay holds: past its
/// bound each is answered `429` and closed, counted in `/healthz`, and a legitimate
/// client (127.0.0.1) still reads a stream and gets its event stored and delivered.
/// Without the bound the same flood takes every slot and the client gets `503`.
#[tokio::test]
async fn a_legitimate_client_gets_through_while_one_peer_floods() {
    let bounded = config()
        .with_max_connections(16)
        .with_max_connections_per_peer(4);
    let relay = builder().config(bounded).start().await.unwrap();
    let Some(probe) = connect_from("127.0.0.2", relay.local_addr()).await else {
        println!("skipped: a_legitimate_client_gets_through_while_one_peer_floods because 127.0.0.2 cannot be bound here");
        return;
    };
    let mut flood = vec![probe];
    for _ in 0..63 {
        flood.push(connect_from("127.0.0.2", relay.local_addr()).await.unwrap());
    }
    until_refused_per_peer(relay.url(), 60).await;
    let mut answered = 0;
    for tcp in &mut flood {
        if let Ok(Some(answer)) =
            tokio::time::timeout(Duration::from_millis(50), first_line(tcp)).await
        {
            assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
            answered += 1;
        }
    }
    assert_eq!(answered, 60, "every socket past the bound is answered 429");

    // the legitimate client, the flood still held
    let mut sse = Sse::open(&relay, "").await;
    let s = started_session(&relay).await;
    assert_eq!(
        sse.next_event().await.unwrap().json()["session"],
        s.as_str()
    );
    relay.shutdown().await.unwrap();

    // the same flood without a per-peer bound: nothing is left for anyone else
    let unbounded = config()
        .with_max_connections(16)
        .with_max_connections_per_peer(0);
    let unbounded = builder().config(unbounded).start().await.unwrap();
    let mut held = Vec::new();
    for _ in 0..16 {
        held.push(
            connect_from("127.0.0.2", unbounded.local_addr())
                .await
                .unwrap(),
        );
    }
    let starved = post(
        unbounded.url(),
        "0.1",
        "application/json",
        ev("session.started", &s, 0).to_string(),
    )
    .await;
    assert!(
        starved.is_none_or(|r| r.status() == 503),
        "without a per-peer bound the flood should starve the client"
    );
    drop(held);
    unbounded.shutdown().await.unwrap();
}

/// The first line a refused connection was answered with; `None` when it sent none.
async fn first_line(tcp: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 256];
    let n = tcp.read(&mut buf).await.ok()?;
    (n > 0).then(|| {
        String::from_utf8_lossy(&buf[..n])
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()
    })
}

/// A flood is told at WARN, once for the burst, naming the bound and the busiest peer.
#[tokio::test]
async fn refused_connections_are_logged_at_warn_once_per_interval() {
    let relay = common::RelayProcess::start(&["--max-connections-per-peer", "2"]);
    let addr: SocketAddr = relay.url.trim_start_matches("http://").parse().unwrap();
    let mut flood = Vec::new();
    for _ in 0..20 {
        match connect_from("127.0.0.2", addr).await {
            Some(tcp) => flood.push(tcp),
            None => {
                println!("skipped: refused_connections_are_logged_at_warn_once_per_interval because 127.0.0.2 cannot be bound here");
                return;
            }
        }
    }
    until_refused_per_peer(&relay.url, 18).await;
    let log = relay.stderr();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("refused")).collect();
    assert_eq!(lines.len(), 1, "one line for the burst: {log}");
    for says in ["WARN", "--max-connections-per-peer (2)", "127.0.0.2"] {
        assert!(lines[0].contains(says), "{says:?} not in {}", lines[0]);
    }
    drop(flood);
    relay.kill();
}
