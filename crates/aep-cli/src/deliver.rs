//! Delivery to a relay over HTTP ingest: the SDK's `HttpSink`, with its reports turned
//! into what a command line says (a warning while it retries, exit 5 once the relay
//! refuses a batch or retries run out).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep::{DeliveryReport, HttpSink, HttpSinkOptions};

use crate::args::RelayArgs;
use crate::exit::{describe, Failure};
use crate::term;

/// What the sink reported, shared with its report handler.
#[derive(Debug, Default)]
pub struct Reports {
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    failure: Option<String>,
    retries: u64,
}

impl Reports {
    /// Takes one report from the sink.
    fn take(&self, report: DeliveryReport) {
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match &report {
            DeliveryReport::Retrying { .. } => {
                st.retries += 1;
                // the first retry says why; later ones would only repeat it
                if st.retries == 1 {
                    term::warn(format!("{report}"));
                }
            }
            DeliveryReport::Rejected { error, events } => {
                let why = match error.status() {
                    Some(401 | 403) => format!(
                        "the relay refused the token ({}); pass --token or set AEP_TOKEN",
                        describe(error)
                    ),
                    _ => format!("the relay refused {events} events: {}", describe(error)),
                };
                st.failure.get_or_insert(why);
            }
            DeliveryReport::GaveUp { error, events } => {
                st.failure.get_or_insert(format!(
                    "gave up on {events} events after retrying: {}",
                    describe(error)
                ));
            }
            DeliveryReport::Dropped { .. } | DeliveryReport::Abandoned { .. } => {
                st.failure.get_or_insert(format!("{report}"));
            }
            _ => term::warn(format!("{report}")),
        }
    }

    /// The first refusal or loss, as exit 5.
    pub fn check(&self, relay: &RelayArgs) -> Result<(), Failure> {
        let st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match &st.failure {
            Some(why) => Err(Failure::relay(format!("{}: {why}", relay.base()))),
            None => Ok(()),
        }
    }
}

/// An HTTP sink to the relay whose reports land in `reports`: batches of `batch`
/// events, each request given at most `give_up_after` (10 s when that is longer), and
/// retried for at most `give_up_after` before they are reported lost.
pub fn http_sink(
    relay: &RelayArgs,
    batch: usize,
    give_up_after: Duration,
    reports: &Arc<Reports>,
) -> Result<HttpSink, Failure> {
    let handler = reports.clone();
    let options = HttpSinkOptions::new()
        .batch(|b| b.max_items(batch))
        .retry(|r| r.give_up_after(Some(give_up_after)))
        // a request may not outlast the patience of the whole delivery
        .request_timeout(give_up_after.min(Duration::from_secs(10)))
        .on_report(move |r| handler.take(r));
    relay
        .client()
        .http_sink(options)
        .map_err(|e| Failure::relay(format!("cannot start delivery: {}", describe(&e))))
}

/// One sink behind several emitters (a replay re-emits many sessions, each with its own
/// agent and epoch, over one connection). Closing is the owner's: call [`close`] on the
/// `HttpSink` once, after every emitter is done.
#[derive(Debug, Clone)]
pub struct Shared(pub Arc<HttpSink>);

impl aep::Sink for Shared {
    fn accept(&self, event: &aep::protocol::Event) -> Result<(), aep::EmitError> {
        self.0.accept(event)
    }
    // the waiting path goes through to the one queue, so every emitter on it waits
    fn reserve(&self) -> aep::ReserveFuture<'_> {
        self.0.reserve()
    }
    fn accept_reserved(&self, event: &aep::protocol::Event) -> Result<(), aep::EmitError> {
        self.0.accept_reserved(event)
    }
    fn release(&self) {
        self.0.release()
    }
    fn flush(&self) -> aep::SinkFuture<'_> {
        self.0.flush()
    }
    fn close(&self) -> aep::SinkFuture<'_> {
        // an emitter's close only flushes: the sink is shared
        self.0.flush()
    }
    fn stats(&self) -> aep::DeliveryStats {
        self.0.stats()
    }
}

/// Closes a sink: waits for everything queued to be delivered or reported, unless the
/// run has `failed` already, when what is queued gets `patience` more and no more (a
/// relay that is gone would otherwise cost a request timeout per queued batch).
pub async fn close(sink: &dyn aep::Sink, failed: bool, patience: Duration) {
    if failed {
        let _ = tokio::time::timeout(patience, sink.close()).await;
    } else {
        sink.close().await;
    }
}
