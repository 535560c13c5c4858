//! The bounded, order-keeping queue shared by the network sinks (AEP-0003 §8.4).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use aep_core::{Event, Severity};
use tokio::sync::{watch, Notify};

use super::{DeliveryReport, DeliveryStats, ReportHandler};
use crate::error::EmitError;

pub(crate) fn default_handler() -> ReportHandler {
    Arc::new(|report| tracing::warn!(%report, "aep delivery"))
}

/// One serialized event waiting in the outbox.
#[derive(Debug)]
pub(crate) struct Line {
    pub(crate) severity: Severity,
    pub(crate) json: Vec<u8>,
}

#[derive(Debug, Default)]
struct OutboxState {
    // Slots in acceptance order; a dropped slot becomes `None` so order is kept
    // without shifting.
    items: VecDeque<Option<Line>>,
    head: u64,
    droppable: VecDeque<u64>,
    live: usize,
    bytes: usize,
    stats: DeliveryStats,
    closed: bool,
    urgent: bool,
}

/// The bounded, order-keeping queue between `accept` and a delivery task.
pub(crate) struct Outbox {
    state: Mutex<OutboxState>,
    capacity: usize,
    wake: Notify,
    settled: watch::Sender<u64>,
    pub(crate) report: ReportHandler,
    wake_events: usize,
    wake_bytes: usize,
}

impl fmt::Debug for Outbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbox")
            .field("capacity", &self.capacity)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Outbox {
    pub(crate) fn new(capacity: usize, report: ReportHandler) -> Self {
        Outbox {
            state: Mutex::new(OutboxState::default()),
            capacity: capacity.max(1),
            wake: Notify::new(),
            settled: watch::channel(0).0,
            report,
            wake_events: 1,
            wake_bytes: usize::MAX,
        }
    }

    /// Wake the delivery task only when the queue becomes non-empty or reaches a full
    /// batch, not on every event: a task woken per event spends its CPU on wake-ups.
    #[cfg(feature = "http")]
    pub(crate) fn wake_at(mut self, events: usize, bytes: usize) -> Self {
        self.wake_events = events.max(1);
        self.wake_bytes = bytes.max(1);
        self
    }

    fn lock(&self) -> MutexGuard<'_, OutboxState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn stats(&self) -> DeliveryStats {
        self.lock().stats
    }

    pub(crate) fn push(&self, event: &Event) -> Result<(), EmitError> {
        // most events serialize to 300-600 bytes: one allocation, no regrowth
        let mut json = Vec::with_capacity(640);
        event.write_json(&mut json);
        let line = Line {
            severity: event.severity(),
            json,
        };
        let mut dropped = None;
        let wake;
        {
            let mut st = self.lock();
            if st.closed {
                return Err(EmitError::Closed);
            }
            st.stats.accepted += 1;
            if st.live >= self.capacity {
                let queued = match Self::drop_oldest_droppable(&mut st) {
                    Some(sev) => Some(sev),
                    None if line.severity.is_droppable() => None,
                    // Nothing droppable anywhere: the oldest event goes, and is
                    // reported, never silently (AEP-0003 §8.4).
                    None => Some(Self::pop_front(&mut st).map_or(line.severity, |l| l.severity)),
                };
                st.stats.dropped += 1;
                let total = st.stats.dropped;
                match queued {
                    Some(sev) => dropped = Some((sev, total)),
                    None => {
                        drop(st);
                        self.settle_report(Some((line.severity, total)));
                        return Ok(());
                    }
                }
            }
            let abs = st.head + st.items.len() as u64;
            if line.severity.is_droppable() {
                st.droppable.push_back(abs);
            }
            st.live += 1;
            st.bytes += line.json.len() + 1;
            st.items.push_back(Some(line));
            wake = st.live == 1 || st.live >= self.wake_events || st.bytes >= self.wake_bytes;
        }
        self.settle_report(dropped);
        if wake {
            self.wake.notify_one();
        }
        Ok(())
    }

    fn settle_report(&self, dropped: Option<(Severity, u64)>) {
        if let Some((severity, total)) = dropped {
            tracing::debug!(%severity, total, "outbox full: dropped an event (AEP-0003 §8.4)");
            (self.report)(DeliveryReport::Dropped { severity, total });
            self.settled.send_modify(|n| *n += 1);
        }
    }

    fn drop_oldest_droppable(st: &mut OutboxState) -> Option<Severity> {
        while let Some(abs) = st.droppable.pop_front() {
            let Some(idx) = abs.checked_sub(st.head) else {
                continue;
            };
            if let Some(slot) = st.items.get_mut(idx as usize) {
                if let Some(line) = slot.take() {
                    st.live -= 1;
                    st.bytes -= line.json.len() + 1;
                    return Some(line.severity);
                }
            }
        }
        None
    }

    fn pop_front(st: &mut OutboxState) -> Option<Line> {
        while let Some(slot) = st.items.pop_front() {
            st.head += 1;
            if let Some(line) = slot {
                st.live -= 1;
                st.bytes -= line.json.len() + 1;
                return Some(line);
            }
        }
        None
    }

    /// Takes up to `max_events` lines (and about `max_bytes`), in order.
    pub(crate) fn take(&self, max_events: usize, max_bytes: usize) -> Vec<Line> {
        let mut st = self.lock();
        let mut out = Vec::with_capacity(st.live.min(max_events));
        let mut size = 0;
        while out.len() < max_events {
            if !out.is_empty()
                && st.items.front().is_some_and(|s| {
                    s.as_ref()
                        .is_some_and(|l| size + l.json.len() + 1 > max_bytes)
                })
            {
                break;
            }
            match Self::pop_front(&mut st) {
                Some(line) => {
                    size += line.json.len() + 1;
                    out.push(line);
                }
                None => break,
            }
        }
        if st.droppable.front().is_some_and(|&a| a < st.head) {
            let head = st.head;
            st.droppable.retain(|&a| a >= head);
        }
        if st.live == 0 {
            st.urgent = false;
        }
        out
    }

    /// (live events, queued bytes, closed, urgent)
    pub(crate) fn level(&self) -> (usize, usize, bool, bool) {
        let st = self.lock();
        (st.live, st.bytes, st.closed, st.urgent)
    }

    pub(crate) async fn wait_for_work(&self) {
        loop {
            let notified = self.wake.notified();
            let (live, _, closed, _) = self.level();
            if live > 0 || closed {
                return;
            }
            notified.await;
        }
    }

    /// Woken when new events arrive, on flush and on close.
    #[cfg(feature = "http")]
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }

    pub(crate) fn settle(&self, delivered: u64, rejected: u64) {
        {
            let mut st = self.lock();
            st.stats.delivered += delivered;
            st.stats.rejected += rejected;
        }
        self.settled.send_modify(|n| *n += delivered + rejected);
    }

    pub(crate) async fn flush(&self) {
        let target = {
            let mut st = self.lock();
            st.urgent = true;
            st.stats.accepted
        };
        self.wake.notify_one();
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|&n| n >= target).await;
    }

    pub(crate) async fn close(&self) {
        self.mark_closed();
        self.flush().await;
    }

    pub(crate) fn mark_closed(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }

    /// Reports what is left when the delivery task is torn down by the runtime.
    pub(crate) fn abandon(&self) {
        let left = {
            let mut st = self.lock();
            let left = st.live as u64;
            st.items.clear();
            st.droppable.clear();
            st.live = 0;
            st.bytes = 0;
            st.stats.rejected += left;
            left
        };
        if left > 0 {
            (self.report)(DeliveryReport::Abandoned { events: left });
            self.settled.send_modify(|n| *n += left);
        }
    }
}

/// Calls [`Outbox::abandon`] when the delivery task's future is dropped before it
/// finished (runtime shutdown), so no accepted event disappears unreported.
pub(crate) struct AbandonGuard(pub(crate) Arc<Outbox>);

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(i: u64, sev: Severity) -> Event {
        Event::new(
            format!("{i}"),
            "tool.called",
            "t",
            "aep://h/agent/a/session/s",
            "a",
        )
        .with_seq(i)
        .with_severity(sev)
    }

    #[test]
    fn full_queue_drops_debug_info_first_and_counts() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let outbox = Outbox::new(
            3,
            Arc::new(move |r| {
                if let DeliveryReport::Dropped { severity, .. } = r {
                    s2.lock().unwrap().push(severity);
                }
            }),
        );
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        outbox.push(&ev(1, Severity::Info)).unwrap();
        outbox.push(&ev(2, Severity::Error)).unwrap();
        outbox.push(&ev(3, Severity::Warning)).unwrap(); // evicts #1 (info)
        outbox.push(&ev(4, Severity::Debug)).unwrap(); // no room, itself droppable
        let kept: Vec<_> = outbox
            .take(10, usize::MAX)
            .into_iter()
            .map(|l| Event::from_slice(&l.json).unwrap().seq().unwrap())
            .collect();
        assert_eq!(kept, vec![0, 2, 3]);
        assert_eq!(*seen.lock().unwrap(), vec![Severity::Info, Severity::Debug]);
        let stats = outbox.stats();
        assert_eq!((stats.accepted, stats.dropped), (5, 2));
    }

    #[test]
    fn full_of_notices_drops_oldest_reported() {
        let outbox = Outbox::new(2, Arc::new(|_| {}));
        for i in 0..3 {
            outbox.push(&ev(i, Severity::Error)).unwrap();
        }
        let kept: Vec<_> = outbox
            .take(10, usize::MAX)
            .into_iter()
            .map(|l| Event::from_slice(&l.json).unwrap().seq().unwrap())
            .collect();
        assert_eq!(kept, vec![1, 2]);
        assert_eq!(outbox.stats().dropped, 1);
    }

    #[test]
    fn take_respects_byte_budget_and_order() {
        let outbox = Outbox::new(100, Arc::new(|_| {}));
        for i in 0..10 {
            outbox.push(&ev(i, Severity::Info)).unwrap();
        }
        let one = outbox.take(100, 1);
        assert_eq!(one.len(), 1, "at least one line per batch");
        let rest = outbox.take(4, usize::MAX);
        assert_eq!(rest.len(), 4);
        assert_eq!(Event::from_slice(&rest[0].json).unwrap().seq(), Some(1));
    }
}
