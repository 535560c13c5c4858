//! `aep replay FILE`: re-emit a capture as new sessions, so a consumer can be exercised
//! or a report reproduced without the original agent.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aep::protocol::envelope::new_ulid;
use aep::protocol::types::{emit_scope, EmitScope};
use aep::protocol::validate::unix_nanos;
use aep::protocol::{Capture, Event, SourceUri};
use aep::{EmitOptions, EmitPermit, Emitter, SessionEmitter};
use serde_json::{json, Value};

use crate::args::{millis, RelayArgs};
use crate::deliver::{http_sink, Reports, Shared};
use crate::exit::{describe, Exit, Failure, Outcome};
use crate::term;

/// Re-emit a capture as new sessions (an `aep sink` file, an adapter's log).
///
/// A re-emitter cannot carry another emitter's `(epoch, seq)` forward (AEP-0001 §7), so
/// each recorded `(source, session)` becomes a new `replay-ULID` session: fresh ids, one
/// fresh epoch (from the user's epoch store), `seq` from 0, the time of re-emission. The recorded `(epoch, seq)`
/// order is kept within a session after a `(source, id)` dedupe; sessions interleave by
/// recorded time. `cause` and `subject` are rewritten to the new ids, so causal chains
/// and attention requests still resolve. The extension attributes `aepreplayof` (the
/// recorded session), `aepreplayid` (the recorded id) and `aepreplaytime` (the recorded
/// time) carry the trail home. Commands are never replayed: a replay must not drive a
/// live agent. Agent-scoped events (no session) and events written into another
/// emitter's session (`attention.routed`) are skipped too.
///
/// Exit 0 emitted (or planned, with --dry-run); 1 aborted; 2 usage; 5 the relay is
/// unreachable or refuses; 6 the capture cannot be read or holds a line that is not an
/// event.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The capture (JSONL); `-` reads stdin.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    relay: RelayArgs,
    /// Replay this many times faster than recorded (2 halves every pause).
    #[arg(long, value_name = "N", default_value_t = 1.0, value_parser = speed)]
    speed: f64,
    /// Longest pause between two events, in milliseconds (dead air is cut).
    #[arg(long, value_name = "MS", value_parser = millis)]
    max_gap: Option<Duration>,
    /// Print the plan (JSON on stdout) and send nothing.
    #[arg(long)]
    dry_run: bool,
}

fn speed(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && !v.is_nan() => Ok(v),
        _ => Err(format!(
            "`{text}` is not a speed above 0 (1 is as recorded)"
        )),
    }
}

/// One recorded session and its replay.
struct Group {
    source: String,
    session: String,
    replay: String,
    events: Vec<Event>,
}

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let path = args.file.clone();
    let recorded = tokio::task::spawn_blocking(move || crate::input::read_events(&path))
        .await
        .map_err(|e| Failure::input(format!("the reading thread failed: {e}")))??;
    let total = recorded.len();
    let (groups, skipped) = plan(recorded);
    let order = interleave(&groups);
    let pauses = pauses(&groups, &order, args.speed, args.max_gap);
    let span: Duration = pauses.iter().sum();
    let summary = |sent: Option<usize>| {
        json!({
            "recorded": total,
            "skipped_commands": skipped.commands,
            "skipped_agent_scoped": skipped.agent,
            "skipped_foreign": skipped.foreign,
            "duplicates": skipped.duplicates,
            "sessions": groups.iter().map(|g| json!({
                "source": g.source, "session": g.session, "replay": g.replay, "events": g.events.len(),
            })).collect::<Vec<_>>(),
            "replay_seconds": (span.as_secs_f64() * 1000.0).round() / 1000.0,
            "sent": sent,
        })
    };
    if args.dry_run {
        crate::term::print_json_pretty(&summary(None));
        term::note(format!(
            "dry run: {} events of {} sessions would be replayed over {:.1} s; nothing sent",
            order.len(),
            groups.len(),
            span.as_secs_f64()
        ));
        return Ok(Exit::Success);
    }
    crate::probe::discovery(&args.relay).await?;
    let reports = Arc::new(Reports::default());
    let give_up_after = Duration::from_secs(30);
    let sink = Shared(Arc::new(http_sink(
        &args.relay,
        1000,
        give_up_after,
        &reports,
    )?));
    let sessions: Vec<SessionEmitter> = groups
        .iter()
        .map(|g| {
            let first = &g.events[0];
            crate::epochs::from_store(Emitter::builder(first.agent(), host_of(first.source())))
                .capture(Capture::Full)
                .build(sink.clone())
                .session(&g.replay)
        })
        .collect();
    let mut ids: Vec<HashMap<String, String>> = vec![HashMap::new(); groups.len()];
    let mut sent = 0usize;
    let bar = term::progress(None);
    let mut abort = None;
    for (&(g, i), pause) in order.iter().zip(&pauses) {
        if !pause.is_zero() {
            tokio::time::sleep(*pause).await;
        }
        // waits for room in the sink rather than dropping (AEP-0003 §8.4)
        let permit = match sessions[g].reserve().await {
            Ok(permit) => permit,
            Err(e) => {
                abort = Some(Failure::relay(format!(
                    "{}: delivery stopped: {}",
                    args.relay.base(),
                    describe(&e)
                )));
                break;
            }
        };
        let recorded = &groups[g].events[i];
        match replay_one(permit, recorded, &groups[g], &ids[g]) {
            Ok(new_id) => {
                ids[g].insert(recorded.id().to_owned(), new_id);
                sent += 1;
                bar.inc(1);
                bar.set_message(format!("{sent} events"));
            }
            Err(why) => {
                abort = Some(Failure::new(
                    Exit::Findings,
                    format!(
                        "replay aborted at recorded event {} of session {}: {why}",
                        recorded.id(),
                        groups[g].session
                    ),
                ));
                break;
            }
        }
        if let Err(f) = reports.check(&args.relay) {
            abort = Some(f);
            break;
        }
    }
    // the sink itself, not `Shared`, whose close is an emitter's and only flushes
    crate::deliver::close(&*sink.0, abort.is_some(), give_up_after).await;
    bar.finish_and_clear();
    crate::term::print_json_pretty(&summary(Some(sent)));
    if let Some(f) = abort {
        return Err(f);
    }
    reports.check(&args.relay)?;
    for g in &groups {
        term::note(format!("{} ({}) -> {}", g.session, g.source, g.replay));
    }
    Ok(Exit::Success)
}

#[derive(Debug, Default)]
struct Skipped {
    commands: usize,
    foreign: usize,
    agent: usize,
    duplicates: usize,
}

/// Groups by `(source, session)` in order of first appearance, drops commands,
/// agent-scoped events and `(source, id)` repeats, and sorts each group by its recorded
/// `(epoch, seq)`.
fn plan(recorded: Vec<Event>) -> (Vec<Group>, Skipped) {
    let mut skipped = Skipped::default();
    let mut seen = HashSet::new();
    let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut groups: Vec<Group> = Vec::new();
    let now = SystemTime::now();
    for e in recorded {
        // The SDK's emit-scope rule: the emitter refuses both, so they are counted here
        // rather than abort the replay.
        match emit_scope(e.event_type()) {
            Ok(EmitScope::Command) => {
                skipped.commands += 1;
                continue;
            }
            // written into another emitter's session without seq (AEP-0001 §5.2): not
            // this replay's to forge
            Ok(EmitScope::Foreign) => {
                skipped.foreign += 1;
                continue;
            }
            _ => {}
        }
        let Some(session) = e.session().map(str::to_owned) else {
            skipped.agent += 1;
            continue;
        };
        if !seen.insert((e.source().to_owned(), e.id().to_owned())) {
            skipped.duplicates += 1;
            continue;
        }
        let key = (e.source().to_owned(), session.clone());
        let g = *index.entry(key).or_insert_with(|| {
            groups.push(Group {
                source: e.source().to_owned(),
                session,
                replay: format!("replay-{}", new_ulid(now)),
                events: Vec::new(),
            });
            groups.len() - 1
        });
        groups[g].events.push(e);
    }
    for g in &mut groups {
        g.events
            .sort_by_key(|e| (e.epoch(), e.seq().unwrap_or(u64::MAX)));
    }
    (groups, skipped)
}

/// The order of emission: within a group its recorded order, across groups the earliest
/// recorded time first (a merge; an unreadable time sorts as early as can be).
fn interleave(groups: &[Group]) -> Vec<(usize, usize)> {
    let mut next = vec![0usize; groups.len()];
    let mut out = Vec::with_capacity(groups.iter().map(|g| g.events.len()).sum());
    loop {
        let pick = groups
            .iter()
            .enumerate()
            .filter(|(g, group)| next[*g] < group.events.len())
            .min_by_key(|(g, group)| {
                unix_nanos(group.events[next[*g]].time()).unwrap_or(i128::MIN)
            });
        let Some((g, _)) = pick else { break };
        out.push((g, next[g]));
        next[g] += 1;
    }
    out
}

/// The pause before each event: the recorded gap over `speed`, capped by `max_gap`.
fn pauses(
    groups: &[Group],
    order: &[(usize, usize)],
    speed: f64,
    max_gap: Option<Duration>,
) -> Vec<Duration> {
    let mut last: Option<i128> = None;
    order
        .iter()
        .map(|&(g, i)| {
            let t = unix_nanos(groups[g].events[i].time());
            let gap = match (last, t) {
                (Some(a), Some(b)) if b > a => {
                    Duration::from_nanos(u64::try_from(b - a).unwrap_or(u64::MAX))
                }
                _ => Duration::ZERO,
            };
            if t.is_some() {
                last = t;
            }
            let scaled =
                Duration::try_from_secs_f64(gap.as_secs_f64() / speed).unwrap_or(Duration::MAX);
            max_gap.map_or(scaled, |cap| scaled.min(cap))
        })
        .collect()
}

/// Re-emits one recorded event into the place `permit` holds in its replay session;
/// returns the new id.
fn replay_one(
    permit: EmitPermit<'_>,
    e: &Event,
    group: &Group,
    ids: &HashMap<String, String>,
) -> Result<String, String> {
    let map = |id: &str| ids.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let mut opts = EmitOptions::new()
        .severity(e.severity())
        .capture(e.capture())
        .extension("aepreplayof", group.session.as_str())
        .extension("aepreplayid", e.id())
        .extension("aepreplaytime", e.time());
    if let Some(v) = e.subject() {
        opts = opts.subject(map(v));
    }
    if let Some(v) = e.cause() {
        opts = opts.cause(map(v));
    }
    if let Some(v) = e.run() {
        opts = opts.run(v);
    }
    if let Some(v) = e.step() {
        opts = opts.step(v);
    }
    if let Some(v) = e.traceparent() {
        opts = opts.traceparent(v);
    }
    for (name, raw) in e.extensions() {
        if !name.starts_with("aepreplay") {
            let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            opts = opts.extension(name, value);
        }
    }
    let data = e.data().unwrap_or_else(|| json!({}));
    permit
        .emit_with(e.event_type(), data, opts)
        .map(|new| new.id().to_owned())
        .map_err(|err| err.to_string())
}

/// The host of an `aep://HOST/agent/..` source, or this machine's.
fn host_of(source: &str) -> String {
    SourceUri::host_of(source).map_or_else(crate::host, str::to_owned)
}
