//! Delivery to a relay over HTTP ingest: the SDK's `HttpSink`, with its reports turned
//! into what a command line says (a warning while it retries, exit 5 once the relay
//! refuses a batch or retries run out).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep::{DeliveryReport, HttpSink};

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
    lost: u64,
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
                st.lost += *events as u64;
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
                st.lost += *events as u64;
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

    /// Events lost so far.
    pub fn lost(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).lost
    }
}

/// An HTTP sink to the relay whose reports land in `reports`: batches of `batch`
/// events, retried for at most `give_up_after` before they are reported lost.
pub fn http_sink(
    relay: &RelayArgs,
    batch: usize,
    give_up_after: Duration,
    reports: &Arc<Reports>,
) -> Result<HttpSink, Failure> {
    let handler = reports.clone();
    let mut builder = HttpSink::builder(relay.base())
        .max_batch(batch)
        .give_up_after(Some(give_up_after))
        .on_report(move |r| handler.take(r));
    if let Some(t) = relay.token() {
        builder = builder.token(t);
    }
    builder
        .build()
        .map_err(|e| Failure::relay(format!("cannot start delivery: {}", describe(&e))))
}

/// One sink behind several emitters (a replay re-emits many sessions, each with its own
/// agent and epoch, over one connection). Closing is the owner's: call
/// [`Shared::close`] once, after every emitter is done.
#[derive(Debug, Clone)]
pub struct Shared(pub Arc<HttpSink>);

impl aep::Sink for Shared {
    fn accept(&self, event: &aep::protocol::Event) -> Result<(), aep::EmitError> {
        self.0.accept(event)
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

impl Shared {
    /// Closes the sink for every emitter on it: waits for delivery.
    pub async fn close(&self) {
        aep::Sink::close(&*self.0).await;
    }
}

/// Waits while more than half of a sink's queue (10 000 events by default) is still
/// undelivered, so a producer faster than the relay is held back instead of having its
/// events dropped.
pub async fn room(sink: &dyn aep::Sink) {
    while sink.stats().pending() >= 5_000 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
