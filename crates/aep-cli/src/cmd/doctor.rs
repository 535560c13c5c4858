//! `aep doctor`: a read-only diagnosis of the path from this machine to a relay, each
//! finding with its remedy.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use aep::control::DuplexOptions;
use aep::protocol::binding::{SOCKET_PATH, SSE_CONTENT_TYPE, STREAM_PATH, WELL_KNOWN_PATH};
use aep::protocol::frame::Discovery;
use reqwest::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CONTENT_TYPE, ORIGIN};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::args::RelayArgs;
use crate::exit::{describe, Exit, Failure, Outcome};
use crate::term;

/// Diagnose the environment between this machine and a relay, read-only.
///
/// Checks reachability per address family (IPv4 and IPv6 separately, since a relay
/// bound to one is invisible on the other), the auth posture (`/healthz`,
/// `/connections` with the token; a relay without a token that answers beyond loopback
/// is a finding), discovery (`/.well-known/aep`), the SSE and
/// WebSocket bindings, and CORS (a browser can only read a refusal that carries
/// `access-control-allow-origin`). Each finding comes with its remedy. Exit 0 without
/// findings (warnings do not count), 1 with.
///
/// The probes run from here: a clean report says nothing about a browser behind a port
/// forward, a container or a VM. Run it again on the machine that is refused.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The relay [default: --url, AEP_URL, or http://127.0.0.1:8787].
    #[arg(value_name = "URL")]
    target: Option<String>,
    #[command(flatten)]
    relay: RelayArgs,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// How much a line of the report weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Info,
    Warning,
    Finding,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Finding => "finding",
        }
    }
}

#[derive(Debug)]
struct Line {
    lane: &'static str,
    level: Level,
    message: String,
    remedy: Option<String>,
}

#[derive(Debug, Default)]
struct Report {
    lines: Vec<Line>,
    json: bool,
}

impl Report {
    fn add(
        &mut self,
        lane: &'static str,
        level: Level,
        message: impl Into<String>,
        remedy: Option<&str>,
    ) {
        let line = Line {
            lane,
            level,
            message: message.into(),
            remedy: remedy.map(str::to_owned),
        };
        if !self.json {
            let style = match level {
                Level::Ok => term::OK,
                Level::Info => term::DIM,
                Level::Warning => term::WARN,
                Level::Finding => term::ERROR,
            };
            let mut err = anstream::stderr().lock();
            let _ = writeln!(
                err,
                "{style}{:>7}{style:#}  {:<9} {}",
                level.as_str(),
                lane,
                line.message
            );
            if let Some(r) = &line.remedy {
                let _ = writeln!(err, "{:>7}  {:<9} remedy: {r}", "", "");
            }
        }
        self.lines.push(line);
    }

    fn findings(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.level == Level::Finding)
            .count()
    }
}

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let mut relay = args.relay.clone();
    if let Some(t) = &args.target {
        relay.url = t.clone();
    }
    let url = reqwest::Url::parse(relay.base())
        .map_err(|e| Failure::usage(format!("`{}` is not a URL: {e}", relay.base())))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Failure::usage(format!(
            "`{}`: a relay URL is http:// or https://",
            relay.base()
        )));
    }
    let host = url
        .host_str()
        .ok_or_else(|| Failure::usage(format!("`{}` names no host", relay.base())))?
        .trim_matches(|c| c == '[' || c == ']')
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(8787);
    let mut report = Report {
        json: args.json,
        ..Report::default()
    };
    if !args.json {
        term::note(format!("aep doctor: {} (from this machine)", relay.base()));
    }
    let client = relay
        .http_builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| Failure::relay(format!("cannot build an HTTP client: {}", describe(&e))))?;
    if reachability(&mut report, &host, port).await {
        Http {
            client: &client,
            relay: &relay,
            report: &mut report,
            host: &host,
            port,
        }
        .lanes()
        .await;
        websocket(&mut report, &relay).await;
    }
    report.add(
        "vantage",
        Level::Info,
        "every probe ran from this machine; a browser behind a port forward, a container or a VM sees another network: run aep doctor there too",
        None,
    );
    if args.json {
        let lines: Vec<Value> = report
            .lines
            .iter()
            .map(|l| json!({"lane": l.lane, "level": l.level.as_str(), "message": term::redact_urls(&l.message), "remedy": l.remedy}))
            .collect();
        term::print_json_pretty(&json!({
            "url": term::redact_urls(relay.base()),
            "findings": report.findings(),
            "lines": lines,
        }));
    } else {
        term::note(format!("{} finding(s)", report.findings()));
    }
    Ok(if report.findings() == 0 {
        Exit::Success
    } else {
        Exit::Findings
    })
}

/// Probes the port on each address family the host stands for; false when nothing
/// answers (every later lane would only repeat it).
async fn reachability(report: &mut Report, host: &str, port: u16) -> bool {
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let addrs: Vec<SocketAddr> = if loopback {
        vec![
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
        ]
    } else {
        match tokio::net::lookup_host((host, port)).await {
            Ok(a) => a.collect(),
            Err(e) => {
                report.add(
                    "reach",
                    Level::Finding,
                    format!("{host} does not resolve: {e}"),
                    Some("check the host name in the URL, or DNS on this machine"),
                );
                return false;
            }
        }
    };
    let mut v4 = None;
    let mut v6 = None;
    for addr in &addrs {
        let ok = matches!(
            tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr))
                .await,
            Ok(Ok(_))
        );
        let slot = if addr.is_ipv4() { &mut v4 } else { &mut v6 };
        *slot = Some(slot.unwrap_or(false) || ok);
        report.add(
            "reach",
            if ok { Level::Ok } else { Level::Info },
            format!(
                "{addr}: {}",
                if ok {
                    "accepts connections"
                } else {
                    "refused or silent"
                }
            ),
            None,
        );
    }
    match (v4, v6) {
        (Some(false) | None, Some(false) | None) => {
            report.add(
                "reach",
                Level::Finding,
                format!("nothing accepts connections on port {port} of {host}"),
                Some("start a relay (aep relay --port PORT), or fix the URL's host and port"),
            );
            false
        }
        (Some(true), Some(false)) if host == "localhost" => {
            report.add(
                "reach",
                Level::Warning,
                "the relay listens on IPv4 only; a client that resolves localhost to ::1 is refused",
                Some("use http://127.0.0.1:PORT in clients, or bind the relay to :: (AEP_HOST=::)"),
            );
            true
        }
        (Some(false), Some(true)) if host == "localhost" => {
            report.add(
                "reach",
                Level::Warning,
                "the relay listens on IPv6 only; a client that resolves localhost to 127.0.0.1 is refused",
                Some("use http://[::1]:PORT in clients, or bind the relay to 0.0.0.0 (AEP_HOST=0.0.0.0)"),
            );
            true
        }
        _ => true,
    }
}

/// The HTTP lanes: health and auth, discovery, SSE, CORS.
struct Http<'a> {
    client: &'a reqwest::Client,
    relay: &'a RelayArgs,
    report: &'a mut Report,
    host: &'a str,
    port: u16,
}

/// Where a relay reached at `host:port` answers beyond loopback, if anywhere: the
/// address itself when it is not loopback; for a loopback one, the port on this
/// machine's outward addresses (the ones its default routes would send from; a relay
/// listening on 0.0.0.0 or :: answers there).
async fn beyond_loopback(host: &str, port: u16) -> Option<SocketAddr> {
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        let mut addrs = tokio::net::lookup_host((host, port)).await.ok()?;
        return addrs.next();
    }
    // a UDP "connection" sends nothing: it only asks the kernel for the source address
    // of the route (documentation addresses, RFC 5737 and RFC 3849)
    for (bind, toward) in [("0.0.0.0:0", "192.0.2.1:9"), ("[::]:0", "[2001:db8::1]:9")] {
        let Ok(probe) = tokio::net::UdpSocket::bind(bind).await else {
            continue;
        };
        if probe.connect(toward).await.is_err() {
            continue;
        }
        let Ok(local) = probe.local_addr() else {
            continue;
        };
        if local.ip().is_loopback() || local.ip().is_unspecified() {
            continue;
        }
        let outward = SocketAddr::new(local.ip(), port);
        let connect = tokio::net::TcpStream::connect(outward);
        if matches!(
            tokio::time::timeout(Duration::from_secs(1), connect).await,
            Ok(Ok(_))
        ) {
            return Some(outward);
        }
    }
    None
}

impl Http<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.relay.base())
    }

    async fn get(&self, path: &str, token: bool) -> Result<reqwest::Response, String> {
        let mut request = self.client.get(self.url(path));
        if let (true, Some(t)) = (token, self.relay.token()) {
            request = request.bearer_auth(t);
        }
        request.send().await.map_err(|e| describe(&e.without_url()))
    }

    async fn lanes(mut self) {
        self.auth().await;
        self.discovery().await;
        self.sse().await;
        self.cors().await;
    }

    async fn auth(&mut self) {
        let bare = match self.get("/healthz", false).await {
            Ok(r) if r.status().is_success() => body_json(r).await.unwrap_or(Value::Null),
            Ok(r) => {
                let status = r.status();
                self.report.add(
                    "health",
                    Level::Finding,
                    format!("GET /healthz answered {status}"),
                    Some("is this an AEP relay? /healthz answers 200 without a token"),
                );
                return;
            }
            Err(e) => {
                self.report.add("health", Level::Finding, format!("GET /healthz failed: {e}"), Some("the port accepts connections but does not speak HTTP as a relay does: check the URL"));
                return;
            }
        };
        self.report
            .add("health", Level::Ok, "GET /healthz answers", None);
        let auth_off = bare.get("sessions").is_some();
        if auth_off {
            match beyond_loopback(self.host, self.port).await {
                // issue 31: an open relay beyond loopback is anyone's
                Some(at) => self.report.add(
                    "auth",
                    Level::Finding,
                    format!("an open relay answers beyond loopback, at {at}: auth is off, so anyone who reaches it reads every event and writes into any session; control routing is disabled (AEP-0004 §4.1)"),
                    Some("start the relay with a token (--token or AEP_TOKEN) and give it to the clients, or let it listen on loopback only (--host 127.0.0.1, the default)"),
                ),
                None => self.report.add(
                    "auth",
                    Level::Warning,
                    "auth is off (on loopback: only this machine reaches it): every local process observes every event, and control routing is disabled (AEP-0004 §4.1)",
                    Some("start the relay with a token (AEP_TOKEN or --token) to enable control and close observation"),
                ),
            }
            if self.relay.token().is_some() {
                self.report.add(
                    "auth",
                    Level::Info,
                    "a token was given, but this relay requires none",
                    None,
                );
            }
        } else {
            self.report.add("auth", Level::Ok, "auth is on", None);
        }
        match self.get("/connections", true).await {
            Ok(r) if r.status().is_success() => {
                self.report.add(
                    "auth",
                    Level::Ok,
                    "GET /connections accepted the token",
                    None,
                );
            }
            Ok(r)
                if r.status() == StatusCode::UNAUTHORIZED
                    || r.status() == StatusCode::FORBIDDEN =>
            {
                let (message, remedy) = if self.relay.token().is_some() {
                    (
                        "the relay refused the token (401)",
                        "check --token or AEP_TOKEN against the relay's AEP_TOKEN",
                    )
                } else {
                    (
                        "the relay requires a token and none was given",
                        "pass --token or set AEP_TOKEN",
                    )
                };
                self.report
                    .add("auth", Level::Finding, message, Some(remedy));
            }
            Ok(r) => {
                let status = r.status();
                self.report.add(
                    "auth",
                    Level::Info,
                    format!("GET /connections answered {status} (not every relay serves it)"),
                    None,
                );
            }
            Err(e) => self.report.add(
                "auth",
                Level::Finding,
                format!("GET /connections failed: {e}"),
                None,
            ),
        }
        if let Ok(r) = self.get("/healthz", true).await {
            if let Ok(v) = body_json(r).await {
                let count = |k: &str| v.get(k).and_then(Value::as_u64);
                if let (Some(s), Some(sub), Some(c)) = (
                    count("sessions"),
                    count("subscribers"),
                    count("connections"),
                ) {
                    self.report.add(
                        "stats",
                        Level::Info,
                        format!("{s} sessions · {sub} subscribers · {c} connections"),
                        None,
                    );
                }
            }
        }
    }

    async fn discovery(&mut self) {
        match self.get(WELL_KNOWN_PATH, true).await {
            // read as every client reads it: core's `Discovery`, as `probe` does
            Ok(r) if r.status().is_success() => match body_json(r).await.and_then(|doc| serde_json::from_value::<Discovery>(doc).map_err(|e| e.to_string())) {
                Ok(doc) => {
                    self.report.add("discovery", Level::Ok, format!("{WELL_KNOWN_PATH}: {}", compact(&json!(doc.aep))), None);
                    if let Some(buffer) = doc.capabilities().replay.and_then(|r| r.buffer) {
                        self.report.add("discovery", Level::Info, format!("replay buffer {buffer}"), None);
                    }
                }
                Err(e) => self.report.add("discovery", Level::Finding, format!("{WELL_KNOWN_PATH} is no AEP discovery document (AEP-0003 §3.4): {e}"), Some("is this an AEP relay?")),
            },
            Ok(r) if r.status() == StatusCode::NOT_FOUND => self.report.add("discovery", Level::Warning, format!("no {WELL_KNOWN_PATH} (AEP-0003 §3.4): clients cannot learn the relay's capabilities"), None),
            Ok(r) => {
                let status = r.status();
                self.report.add("discovery", Level::Info, format!("{WELL_KNOWN_PATH} answered {status}"), None);
            }
            Err(e) => self.report.add("discovery", Level::Finding, format!("{WELL_KNOWN_PATH} failed: {e}"), None),
        }
    }

    async fn sse(&mut self) {
        let path =
            format!("{STREAM_PATH}?live=0&filter=%7B%22session%22%3A%22aep-doctor-probe%22%7D");
        match self.get(&path, true).await {
            Ok(r) if r.status().is_success() => {
                let ct = r
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                if ct.starts_with(SSE_CONTENT_TYPE) {
                    self.report.add(
                        "sse",
                        Level::Ok,
                        format!("GET {STREAM_PATH} (live=0) is an event stream"),
                        None,
                    );
                } else {
                    self.report.add("sse", Level::Finding, format!("GET {STREAM_PATH} answered with content type `{ct}`, not {SSE_CONTENT_TYPE}"), Some("a proxy in between rewrites or buffers the stream: let event streams through unbuffered"));
                }
            }
            Ok(r) => {
                let status = r.status();
                self.report.add(
                    "sse",
                    Level::Finding,
                    format!("GET {STREAM_PATH} answered {status}"),
                    Some("see the auth lane"),
                );
            }
            Err(e) => self.report.add(
                "sse",
                Level::Finding,
                format!("GET {STREAM_PATH} failed: {e}"),
                Some("a proxy in between may not carry streaming responses"),
            ),
        }
    }

    async fn cors(&mut self) {
        let preflight = self
            .client
            .request(Method::OPTIONS, self.url(STREAM_PATH))
            .header(ORIGIN, "http://aep-doctor.invalid")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
            .await;
        match preflight {
            Ok(r) if r.headers().contains_key(ACCESS_CONTROL_ALLOW_ORIGIN) => self.report.add(
                "cors",
                Level::Ok,
                format!("the preflight OPTIONS {STREAM_PATH} allows other origins"),
                None,
            ),
            Ok(r) => {
                let status = r.status();
                self.report.add("cors", Level::Finding, format!("the preflight OPTIONS {STREAM_PATH} ({status}) carries no access-control-allow-origin"), Some("a browser dashboard on another origin cannot subscribe: let the relay's CORS headers through"))
            }
            Err(e) => self.report.add(
                "cors",
                Level::Finding,
                format!("the preflight failed: {}", describe(&e.without_url())),
                None,
            ),
        }
        // a refusal a browser can read: without the header it sees only a network error
        let refused = self
            .client
            .get(self.url(&format!("{STREAM_PATH}?live=0")))
            .header(ORIGIN, "http://aep-doctor.invalid")
            .bearer_auth("aep-doctor-wrong-token")
            .send()
            .await;
        if let Ok(r) = refused {
            if r.status() == StatusCode::UNAUTHORIZED
                && !r.headers().contains_key(ACCESS_CONTROL_ALLOW_ORIGIN)
            {
                self.report.add("cors", Level::Finding, "a refused request carries no access-control-allow-origin: a browser cannot tell a bad token from a dead relay", Some("let the relay's CORS headers through on error responses too"));
            } else if r.status() == StatusCode::UNAUTHORIZED {
                self.report.add(
                    "cors",
                    Level::Ok,
                    "a refused request is readable by a browser",
                    None,
                );
            }
        }
    }
}

async fn websocket(report: &mut Report, relay: &RelayArgs) {
    let client = relay.client().connect_timeout(Duration::from_secs(5));
    match client.duplex(DuplexOptions::new()).await {
        Ok(duplex) => {
            report.add(
                "websocket",
                Level::Ok,
                format!("{SOCKET_PATH} upgrades and says hello"),
                None,
            );
            duplex.close().await;
        }
        Err(e) => {
            let remedy = match e.status() {
                Some(401 | 403) => "see the auth lane",
                _ => "a proxy in between must pass the WebSocket upgrade (Upgrade and Connection headers)",
            };
            report.add(
                "websocket",
                Level::Finding,
                format!("{SOCKET_PATH}: {}", describe(&e)),
                Some(remedy),
            );
        }
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

async fn body_json(r: reqwest::Response) -> Result<Value, String> {
    let bytes = crate::probe::read_at_most(r, crate::probe::MAX_DOCUMENT).await?;
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}
