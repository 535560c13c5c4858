//! One session as the fold keeps it, [`SessionAcc`], and the fold-ordered, keyed
//! collections it keeps its runs, requests and tool calls in, [`Ordered`]: written by
//! the fold (`fold`), read in place by a list (`summary`) and snapshotted.

use super::supervise::{millis_between, Activity, Claim, ToolBits, ToolCalls};
use super::{PendingAttention, ProjectedRun, ProjectedSession, ProjectedTool, ToolStatus};
use crate::resume::Position;
use crate::{Event, FastMap};

/// Entries kept in fold order and found by key: a linear scan while few, a hash index
/// once many, so a session with thousands of runs or requests stays linear overall.
/// Removal leaves a hole until holes outnumber entries.
#[derive(Debug)]
pub(super) struct Ordered<T> {
    slots: Vec<Option<T>>,
    live: usize,
    index: Option<FastMap<Box<str>, usize>>,
}

pub(super) trait Keyed {
    fn key(&self) -> &str;
}

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered {
            slots: Vec::new(),
            live: 0,
            index: None,
        }
    }
}

impl<T: Keyed> Ordered<T> {
    const SCAN: usize = 16;

    pub(super) fn find(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self
                .slots
                .iter()
                .position(|s| s.as_ref().is_some_and(|t| t.key() == key)),
        }
    }

    pub(super) fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        self.slots.get_mut(at).and_then(Option::as_mut)
    }

    pub(super) fn push(&mut self, item: T) {
        if let Some(index) = &mut self.index {
            index.insert(item.key().into(), self.slots.len());
        }
        self.slots.push(Some(item));
        self.live += 1;
        if self.index.is_none() && self.slots.len() > Self::SCAN {
            self.reindex();
        }
    }

    pub(super) fn remove(&mut self, key: &str) {
        let Some(at) = self.find(key) else {
            return;
        };
        if let Some(slot) = self.slots.get_mut(at) {
            *slot = None;
            self.live -= 1;
        }
        if let Some(index) = &mut self.index {
            index.remove(key);
        }
        if self.slots.len() > Self::SCAN && self.live * 2 < self.slots.len() {
            self.slots.retain(Option::is_some);
            self.reindex();
        }
    }

    fn reindex(&mut self) {
        self.index = (self.slots.len() > Self::SCAN).then(|| {
            self.slots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.as_ref().map(|t| (t.key().into(), i)))
                .collect()
        });
    }

    pub(super) fn len(&self) -> usize {
        self.live
    }

    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }
}

impl Keyed for ProjectedRun {
    fn key(&self) -> &str {
        &self.run
    }
}

impl Keyed for PendingAttention {
    fn key(&self) -> &str {
        &self.id
    }
}

impl Keyed for ProjectedTool {
    fn key(&self) -> &str {
        &self.call
    }
}

/// One session as the fold keeps it; read in place by [`SessionSummary`].
#[derive(Debug)]
pub(super) struct SessionAcc {
    pub(super) source: u32,
    pub(super) session: Box<str>,
    pub(super) agent: Box<str>,
    pub(super) started: Option<Box<str>>,
    pub(super) ended: Option<Box<str>>,
    pub(super) position: Option<Position>,
    pub(super) runs: Ordered<ProjectedRun>,
    /// How many of `runs` are running: the status without a scan of the runs.
    pub(super) running: usize,
    pub(super) pending: Ordered<PendingAttention>,
    pub(super) tools: Ordered<ProjectedTool>,
    /// The call of each tool event, for pairing and for the `cause` of a request.
    pub(super) tool_ids: ToolCalls,
    pub(super) last: Option<Activity>,
}

impl SessionAcc {
    /// The snapshot of this session, its `source` spelled `source` and its roster
    /// claim `claim`.
    pub(super) fn snapshot(&self, source: &str, claim: Option<Claim>) -> ProjectedSession {
        ProjectedSession {
            source: source.to_owned(),
            session: self.session.to_string(),
            agent: self.agent.to_string(),
            started: self.started.as_deref().map(str::to_owned),
            ended: self.ended.as_deref().map(str::to_owned),
            position: self.position,
            runs: self.runs.iter().cloned().collect(),
            pending: self.pending.iter().cloned().collect(),
            tools: self.tools.iter().cloned().collect(),
            last_activity: self.last.clone(),
            claim,
        }
    }

    /// Folds a `tool.requested` or a tool terminal (`status`) into its call.
    pub(super) fn fold_tool(&mut self, event: &Event, status: Option<ToolStatus>) {
        let bits = ToolBits::of(event);
        let (name, call_id) = match bits.tool {
            Some(t) => (t.name, t.call_id),
            None => (None, None),
        };
        let call = self.tool_ids.key_with(event, status.is_some(), call_id);
        let time = event.time();
        match self.tools.find(&call).and_then(|at| self.tools.get_mut(at)) {
            None => self.tools.push(ProjectedTool {
                call: call.into(),
                name: name
                    .or_else(|| event.subject().map(str::to_owned))
                    .unwrap_or_default(),
                status: status.unwrap_or(ToolStatus::Requested),
                run: event.run().map(str::to_owned),
                requested: status.is_none().then(|| time.to_owned()),
                ended: status.map(|_| time.to_owned()),
                duration_ms: bits.duration_ms,
                gated_by: Vec::new(),
                ids: vec![event.id().to_owned()],
            }),
            Some(tool) => {
                tool.ids.push(event.id().to_owned());
                match status {
                    // a second tool.requested for a known call: the first stays
                    None => {
                        if tool.requested.is_none() {
                            tool.requested = Some(time.to_owned());
                        }
                    }
                    // the first terminal closes it; a later one changes nothing
                    Some(status) if tool.status == ToolStatus::Requested => {
                        tool.status = status;
                        tool.ended = Some(time.to_owned());
                        tool.duration_ms = bits.duration_ms.or_else(|| {
                            tool.requested
                                .as_deref()
                                .and_then(|r| millis_between(r, time))
                        });
                    }
                    Some(_) => {}
                }
            }
        }
    }

    /// The tool call an `attention.requested` gates: the one its `cause` names, else
    /// the latest open call of the same run whose name is its `subject`.
    pub(super) fn gated_call(&self, event: &Event) -> Option<Box<str>> {
        if let Some(call) = event.cause().and_then(|c| self.tool_ids.call_of(c)) {
            return Some(call.into());
        }
        let subject = event.subject()?;
        let open = self.tools.iter().filter(|t| {
            t.status == ToolStatus::Requested
                && t.name == subject
                && t.run.as_deref() == event.run()
        });
        open.last().map(|t| t.call.as_str().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_stays_in_order_across_index_and_holes() {
        let mut o: Ordered<PendingAttention> = Ordered::default();
        let p = |i: usize| PendingAttention {
            id: format!("q{i}"),
            kind: None,
            since: String::new(),
            request: Default::default(),
        };
        for i in 0..100 {
            o.push(p(i));
        }
        for i in (0..100).filter(|i| i % 3 != 0) {
            o.remove(&format!("q{i}"));
        }
        o.remove("absent");
        let ids: Vec<&str> = o.iter().map(|p| p.id.as_str()).collect();
        let want: Vec<String> = (0..100)
            .filter(|i| i % 3 == 0)
            .map(|i| format!("q{i}"))
            .collect();
        assert_eq!(ids, want);
        assert_eq!(o.len(), 34);
        assert_eq!(
            o.find("q99"),
            Some(
                o.slots
                    .iter()
                    .position(|s| s.as_ref().is_some_and(|p| p.id == "q99"))
                    .unwrap()
            )
        );
    }
}
