//! The live subscriptions filed by what their filters pin (issue 32): an event is offered
//! to the subscriptions filed under its own session, agent and type category
//! (`aep_core::filter::Filter::pin`), and to those that pin nothing, so routing an event
//! costs what it can match, not every subscription of every socket.
//!
//! Filing is a superset: each subscription offered an event still decides it by its whole
//! filter (`delivery`), and core's guarantee is that a filter never matches an event
//! filed elsewhere. Each list keeps hub-id order, and the lists of one event are merged
//! in that order, so readers are offered an event in the order they were before.
//!
//! Fan-out reads a snapshot taken under the hub's lock; a change made meanwhile copies
//! only the lists it touches (each list is shared until written, `Arc::make_mut`), and
//! a snapshot costs a copy of the maps' entries, not of the subscriptions.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use aep_core::filter::PinAttr;

use super::Sub;

/// Subscriptions in hub-id order, shared between the index and its snapshots.
type List = Arc<Vec<Arc<Sub>>>;

type Lists = HashMap<Arc<str>, List, foldhash::fast::RandomState>;

/// The live subscriptions by what their filters pin.
#[derive(Clone, Default)]
pub(crate) struct Index {
    /// Per attribute, in [`PinAttr::ALL`] order: each key's subscriptions.
    pinned: [Lists; 3],
    /// The subscriptions whose filter pins nothing: offered every event.
    unpinned: List,
    len: usize,
}

impl fmt::Debug for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<usize> = self.pinned.iter().map(HashMap::len).collect();
        f.debug_struct("Index")
            .field("len", &self.len)
            .field("keys", &keys)
            .field("unpinned", &self.unpinned.len())
            .finish()
    }
}

fn slot(attr: PinAttr) -> usize {
    match attr {
        PinAttr::Session => 0,
        PinAttr::Agent => 1,
        PinAttr::Category => 2,
    }
}

/// Inserts `sub` in hub-id order (ids are taken before the hub's lock, so two
/// subscriptions may register out of order).
fn insert(list: &mut List, sub: &Arc<Sub>) {
    let list = Arc::make_mut(list);
    let at = list.partition_point(|s| s.id < sub.id);
    list.insert(at, sub.clone());
}

/// Removes subscription `id`; whether the list is empty now.
fn remove(list: &mut List, id: u64) -> bool {
    if let Ok(at) = list.binary_search_by_key(&id, |s| s.id) {
        Arc::make_mut(list).remove(at);
    }
    list.is_empty()
}

impl Index {
    /// Live subscriptions filed.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn add(&mut self, sub: &Arc<Sub>) {
        self.len += 1;
        match sub.reader.filter.pin() {
            None => insert(&mut self.unpinned, sub),
            Some(pin) => {
                let lists = &mut self.pinned[slot(pin.attr())];
                for key in pin.keys() {
                    let list = match lists.get_mut(*key) {
                        Some(list) => list,
                        None => lists.entry(Arc::from(*key)).or_default(),
                    };
                    insert(list, sub);
                }
            }
        }
    }

    /// Removes `sub`, filed where its filter (which never changes) filed it.
    pub(crate) fn remove(&mut self, sub: &Sub) {
        self.len = self.len.saturating_sub(1);
        match sub.reader.filter.pin() {
            None => {
                remove(&mut self.unpinned, sub.id);
            }
            Some(pin) => {
                let lists = &mut self.pinned[slot(pin.attr())];
                for key in pin.keys() {
                    if lists.get_mut(*key).is_some_and(|l| remove(l, sub.id)) {
                        lists.remove(*key);
                    }
                }
            }
        }
    }

    /// Whether any subscription pins `attr`: an event's key there is read only then.
    pub(crate) fn pins(&self, attr: PinAttr) -> bool {
        !self.pinned[slot(attr)].is_empty()
    }

    /// The subscriptions filed under `key` of `attr`.
    pub(crate) fn filed(&self, attr: PinAttr, key: &str) -> &[Arc<Sub>] {
        self.pinned[slot(attr)]
            .get(key)
            .map_or(&[], |l| l.as_slice())
    }

    /// The subscriptions that pin nothing.
    pub(crate) fn unpinned(&self) -> &[Arc<Sub>] {
        &self.unpinned
    }
}

/// The subscriptions of up to four lists (an event's own and the unpinned), each in
/// hub-id order, merged in that order. A subscription sits in one list per event: its
/// filter pins one attribute, and an event has one key there.
pub(crate) struct Merged<'a> {
    lists: [&'a [Arc<Sub>]; 4],
}

impl<'a> Merged<'a> {
    pub(crate) fn new(lists: [&'a [Arc<Sub>]; 4]) -> Merged<'a> {
        Merged { lists }
    }
}

impl<'a> Iterator for Merged<'a> {
    type Item = &'a Arc<Sub>;

    fn next(&mut self) -> Option<&'a Arc<Sub>> {
        let (at, _) = self
            .lists
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.first().map(|s| (i, s.id)))
            .min_by_key(|&(_, id)| id)?;
        let list = self.lists.get_mut(at)?;
        let (first, rest) = list.split_first()?;
        *list = rest;
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::delivery::Reader;
    use crate::encoded::Binding;
    use crate::outbox::{Bounds, Outbox};
    use crate::proto;

    fn sub(id: u64, filter: Value) -> Arc<Sub> {
        let (outbox, _rx) = Outbox::new(Bounds::UNBOUNDED, Default::default());
        Arc::new(Sub {
            id,
            conn: None,
            reader: Arc::new(Reader {
                filter: proto::parse_filter(&filter).unwrap(),
                capture: None,
                binding: Binding::Sse,
            }),
            outbox,
        })
    }

    fn ids(subs: &[Arc<Sub>]) -> Vec<u64> {
        subs.iter().map(|s| s.id).collect()
    }

    #[test]
    fn files_by_the_pin_keeps_id_order_and_forgets_empty_keys() {
        let mut index = Index::default();
        let subs = [
            sub(3, json!({ "session": ["s1", "s2"] })),
            sub(1, json!({ "session": "s1", "agent": "a" })),
            sub(2, json!({ "agent": "a" })),
            sub(4, json!({ "type": ["tool.*", "tool.called"] })),
            sub(5, json!({ "severity": "error" })),
        ];
        for s in &subs {
            index.add(s);
        }
        assert_eq!(index.len(), 5);
        assert_eq!(ids(index.filed(PinAttr::Session, "s1")), [1, 3]);
        assert_eq!(ids(index.filed(PinAttr::Session, "s2")), [3]);
        assert_eq!(ids(index.filed(PinAttr::Agent, "a")), [2]);
        assert_eq!(ids(index.filed(PinAttr::Category, "tool")), [4]);
        assert_eq!(ids(index.unpinned()), [5]);
        let merged = Merged::new([
            index.unpinned(),
            index.filed(PinAttr::Session, "s1"),
            index.filed(PinAttr::Agent, "a"),
            index.filed(PinAttr::Category, "tool"),
        ]);
        assert_eq!(merged.map(|s| s.id).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);

        // a snapshot keeps what it saw while the index changes
        let snapshot = index.clone();
        index.remove(&subs[0]);
        index.remove(&subs[2]);
        assert_eq!(ids(index.filed(PinAttr::Session, "s1")), [1]);
        assert!(index.filed(PinAttr::Session, "s2").is_empty());
        assert!(!index.pins(PinAttr::Agent), "an emptied key is forgotten");
        assert_eq!(index.len(), 3);
        assert_eq!(ids(snapshot.filed(PinAttr::Session, "s1")), [1, 3]);
        assert_eq!(ids(snapshot.filed(PinAttr::Agent, "a")), [2]);
    }
}
