//! The SSE transport (AEP-0003 §3.3): the reconnect/resume loop and the line parser.
//!
//! The parser is our own rather than eventsource-stream's because the protocol's markers
//! (`replay-exhausted`, `replay-complete`) travel as SSE comment lines (§3.3.3), which
//! that crate discards.

use std::sync::Arc;
use std::time::Duration;

use aep_core::resume::{encode_from, FromBudget, ResumePosition};
use aep_core::Event;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::{Notice, Shared, StartFrom, SubscribeOptions};
use crate::client::Link;
use crate::error::TransportError;
use crate::transport::Failover;
use aep_core::resume::{is_replay_complete_comment, parse_replay_exhausted_comment};

/// How one stream request ended, when it did not fail.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// `: replay-complete` arrived.
    Complete,
    /// The body ended without the marker (a live stream cut by the server).
    Eof,
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
            tracing::debug!(?delay, relay = self.failover.current(), "backing off");
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
        tracing::info!(
            resume,
            all,
            live,
            relay = self.failover.current(),
            "connected"
        );
        self.failover.succeeded();
        if live || terminal {
            self.shared.notify(Notice::Connected { resume, all });
        }
        let mut response = response;
        let mut parser = SseParser::default();
        let mut complete = false;
        loop {
            let chunk = tokio::select! {
                c = response.chunk() => c,
                _ = self.shared.cancel.cancelled() => return Ok(Ended::Cancelled),
            };
            let chunk = match chunk {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(TransportError::from_reqwest("stream read", e)),
            };
            let mut batch = Vec::new();
            parser.feed(&chunk, |item| match item {
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
            });
            self.shared.received(&batch);
            if !batch.is_empty() && self.tx.send(batch).await.is_err() {
                return Ok(Ended::Cancelled);
            }
            if complete {
                return Ok(Ended::Complete);
            }
        }
        Ok(if complete {
            Ended::Complete
        } else {
            Ended::Eof
        })
    }
}

/// One item of an SSE body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseItem<'a> {
    /// The joined `data:` lines of one message.
    Data(&'a [u8]),
    /// A comment line, without its colon and surrounding spaces.
    Comment(&'a str),
}

/// An incremental SSE parser: feed it body chunks in order.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
}

impl SseParser {
    pub(crate) fn feed(&mut self, mut chunk: &[u8], mut on: impl FnMut(SseItem<'_>)) {
        while !chunk.is_empty() {
            // memchr: a word at a time over what is mostly event JSON
            let Some(nl) = memchr::memchr(b'\n', chunk) else {
                self.line.extend_from_slice(chunk);
                return;
            };
            let (head, tail) = chunk.split_at(nl);
            chunk = tail.get(1..).unwrap_or_default();
            if self.line.is_empty() {
                self.handle_line(head, &mut on);
            } else {
                self.line.extend_from_slice(head);
                let line = std::mem::take(&mut self.line);
                self.handle_line(&line, &mut on);
                self.line = line;
                self.line.clear();
            }
        }
    }

    fn handle_line(&mut self, line: &[u8], on: &mut impl FnMut(SseItem<'_>)) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if self.has_data {
                on(SseItem::Data(&self.data));
                self.data.clear();
                self.has_data = false;
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(b":") {
            let text = String::from_utf8_lossy(comment);
            on(SseItem::Comment(text.trim()));
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        // `event:` repeats the type and `id:` the position (§3.3.2); both are read
        // from the event itself, and resume uses `from`, which takes precedence.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]]) -> Vec<String> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, |item| {
                out.push(match item {
                    SseItem::Data(d) => format!("D{}", String::from_utf8_lossy(d)),
                    SseItem::Comment(c) => format!("C{c}"),
                })
            });
        }
        out
    }

    #[test]
    fn parses_across_chunk_boundaries() {
        let out = collect(&[
            b"event: a.b\nda",
            b"ta: {\"x\":1}\nid: s:0:1\n\n: replay-exh",
            b"austed s 0:5\r\n\r\ndata:one\ndata: two\n\n",
        ]);
        assert_eq!(
            out,
            vec![
                "D{\"x\":1}".to_owned(),
                "Creplay-exhausted s 0:5".to_owned(),
                "Done\ntwo".to_owned()
            ]
        );
    }

    #[test]
    fn blank_lines_without_data_emit_nothing() {
        assert!(collect(&[b"\n\n\nid: x\n\n"]).is_empty());
    }
}
