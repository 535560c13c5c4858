//! Where `project` and `timeline` read events from: a JSONL file (or stdin), or one
//! history pass over a relay (`live=0`, from everything it holds).

use std::path::Path;

use aep::protocol::Event;
use aep::SubscribeOptions;
use futures::StreamExt;
use serde_json::Value;

use crate::args::RelayArgs;
use crate::cmd::tail::Watch;
use crate::exit::Failure;
use crate::input;

/// Every event of `file`, or of the relay's history matching `filter`.
pub async fn events(
    file: Option<&Path>,
    relay: &RelayArgs,
    filter: Value,
) -> Result<Vec<Event>, Failure> {
    match file {
        Some(path) => {
            let path = path.to_owned();
            tokio::task::spawn_blocking(move || input::read_events(&path))
                .await
                .map_err(|e| Failure::input(format!("the reading thread failed: {e}")))?
        }
        None => history(relay, filter).await,
    }
}

/// One history pass over the relay (SSE, `from=all`, `live=0`).
pub async fn history(relay: &RelayArgs, filter: Value) -> Result<Vec<Event>, Failure> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut opts = SubscribeOptions::new()
        .filter(filter)
        .from_all()
        .history_only()
        .on_notice(move |n| {
            let _ = tx.send(n);
        });
    if let Some(t) = relay.token() {
        opts = opts.token(t);
    }
    let mut watch = Watch::new(relay.base());
    let mut sub = aep::subscribe(relay.base(), opts);
    let mut events = Vec::new();
    loop {
        tokio::select! {
            biased;
            Some(notice) = rx.recv() => {
                if let Some(f) = watch.notice(notice) {
                    return Err(f);
                }
            }
            event = sub.next() => match event {
                Some(e) => events.push(e),
                None => break,
            },
        }
    }
    while let Ok(notice) = rx.try_recv() {
        if let Some(f) = watch.notice(notice) {
            return Err(f);
        }
    }
    if !watch.complete {
        return Err(watch.unfinished());
    }
    Ok(events)
}
