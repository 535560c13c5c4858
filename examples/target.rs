//! An agent that holds one session over the WebSocket emit sink and answers the control
//! commands addressed to it (AEP-0004), until interrupted.
//!
//! ```text
//! cargo run --example target -- [--url URL] [--token T] --session S
//!     [--accepts pause,resume,cancel,attention.respond] [--reject TYPE=REASON]...
//!     [--ignore TYPE]... [--raise-attention]
//! ```
//!
//! Declares the accepted command types at `hello` (short names get the `control.`
//! prefix), claims the session by emitting `session.started`, acks every accepted
//! command, rejects the `--reject` types with their reason, and on `control.cancel`
//! emits `run.cancelled` cause-linked to the command (AEP-0004 §5, §6). A
//! `control.attention.respond` whose `subject` names an `attention.requested` this agent
//! raised is answered with `attention.answered` and `attention.resolved` (AEP-0002 §7);
//! one for an unknown request is acked without side effects. With `--raise-attention`
//! the agent raises one request at start and prints its id.
//!
//! `--ignore TYPE` declares `TYPE` but never answers it (a hung agent), so senders see
//! their synthesized `timeout`.
//!
//! Without `--url` an embedded Rust relay is started (token `dev` unless given) and its
//! URL printed first.

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use aep::control::{ControlTarget, RejectReason};
use aep::{Client, CommandHook, EmitOptions, Emitter, WsSinkOptions};
use serde_json::json;

mod common;

struct Args {
    url: Option<String>,
    token: Option<String>,
    session: String,
    accepts: Vec<String>,
    reject: HashMap<String, RejectReason>,
    ignore: HashSet<String>,
    raise_attention: bool,
}

/// Hands commands to the target, except the `--ignore`d types, which it declares and
/// drops: the sender's window closes on silence.
#[derive(Debug)]
struct Ignoring {
    target: ControlTarget,
    ignore: HashSet<String>,
}

impl CommandHook for Ignoring {
    fn accepts(&self) -> Vec<String> {
        let mut a = self.target.accepts().to_vec();
        a.extend(self.ignore.iter().cloned());
        a
    }
    fn ack_window(&self) -> Option<std::time::Duration> {
        self.target.ack_window()
    }
    fn command(&self, command: aep_core::Event) {
        if self.ignore.contains(command.event_type()) {
            eprintln!("target: ignoring {} {}", command.event_type(), command.id());
        } else {
            self.target.command(command);
        }
    }
}

const USAGE: &str = "usage: target [--url URL] [--token T] --session S [--accepts TYPES] [--reject TYPE=REASON]... [--ignore TYPE]... [--raise-attention]";

fn full_type(t: &str) -> String {
    if t.contains(".control.") || t.starts_with("control.") {
        t.to_owned()
    } else {
        format!("control.{t}")
    }
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        url: None,
        token: None,
        session: String::new(),
        accepts: ["pause", "resume", "cancel", "attention.respond"]
            .iter()
            .map(|t| full_type(t))
            .collect(),
        reject: HashMap::new(),
        ignore: HashSet::new(),
        raise_attention: false,
    };
    for (flag, value) in common::flags(&["--raise-attention"])? {
        match flag.as_str() {
            "--raise-attention" => args.raise_attention = true,
            "--url" => args.url = Some(value),
            "--token" => args.token = Some(value),
            "--session" => args.session = value,
            "--accepts" => {
                args.accepts = value
                    .split(',')
                    .filter(|t| !t.is_empty())
                    .map(full_type)
                    .collect()
            }
            "--ignore" => {
                args.ignore.insert(full_type(&value));
            }
            "--reject" => {
                let (ty, reason) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--reject wants TYPE=REASON, got {value:?}"))?;
                let reason: RejectReason = reason.parse().map_err(|e| format!("{e}"))?;
                args.reject.insert(full_type(ty), reason);
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.session.is_empty() {
        return Err("--session is required".into());
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(args) = common::or_usage("target", USAGE, parse()) else {
        return ExitCode::from(2);
    };
    let mut _relay = None;
    let (url, token) = match args.url.clone() {
        Some(u) => (u, args.token.clone()),
        None => {
            let token = args.token.clone().unwrap_or_else(|| "dev".into());
            match aep_relay::Relay::builder().token(&token).start().await {
                Ok(r) => {
                    let url = r.url().to_owned();
                    println!("relay {url} token {token}");
                    _relay = Some(r);
                    (url, Some(token))
                }
                Err(e) => {
                    eprintln!("target: embedded relay: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };

    // Attention requests this agent raised and has not resolved (AEP-0002 §7).
    let open_requests: Arc<Mutex<HashSet<String>>> = Arc::default();
    let reject = Arc::new(args.reject);
    let requests = open_requests.clone();
    let target = ControlTarget::new(args.accepts.clone(), move |cmd| {
        let reject = reject.clone();
        let requests = requests.clone();
        async move {
            let ty = cmd.command_type().to_owned();
            eprintln!("target: {ty} {}", cmd.event().id());
            if let Some(reason) = reject.get(&ty) {
                let _ = cmd.reject(*reason, format!("{ty} is rejected by this agent"));
                return;
            }
            let run = cmd.event().run().map(str::to_owned);
            let subject = cmd.event().subject().map(str::to_owned);
            let answer = cmd.event().data();
            let accepted = match cmd.accept() {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("target: ack failed: {e}");
                    return;
                }
            };
            let outcome = match ty.as_str() {
                "control.cancel" => {
                    let mut opts = EmitOptions::new();
                    if let Some(r) = run {
                        opts = opts.run(r);
                    }
                    accepted
                        .emit_with("run.cancelled", json!({"by": "control"}), opts)
                        .map(|_| ())
                }
                "control.attention.respond" => {
                    let known = subject.as_ref().is_some_and(|s| {
                        requests.lock().unwrap_or_else(|p| p.into_inner()).remove(s)
                    });
                    match subject {
                        Some(s) if known => {
                            let answer = answer
                                .and_then(|d| d.get("answer").cloned())
                                .unwrap_or_else(|| json!({}));
                            let opts = EmitOptions::new().subject(&s);
                            accepted
                                .emit_with(
                                    "attention.answered",
                                    json!({"answer": answer}),
                                    opts.clone(),
                                )
                                .and_then(|_| {
                                    accepted.emit_with(
                                        "attention.resolved",
                                        json!({"resolution": "answered"}),
                                        opts,
                                    )
                                })
                                .map(|_| ())
                        }
                        _ => Ok(()),
                    }
                }
                _ => Ok(()),
            };
            if let Err(e) = outcome {
                eprintln!("target: outcome not emitted: {e}");
            }
        }
    });

    let options = WsSinkOptions::new(
        "aep-example-target",
        format!("localhost/{}", std::process::id()),
    )
    .command_hook(Ignoring {
        target: target.clone(),
        ignore: args.ignore.clone(),
    })
    .on_report(|r| eprintln!("target: {r}"));
    let mut relay = Client::new(&url);
    if let Some(t) = &token {
        relay = relay.token(t);
    }
    let sink = match relay.ws_sink(options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("target: {e}");
            return ExitCode::FAILURE;
        }
    };
    let emitter = Emitter::new("aep-example-target", "localhost", sink);
    let session = target.attach(emitter.session(&args.session));
    if let Err(e) = session.emit("session.started", json!({"cwd": "."})) {
        eprintln!("target: {e}");
        return ExitCode::FAILURE;
    }
    if args.raise_attention {
        match session.emit(
            "attention.requested",
            json!({"kind": "input", "prompt": "continue?", "options": [{"id": "yes", "label": "Yes"}]}),
        ) {
            Ok(ev) => {
                open_requests.lock().unwrap_or_else(|p| p.into_inner()).insert(ev.id().to_owned());
                println!("attention {}", ev.id());
            }
            Err(e) => eprintln!("target: {e}"),
        }
    }
    emitter.flush().await;
    println!(
        "holding session {} accepting {}",
        args.session,
        args.accepts.join(",")
    );

    let _ = tokio::signal::ctrl_c().await;
    let _ = session.emit("session.ended", json!({"reason": "completed"}));
    emitter.close().await;
    ExitCode::SUCCESS
}
