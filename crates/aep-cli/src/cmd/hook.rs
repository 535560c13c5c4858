//! `aep hook AGENT`: one agent hook in, AEP events out, and the agent never waits long.
//!
//! Reads one hook payload on stdin exactly as the agent sends it, maps it with
//! `aep-adapters` (the Annex A mapping and the session runtime, its state kept in the
//! hook directory under a lock: see `hookstore`), spools the events and delivers what
//! the spool holds to the relay within the time budget (see `spool`), prints what the
//! agent expects back, and exits 0, always: a relay that is down, a payload that is
//! not JSON, a state that cannot be written are logged (`hook.log`, and one line on
//! stderr), never the agent's problem. `aep hook flush` delivers the spool alone.
//!
//! A moment with a back-channel (Claude Code's, Codex's and Qwen Code's
//! `PermissionRequest`, Claude Code's `AskUserQuestion` and `Elicitation`, the OpenCode
//! and Kilo Code plugins' `permission.ask`: see `aep_adapters::hold`) holds the agent for up to `--hold` while the request waits for
//! a `control.attention.respond` (see `hold`), and prints the answer in the agent's
//! decision format; no answer in time prints the neutral reply, and the agent asks in
//! its own prompt.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use aep::protocol::envelope::{rfc3339_millis, source_uri, EnvelopeFactory};
use aep_adapters::hold::Hold;
use aep_adapters::session::SessionState;
use aep_adapters::{Moment, Posture, Source, DEFAULT_CEILING};
use serde_json::Value;

use crate::args::{millis, RelayArgs};
use crate::exit::{Exit, Failure, Outcome};
use crate::hookstore::{default_dir, HookDir};
use crate::spool::{Delivered, Spool};

/// The agents `aep hook` serves (aep-adapters' one list of hook agents), and `flush`.
fn targets() -> clap::builder::PossibleValuesParser {
    let agents = aep_adapters::Source::HOOK_AGENTS.map(aep_adapters::Source::name);
    clap::builder::PossibleValuesParser::new(agents.into_iter().chain(["flush"]))
}

/// A payload past this is refused (and read to its end, so the agent is not stuck
/// writing it).
const MAX_PAYLOAD: u64 = 64 << 20;

/// How long `aep hook flush` gives delivery at least.
const FLUSH_BUDGET: Duration = Duration::from_secs(10);

/// Turn one agent hook into AEP events: read the hook's payload on stdin, send its
/// events to the relay, print what the agent expects back, exit 0.
///
/// Register it as the agent's hook command (`aep setup AGENT` does). The events of a
/// relay that is down or slower than `--budget` wait in a spool in the state directory
/// and go with the next hook, or with `aep hook flush`. Each agent session keeps its
/// state (its position, open run and tool calls) there too, under a file lock, so
/// hooks running at once never share a position.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent whose hook this is, or `flush` to deliver the spool alone.
    #[arg(value_name = "AGENT", value_parser = targets())]
    target: String,
    /// The hook's name, for an agent that passes it on the command line instead of in
    /// the payload (Antigravity).
    #[arg(value_name = "HOOK")]
    hook: Option<String>,
    #[command(flatten)]
    relay: RelayArgs,
    /// How long the agent may wait on delivery, in milliseconds (`flush`: at least 10 s).
    #[arg(long, env = "AEP_HOOK_BUDGET_MS", default_value = "1000", value_name = "MS", value_parser = millis)]
    budget: Duration,
    /// How long a held moment (a permission request, a question) waits for an answer
    /// over control before the agent asks in its own prompt, in milliseconds from the
    /// hook's start; 0 never holds. The default, 55 s, ends before the 60 s hook timeout
    /// agents give by default, as the reference adapters' does.
    #[arg(long, env = "AEP_HOOK_HOLD_MS", default_value = "55000", value_name = "MS", value_parser = millis)]
    hold: Duration,
    /// The state directory (default: `aep/hook` in the user's state directory,
    /// `~/.local/state/aep/hook` on Linux).
    #[arg(long, env = "AEP_HOOK_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// The capture ceiling (AEP-0003 §9.1): `metadata` with `attention.*` at
    /// `redacted` unless told otherwise.
    #[arg(long, env = "AEP_CAPTURE", default_value = DEFAULT_CEILING, value_name = "CEILING")]
    capture: String,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Outcome {
    let start = Instant::now();
    let Some(root) = args.state_dir.clone().or_else(default_dir) else {
        return Err(Failure::usage(
            "no state directory on this platform; pass --state-dir or set AEP_HOOK_DIR",
        ));
    };
    let dir = HookDir::new(root);
    if args.target == "flush" {
        return flush(&args, &dir, start + args.budget.max(FLUSH_BUDGET));
    }
    let Ok(source) = args.target.parse::<Source>() else {
        return Err(Failure::usage(format!(
            "`{}` is not an agent aep hook serves",
            args.target
        )));
    };
    let deadline = start + args.budget;
    let decided = hook(&args, source, &dir, start, deadline).unwrap_or_else(|why| {
        dir.log(&format!("{source}: {why}"));
        eprintln!("aep hook {source}: {why}");
        None
    });
    let neutral = source.neutral_reply(args.hook.as_deref());
    let reply = decided.as_deref().unwrap_or(neutral);
    if !reply.is_empty() {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
    Ok(Exit::Success)
}

/// Reads the payload, maps it, saves the state, spools the events, delivers; holds a
/// moment with a back-channel. `Some`: the decision to print.
fn hook(
    args: &Args,
    source: Source,
    dir: &HookDir,
    start: Instant,
    deadline: Instant,
) -> Result<Option<String>, String> {
    let payload = read_payload()?;
    let posture = Posture::from_ceiling(&args.capture).map_err(|e| e.to_string())?;
    let session = source
        .session_of(&payload)
        .unwrap_or_else(|| "unknown".to_owned());
    let agent = source.name();
    // The session's lock is held for one map and two local writes; wait for it longer
    // than for the relay, so a busy session loses nothing.
    let lock_deadline = start + args.budget.max(Duration::from_secs(2));
    let guard = dir
        .lock_session(agent, &session, lock_deadline)
        .map_err(|e| format!("{}: {e}", dir.root().display()))?
        .ok_or_else(|| format!("session {session} stayed locked; its hook was dropped"))?;
    let mut state: SessionState = dir.load_session(agent, &session);
    let factory = EnvelopeFactory::new(source_uri(&crate::host(), agent, Some(&session)), agent);
    let mut moment = Moment::new(&payload);
    if let Some(h) = args.hook.as_deref() {
        moment = moment.hook(h);
    }
    let mut events = state.apply(source, &moment, &posture, &factory);
    let held = match Hold::of(source, &moment) {
        Some(hold) if !args.hold.is_zero() => {
            let id = state.pending(hold.key()).map(|p| p.event.clone());
            let request = events.iter_mut().find(|e| Some(e.id()) == id.as_deref());
            request.map(|r| {
                // The request says until when it is answerable (AEP-0002 §5.3
                // `expires_at`): the end of the hold, when `attention.timeout` closes it.
                let until = SystemTime::now() + args.hold.saturating_sub(start.elapsed());
                if let Some(mut data) = r.data().filter(Value::is_object) {
                    data["expires_at"] = Value::String(rfc3339_millis(until));
                    r.set_data(data);
                }
                (hold, r.clone())
            })
        }
        _ => None,
    };
    // The state first: a crash after it costs a gap, never a reused position.
    dir.save_session(agent, &state)
        .map_err(|e| format!("saving the session state: {e}"))?;
    let lines: Vec<String> = events.iter().map(ToString::to_string).collect();
    let spool = Spool::new(dir.spool(args.relay.base()));
    spool.append(&lines, lock_deadline).map_err(|e| {
        format!(
            "{}: {e}; {} events lost",
            spool.dir().display(),
            lines.len()
        )
    })?;
    drop(guard);
    let runtime = runtime()?;
    let done = runtime.block_on(spool.deliver(&args.relay, deadline));
    if let Some(why) = done.stopped {
        if done.pending > 0 {
            return Err(format!("{why} ({} events spooled)", done.pending));
        }
    }
    // Held only once the request reached the relay: a relay that is down answers
    // nothing, and the agent is not kept waiting for it.
    let Some((hold, request)) = held else {
        return Ok(None);
    };
    let held = crate::hold::Loop {
        dir,
        relay: &args.relay,
        agent,
        session: &session,
        posture: &posture,
        factory: &factory,
        hold: &hold,
        request: &request,
    };
    let answer = runtime.block_on(held.wait(start + args.hold))?;
    Ok(answer.map(|a| hold.reply(&a)))
}

/// The payload on stdin, read to its end, as JSON.
fn read_payload() -> Result<Value, String> {
    let mut stdin = io::stdin().lock();
    let mut text = Vec::new();
    stdin
        .by_ref()
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("reading stdin: {e}"))?;
    if text.len() as u64 > MAX_PAYLOAD {
        let _ = io::copy(&mut stdin, &mut io::sink());
        return Err(format!(
            "a payload over {} MiB was refused",
            MAX_PAYLOAD >> 20
        ));
    }
    serde_json::from_slice(&text).map_err(|e| format!("the payload is not JSON ({e}); refused"))
}

/// A runtime of one thread (a hook process does one thing at a time).
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Delivers the spool.
fn deliver(spool: &Spool, relay: &RelayArgs, deadline: Instant) -> Result<Delivered, String> {
    Ok(runtime()?.block_on(spool.deliver(relay, deadline)))
}

/// `aep hook flush`: exit 0 once the spool is empty, 5 if events still wait.
fn flush(args: &Args, dir: &HookDir, deadline: Instant) -> Outcome {
    let spool = Spool::new(dir.spool(args.relay.base()));
    let done = deliver(&spool, &args.relay, deadline).map_err(|e| Failure::new(Exit::Input, e))?;
    eprintln!(
        "aep hook flush: {} sent, {} rejected, {} waiting ({})",
        done.sent,
        done.rejected,
        done.pending,
        spool.dir().display()
    );
    match (done.pending, done.stopped) {
        (0, _) => Ok(Exit::Success),
        (n, why) => Err(Failure::relay(format!(
            "{}: {n} events still spooled: {}",
            args.relay.base(),
            why.unwrap_or_else(|| "the budget ran out".into())
        ))),
    }
}
