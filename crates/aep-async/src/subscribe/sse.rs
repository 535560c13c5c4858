//! The SSE transport (AEP-0003 §3.3): the reconnect/resume loop over core's bounded
//! [`SseDecoder`] (the protocol's markers travel as comment lines, §3.3 rule 3, which a
//! generic SSE client discards).
//!
//! What the relay sends is bounded by the subscription's [`ReadLimits`](crate::ReadLimits):
//! a line or an event past its bound, an answer that is not `text/event-stream`, a
//! stream cut in the middle of an event and a stream silent past the idle timeout each
//! end the request with an error, reported as a [`Notice::Error`], and the loop
//! reconnects on its backoff. A connection counts as working (the backoff starts over)
//! only once it has brought a complete message or comment.

use std::sync::Arc;
use std::time::Duration;

use aep_core::resume::{encode_from, FromBudget, ResumePosition};
use aep_core::resume::{is_replay_complete_comment, parse_replay_exhausted_comment};
use aep_core::sse::{SseDecoder, SseItem};
use aep_core::Event;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::{Notice, Shared, StartFrom, SubscribeOptions};
use crate::client::Link;
use crate::error::TransportError;
use crate::limits::LimitExceeded;
use crate::transport::idle::{Idle, IdleTimer};
use crate::transport::Failover;

/// How one stream request ended, when it did not fail.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// `: replay-complete` arrived.
    Complete,
    /// The body ended between two messages, without the marker (a live stream ended
    /// by the server); `progressed` when it brought a complete message or comment first.
    Eof { progressed: bool },
    /// The subscription was closed, or its receiver dropped.
    Cancelled,
}

enum FromArg<'a> {
    None,
    All,
    Positions(&'a [ResumePosition]),
}

pub(super) struct SseTask {
    /// The relay to connect to now, among the subscription's relays.
    failover: Failover,
    /// The token and the connect timeout.
    link: Link,
    opts: SubscribeOptions,
    shared: Arc<Shared>,
    tx: mpsc::Sender<Vec<Event>>,
    client: reqwest::Client,
}

impl SseTask {
    pub(super) fn new(
        link: Link,
        client: reqwest::Client,
        opts: SubscribeOptions,
        shared: Arc<Shared>,
        tx: mpsc::Sender<Vec<Event>>,
    ) -> Self {
        SseTask {
            failover: Failover::new(link.relays.clone(), link.backoff),
            link,
            opts,
            shared,
            tx,
            client,
        }
    }

    pub(super) async fn run(mut self) {
        let span = tracing::info_span!("aep_subscribe", transport = "sse", relays = %self.failover.relays());
        async move {
            self.main_loop().await;
            tracing::debug!("subscription ended");
        }
        .instrument(span)
        .await
    }

    fn cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled() || self.tx.is_closed()
    }

    async fn main_loop(&mut self) {
        let live = self.opts.live;
        let budget = FromBudget::new(self.opts.from_budget, self.opts.max_replay_chunks);
        let mut pending_all = self.opts.from == StartFrom::All;
        let mut from_cap: Option<usize> = None;
        let mut attempt = 0u32;
        while !self.cancelled() {
            let positions = self.shared.resume_positions();
            // `from=all` rides the first request only; once positions exist they govern.
            let use_all = pending_all && positions.is_empty();
            let none: &[ResumePosition] = &[];
            let plan = budget.plan(if use_all { none } else { &positions }, from_cap);
            let head = plan.live();
            let sent_from = head.len();
            if attempt > 0 {
                tracing::info!(attempt, resume = sent_from, "reconnecting");
            }
            // Older positions that did not fit drain through bounded replay-only
            // requests first; a failed chunk costs that history, never the live pipe.
            for chunk in plan.chunks() {
                if self.cancelled() {
                    break;
                }
                tracing::debug!(positions = chunk.len(), "draining resume chunk");
                if let Err(e) = self
                    .stream_once(FromArg::Positions(chunk), false, false)
                    .await
                {
                    self.shared.notify(Notice::Error(e));
                    break;
                }
            }
            if !plan.unsent().is_empty() {
                tracing::warn!(
                    left = plan.unsent().len(),
                    "resume set larger than max_replay_chunks allows; oldest sessions not replayed"
                );
            }
            let from = if use_all {
                FromArg::All
            } else if head.is_empty() {
                FromArg::None
            } else {
                FromArg::Positions(head)
            };
            let result = self.stream_once(from, live, !live).await;
            attempt += 1;
            let delay = match result {
                Ok(Ended::Cancelled) => break,
                Ok(Ended::Eof { progressed: false }) if live => {
                    // Headers and then nothing: a relay that does so every time is
                    // retried on the backoff, as any failure, and reported.
                    self.shared
                        .notify(Notice::Error(TransportError::network_msg(format!(
                            "the relay at {} ended the stream before sending anything",
                            self.failover.shown()
                        ))));
                    self.failover.failed()
                }
                Ok(ended) => {
                    pending_all = false;
                    if !live {
                        if ended == Ended::Complete {
                            self.shared.notify(Notice::ReplayComplete);
                        }
                        break;
                    }
                    // The relay ended the stream in order: back to it after the first
                    // delay; if it is going away, that attempt fails over.
                    self.shared
                        .notify(Notice::Error(TransportError::network_msg(format!(
                            "the relay at {} ended the stream",
                            self.failover.shown()
                        ))));
                    self.failover.pause()
                }
                Err(e) => {
                    let refused = e.is_client_refusal();
                    self.shared.notify(Notice::Error(e));
                    if refused && use_all {
                        // The endpoint does not implement `from=all` (AEP-0003 §5):
                        // continue live-only.
                        pending_all = false;
                        self.shared.notify(Notice::AllRefused);
                        self.pause(Duration::from_millis(150)).await;
                        continue;
                    }
                    if refused && sent_from > 0 {
                        // Resume is an optimisation: a relay capping `from` gets a
                        // smaller set rather than the same refusal forever. Network
                        // errors keep the full set for when the relay returns.
                        let cap = sent_from / 2;
                        from_cap = Some(cap);
                        self.shared.notify(Notice::ResumeShrunk { cap });
                        self.pause(Duration::from_millis(150)).await;
                        continue;
                    }
                    // Unreachable, a 5xx, or a stream cut: the next relay, if any. A
                    // history pass tries each relay once before it ends.
                    let delay = self.failover.failed();
                    if !live && self.failover.exhausted() {
                        break;
                    }
                    delay
                }
            };
            if self.cancelled() {
                break;
            }
            tracing::debug!(?delay, relay = %self.failover.shown(), "backing off");
            self.pause(delay).await;
        }
    }

    async fn pause(&self, d: Duration) {
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = self.shared.cancel.cancelled() => {}
        }
    }

    fn url(&self, from: &FromArg<'_>, live: bool) -> Result<reqwest::Url, TransportError> {
        let base = self
            .failover
            .current()
            .ok_or_else(|| TransportError::network_msg("no relay URL to subscribe to"))?;
        let mut url = reqwest::Url::parse(&aep_core::binding::stream_url(base))
            .map_err(|e| TransportError::network(format!("bad relay URL `{base}`"), e))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("filter", &self.opts.filter.to_string());
            if let Some(c) = self.opts.capture {
                q.append_pair("capture", c.as_str());
            }
            if !live {
                q.append_pair("live", "0");
            }
        }
        match from {
            FromArg::None => {}
            FromArg::All => {
                url.query_pairs_mut().append_pair("from", "all");
            }
            FromArg::Positions(ps) => {
                // The encoding the from-budget measures (AEP-0003 §3.3).
                let query = format!(
                    "{}&from={}",
                    url.query().unwrap_or_default(),
                    encode_from(ps)
                );
                url.set_query(Some(&query));
            }
        }
        Ok(url)
    }

    async fn stream_once(
        &mut self,
        from: FromArg<'_>,
        live: bool,
        terminal: bool,
    ) -> Result<Ended, TransportError> {
        let client = &self.client;
        let resume = match &from {
            FromArg::Positions(p) => p.len(),
            _ => 0,
        };
        let all = matches!(from, FromArg::All);
        let url = self.url(&from, live)?;
        let mut req = client
            .get(url)
            .header(reqwest::header::ACCEPT, aep_core::binding::SSE_CONTENT_TYPE);
        if let Some(t) = &self.link.token {
            req = req.bearer_auth(t);
        }
        let timeout = self.link.connect_timeout;
        // The deadline covers establishment only (until response headers); the body
        // may idle indefinitely between events.
        let response = tokio::select! {
            r = tokio::time::timeout(timeout, req.send()) => match r {
                Ok(Ok(res)) => res,
                Ok(Err(e)) => return Err(TransportError::from_reqwest("stream", e)),
                Err(_) => return Err(TransportError::timeout(format!(
                    "connect timeout after {} ms", timeout.as_millis()))),
            },
            _ = self.shared.cancel.cancelled() => return Ok(Ended::Cancelled),
        };
        let status = response.status();
        if !status.is_success() {
            return Err(TransportError::http(
                status.as_u16(),
                format!("stream request refused: {status}"),
            ));
        }
        check_event_stream(&response, &self.failover.shown())?;
        tracing::info!(
            resume,
            all,
            live,
            relay = %self.failover.shown(),
            "connected"
        );
        if live || terminal {
            self.shared.notify(Notice::Connected { resume, all });
        }
        let mut response = response;
        let limits = self.link.limits;
        let mut decoder = SseDecoder::new(limits.line(), limits.event());
        let mut idle = IdleTimer::new(limits.idle());
        let mut complete = false;
        let mut progressed = false;
        loop {
            let chunk = tokio::select! {
                biased;
                _ = self.shared.cancel.cancelled() => return Ok(Ended::Cancelled),
                c = response.chunk() => c,
                tick = idle.tick() => match tick {
                    // An SSE reader cannot ping: it waits for the relay's heartbeat.
                    Idle::Ping => continue,
                    Idle::Dead(e) => return Err(e),
                },
            };
            let chunk = match chunk {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(TransportError::from_reqwest("stream read", e)),
            };
            idle.heard();
            let mut batch = Vec::new();
            let mut items = 0usize;
            let fed = decoder.feed(&chunk, |item| {
                items += 1;
                match item {
                    SseItem::Data(data) => match Event::from_slice(data) {
                        Ok(ev) => batch.push(ev),
                        Err(e) => self.shared.notify(Notice::Error(TransportError::parse(
                            "undecodable SSE payload; dropped",
                            e,
                        ))),
                    },
                    SseItem::Comment(c) => {
                        if is_replay_complete_comment(c) {
                            // Only the subscriber-facing history pass ends the
                            // subscription; drain chunks end at their own marker.
                            complete = true;
                        } else if let Some(at) = parse_replay_exhausted_comment(c) {
                            self.shared.notify(Notice::ReplayExhausted {
                                session: at.session().to_owned(),
                                earliest: at.position(),
                            });
                        } else if c != "ping" && !c.is_empty() {
                            self.shared.notify(Notice::Comment(c.to_owned()));
                        }
                    }
                }
            });
            if items > 0 && !progressed {
                // The relay speaks SSE: the reconnect schedule starts over.
                progressed = true;
                self.failover.succeeded();
            }
            self.shared.received(&batch);
            if !batch.is_empty() {
                if self.tx.send(batch).await.is_err() {
                    return Ok(Ended::Cancelled);
                }
                // heard now, after the hand-over: the time the subscriber took to make
                // room was not the relay's silence
                idle.heard();
            }
            if let Err(e) = fed {
                return Err(TransportError::limit(LimitExceeded::from(e)));
            }
            if complete {
                return Ok(Ended::Complete);
            }
        }
        if decoder.is_mid_message() {
            return Err(TransportError::network_msg(format!(
                "the relay at {} cut the stream in the middle of an event; resuming after \
                 the last whole one",
                self.failover.shown()
            )));
        }
        Ok(if complete {
            Ended::Complete
        } else {
            Ended::Eof { progressed }
        })
    }
}

/// Refuses an answer that is not an SSE stream (a proxy's page, a web server at the
/// wrong address): read as one, its body would be lines that are never an event.
fn check_event_stream(response: &reqwest::Response, relay: &str) -> Result<(), TransportError> {
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let essence = content_type
        .as_deref()
        .and_then(|t| t.split(';').next())
        .map(str::trim);
    if essence.is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream")) {
        return Ok(());
    }
    Err(TransportError::network_msg(format!(
        "{relay} answered GET /stream with {}, not an SSE stream (text/event-stream): is it \
         the base URL of an AEP relay?",
        content_type.map_or_else(|| "no content type".to_owned(), |t| format!("`{t}`"))
    )))
}
