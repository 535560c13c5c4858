//! Where `project` and `timeline` read events from: a JSONL file (or stdin), or one
//! history pass over a relay (`live=0`, from everything it holds).

use std::path::Path;

use aep::protocol::Event;
use aep::SubscribeOptions;
use serde_json::Value;

use crate::args::RelayArgs;
use crate::exit::Failure;
use crate::follow::{Follow, Step};
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
    let opts = SubscribeOptions::new()
        .filter(filter)
        .from_all()
        .history_only();
    let mut follow = Follow::start(relay, opts);
    let mut events = Vec::new();
    let failure = loop {
        match follow.next().await {
            Step::Event(e) => events.push(e),
            Step::End(failure) => break failure,
            Step::Due => {}
        }
    };
    if let Some(f) = follow.close().or(failure) {
        return Err(f);
    }
    if !follow.watch.complete {
        return Err(follow.watch.unfinished());
    }
    Ok(events)
}
