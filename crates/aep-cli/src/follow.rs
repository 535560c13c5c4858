//! Following a subscription (`tail`, `sink`, the history pass of `project` and
//! `timeline`): its events, what its notices say about the relay ([`Watch`]), SIGINT
//! and SIGTERM, and one debounced deadline (`tail`'s state saves, `sink`'s fsyncs).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use aep::protocol::Event;
use aep::{Notice, SubscribeOptions, Subscription, TransportErrorKind};
use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::args::RelayArgs;
use crate::exit::{describe, Failure};
use crate::term;

/// A subscription to a relay, followed until it ends, a notice ends the run, or the
/// process is asked to stop.
pub struct Follow {
    sub: Subscription,
    notices: mpsc::UnboundedReceiver<Notice>,
    /// What the notices said so far.
    pub watch: Watch,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    due: Option<Instant>,
}

impl std::fmt::Debug for Follow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follow")
            .field("watch", &self.watch)
            .finish()
    }
}

/// What [`Follow::next`] saw.
#[derive(Debug)]
pub enum Step {
    /// An event.
    Event(Event),
    /// The deadline set with [`Follow::due_in`] has come.
    Due,
    /// The end: the subscription ended or the process was asked to stop (`None`), or a
    /// notice ended the run (`Some`).
    End(Option<Failure>),
}

impl Follow {
    /// Subscribes at `relay` with `opts` (the token and the notice handler are added).
    pub fn start(relay: &RelayArgs, opts: SubscribeOptions) -> Follow {
        let (tx, notices) = mpsc::unbounded_channel();
        let opts = opts.on_notice(move |n| {
            let _ = tx.send(n);
        });
        Follow {
            sub: relay.client().subscribe(opts),
            notices,
            watch: Watch::new(relay.base()),
            shutdown: Box::pin(crate::signal::shutdown()),
            due: None,
        }
    }

    /// The next thing that happens; a stop request first, then notices, then events.
    pub async fn next(&mut self) -> Step {
        loop {
            tokio::select! {
                biased;
                () = &mut self.shutdown => return Step::End(None),
                Some(notice) = self.notices.recv() => {
                    if let Some(f) = self.watch.notice(notice) {
                        return Step::End(Some(f));
                    }
                }
                event = self.sub.next() => {
                    return event.map_or(Step::End(None), Step::Event);
                }
                () = sleep_until(self.due) => {
                    self.due = None;
                    return Step::Due;
                }
            }
        }
    }

    /// An event that is ready now, without waiting.
    pub fn ready(&mut self) -> Option<Event> {
        self.sub.next().now_or_never().flatten()
    }

    /// Sets the deadline `after` from now, unless one is set already.
    pub fn due_in(&mut self, after: Duration) {
        self.due.get_or_insert_with(|| Instant::now() + after);
    }

    /// Clears the deadline.
    pub fn not_due(&mut self) {
        self.due = None;
    }

    /// The subscription (its resume positions).
    pub fn subscription(&self) -> &Subscription {
        &self.sub
    }

    /// Closes the subscription; a notice that arrived meanwhile may still end the run.
    pub fn close(&mut self) -> Option<Failure> {
        self.sub.close();
        while let Ok(notice) = self.notices.try_recv() {
            if let Some(f) = self.watch.notice(notice) {
                return Some(f);
            }
        }
        None
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What the notices of a subscription say about the relay.
#[derive(Debug)]
pub struct Watch {
    url: String,
    /// A connection has been established once.
    pub connected: bool,
    /// The history pass reached `replay-complete`.
    pub complete: bool,
    last_error: Option<String>,
}

impl Watch {
    /// Watching the subscription to `url`.
    pub fn new(url: &str) -> Watch {
        Watch {
            url: url.to_owned(),
            connected: false,
            complete: false,
            last_error: None,
        }
    }

    /// Reports a notice; a relay that is unreachable before the first connection, or
    /// that refuses the token at any time, ends the run (exit 5).
    pub fn notice(&mut self, notice: Notice) -> Option<Failure> {
        match notice {
            Notice::Connected { .. } => self.connected = true,
            Notice::ReplayComplete => self.complete = true,
            Notice::ReplayExhausted { session, earliest } => term::warn(format!(
                "replay-exhausted: the relay no longer holds session {session} before ({}, {}); the events in between are gone from it, consult a durable capture (aep sink)",
                earliest.epoch(),
                earliest.seq()
            )),
            Notice::Error(e) => {
                let refused = matches!(e.kind(), TransportErrorKind::Http { status } if status == 401 || status == 403);
                let text = describe(&e);
                if refused {
                    return Some(Failure::relay(format!(
                        "the relay at {} refused the token ({text}); pass --token or set AEP_TOKEN",
                        self.url
                    )));
                }
                if matches!(e.kind(), TransportErrorKind::Parse) {
                    term::warn(format!("dropped a payload that is not an event: {text}"));
                } else if !self.connected {
                    return Some(Failure::relay(format!(
                        "cannot subscribe at {}: {text}",
                        self.url
                    )));
                } else {
                    term::warn(format!("connection to {} lost ({text}); resuming", self.url));
                }
                self.last_error = Some(text);
            }
            Notice::Refused { code, detail } => {
                return Some(Failure::relay(format!(
                    "the relay at {} refused the subscription: {code}{}",
                    self.url,
                    detail.map(|d| format!(": {d}")).unwrap_or_default()
                )))
            }
            Notice::AllRefused => {
                term::warn("the relay does not replay everything (from=all); following live only")
            }
            Notice::ResumeShrunk { cap } => term::warn(format!(
                "the relay refused the resume set; resuming the {cap} most recent sessions"
            )),
            Notice::Closing { reason } => term::note(format!("the relay is closing: {reason}")),
            _ => {}
        }
        None
    }

    /// A history pass that ended without `replay-complete`.
    pub fn unfinished(&self) -> Failure {
        Failure::relay(format!(
            "the history pass at {} ended before replay-complete{}",
            self.url,
            self.last_error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ))
    }
}
