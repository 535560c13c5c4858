//! The `aep-relay` binary: the reference relay's flags and environment variables, the
//! listening address printed as the first line of stdout (so `--port 0` is usable).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use aep_relay::RelayConfig;

const HELP: &str = "\
aep-relay: an Agent Event Protocol (AEP 0.1) relay

usage: aep-relay [--port P] [--host H] [--token T] [--buffer N] [...]

Every flag falls back to its environment variable (the reference relay's where it has
one), then to its default:
  --port N                 AEP_PORT               8787 (0 picks a free port)
  --host IP                AEP_HOST               0.0.0.0 (all interfaces)
  --token T                AEP_TOKEN              none (control routing disabled without one)
  --buffer N               AEP_BUFFER             10000 events replayed per session
  --max-sessions N         AEP_MAX_SESSIONS       500 sessions held (least recently written evicted)
  --max-session-bytes B    AEP_MAX_SESSION_BYTES  67108864 bytes replayed per session (oldest
                                                  events evicted, as past --buffer)
  --max-store-bytes B      AEP_MAX_STORE_BYTES    536870912 bytes over all sessions (least
                                                  recently written sessions evicted)
  --max-body BYTES         AEP_MAX_BODY           16777216 (413 beyond)
  --max-batch N            AEP_MAX_BATCH          10000 events per NDJSON batch (413 beyond)
  --max-from N             AEP_MAX_FROM           max-sessions resume positions per request
  --data-dir DIR           AEP_DATA_DIR           none: buffers survive restarts, journaled in DIR
                                                  (one file per session, one event per line);
                                                  2xx only once written, 507 when the disk
                                                  cannot take it; damaged lines are skipped
                                                  at start and the rest replays
  --fsync MODE             AEP_FSYNC              batch: with --data-dir, what a 2xx waits for.
                                                  always: fdatasync (group commit); batch: the
                                                  write, files synced every fsync interval;
                                                  never: the write. Every mode survives
                                                  kill -9; only always survives a power cut
  --fsync-interval-ms MS   AEP_FSYNC_INTERVAL_MS  1000 between syncs in batch mode
  --soft-backpressure B    AEP_SOFT_BACKPRESSURE  1048576 bytes queued to a reader: past it, one
                                                  ingest waits up to the lag grace, then the
                                                  reader is lagging and loses debug/info
  --hard-backpressure B    AEP_HARD_BACKPRESSURE  8388608 bytes queued (every frame counts): the
                                                  reader is disconnected
  --heartbeat-ms MS        AEP_HEARTBEAT_MS       25000 between `: ping` / ping frames
  --lag-grace-ms MS        AEP_LAG_GRACE_MS       1000 one ingest waits for a reader past the soft
                                                  bound (no other ingest or reader waits on it)
  --drain-timeout-ms MS    AEP_DRAIN_TIMEOUT_MS   5000 graceful-shutdown limit; also what a reader
                                                  disconnected past the hard bound gets to take
                                                  what was queued before its socket is dropped
  --subscription-ttl-ms MS AEP_SUBSCRIPTION_TTL_MS none: subscription-model subscriptions expire
  --max-hello BYTES        AEP_MAX_HELLO          65536 bytes of WebSocket hello (limit-exceeded,
                                                  close 1009 beyond)
  --hello-timeout-ms MS    AEP_HELLO_TIMEOUT_MS   10000 a WebSocket may go without hello
                                                  (hello-required, close 1002 past it)
  --max-subscriptions N    AEP_MAX_SUBSCRIPTIONS  100 on one WebSocket, subscribe and
                                                  subscription.requested together
                                                  (limit-exceeded beyond)
  --max-connections N      AEP_MAX_CONNECTIONS    4096 connections at once, every binding
                                                  together (503 and close beyond); keep the
                                                  open-file limit (ulimit -n) above it
  --header-timeout-ms MS   AEP_HEADER_TIMEOUT_MS  10000 to send a request's headers, and to hold
                                                  an idle keep-alive connection (0: no limit)

The first line of stdout is `aep-relay listening on http://ADDR ...`.
Logs go to stderr through tracing (RUST_LOG, default info). The token is never logged.
";

fn parse_args() -> Result<Option<RelayConfig>, String> {
    let mut config = RelayConfig::from_env().map_err(|e| e.to_string())?;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--help" || arg == "-h" {
            print!("{HELP}");
            return Ok(None);
        }
        if arg == "--version" || arg == "-V" {
            println!("aep-relay {}", env!("CARGO_PKG_VERSION"));
            return Ok(None);
        }
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(format!("unexpected argument {arg:?} (see --help)"));
        };
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name.to_owned(), value.to_owned()),
            None => {
                let value = args
                    .next()
                    .ok_or_else(|| format!("--{flag} needs a value (see --help)"))?;
                (flag.to_owned(), value)
            }
        };
        config.set(&name, &value).map_err(|e| format!("--{e}"))?;
    }
    Ok(Some(config))
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn main() -> ExitCode {
    let config = match parse_args() {
        Ok(Some(config)) => config,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("aep-relay: {message}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // colors for a terminal only: a log file keeps plain `key=value` text
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("aep-relay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.addr()).await?;
        let addr = listener.local_addr()?;
        let buffer = config.buffer();
        let auth_on = config.token().is_some();
        // the journal is read before the address is printed: a relay that says it
        // listens can serve
        let server = tokio::task::spawn_blocking(move || aep_relay::Server::open(config))
            .await
            .map_err(std::io::Error::other)??;
        let host = addr.to_string();
        let auth = if auth_on {
            "on"
        } else {
            "OFF, control routing disabled (AEP-0004 §4.1); set AEP_TOKEN to enable"
        };
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "aep-relay listening on http://{host} (buffer {buffer}/session, auth {auth})"
        )?;
        out.flush()?;
        drop(out);
        server.run(listener, shutdown_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            ExitCode::FAILURE
        }
    }
}
