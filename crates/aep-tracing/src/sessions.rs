//! One `SessionEmitter` per session for the life of the layer, so that every run of a
//! conversation continues its session's `seq` (AEP-0001 §7 rule 2: one position, one
//! event). Looked up when a span names its session, never per event: the spans inside
//! it carry the emitter in their own state.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aep_async::{Emitter, SessionEmitter};

/// A session id longer than this is not used as one.
pub(crate) const MAX_SESSION_BYTES: usize = 256;

/// Why a span's session id was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Empty, longer than [`MAX_SESSION_BYTES`], or with white space or control
    /// characters, which the `source` URI cannot carry (AEP-0001 §5.1).
    Unusable,
    /// The layer already holds `max_sessions` sessions.
    Full,
}

/// The sessions the layer emits into.
pub(crate) struct Sessions {
    emitter: Emitter,
    default: Arc<SessionEmitter>,
    named: Mutex<HashMap<String, Arc<SessionEmitter>>>,
    max: usize,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("default", &self.default.session())
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

/// Whether `id` can be a session id: it becomes the last segment of the `source` URI.
pub(crate) fn usable(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_SESSION_BYTES
        && !id.chars().any(|c| c.is_control() || c.is_whitespace())
}

impl Sessions {
    /// Sessions made by `emitter`, `default` for spans that name none (and for those
    /// naming its id): one the caller may hold too, so that its own events (an `ask`)
    /// and the spans' share the session's positions.
    pub(crate) fn new(emitter: Emitter, default: Arc<SessionEmitter>, max: usize) -> Sessions {
        Sessions {
            default,
            emitter,
            named: Mutex::new(HashMap::new()),
            max,
        }
    }

    /// The session of spans that name none.
    pub(crate) fn default_session(&self) -> &Arc<SessionEmitter> {
        &self.default
    }

    /// The emitter of session `id`, made the first time the id is seen. Sessions are
    /// kept while the layer lives: forgetting one and meeting it again would restart
    /// its `seq` in the same epoch, giving one position to two events, which
    /// AEP-0001 §7 rule 2 forbids. Past `max` sessions a new one is refused instead.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<SessionEmitter>, Refused> {
        if id == self.default.session() {
            return Ok(self.default.clone());
        }
        if !usable(id) {
            return Err(Refused::Unusable);
        }
        let mut named = self.named.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = named.get(id) {
            return Ok(s.clone());
        }
        if named.len() >= self.max {
            return Err(Refused::Full);
        }
        let s = Arc::new(self.emitter.session(id));
        named.insert(id.to_owned(), s.clone());
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_testing::MemorySink;

    #[test]
    fn a_session_met_again_continues_its_seq_and_the_bound_refuses_new_ones() {
        let emitter = Emitter::new("a", "h", MemorySink::new());
        let main = Arc::new(emitter.session("main"));
        let sessions = Sessions::new(emitter, main, 2);
        let c1 = sessions.get("c1").unwrap();
        c1.emit("run.started", None::<()>).unwrap();
        drop(c1);
        assert_eq!(
            sessions.get("c1").unwrap().next_seq(),
            1,
            "the same counter"
        );
        assert!(Arc::ptr_eq(
            &sessions.get("main").unwrap(),
            sessions.default_session()
        ));
        sessions.get("c2").unwrap();
        assert_eq!(sessions.get("c3").unwrap_err(), Refused::Full);
        assert_eq!(
            sessions.get("c1").unwrap().next_seq(),
            1,
            "known ones still work"
        );
    }

    #[test]
    fn ids_a_source_uri_cannot_carry_are_refused() {
        let emitter = Emitter::new("a", "h", MemorySink::new());
        let sessions = Sessions::new(emitter.clone(), Arc::new(emitter.session("m")), 9);
        for bad in [
            "",
            "a b",
            "tab\there",
            "nl\n",
            &"x".repeat(MAX_SESSION_BYTES + 1),
        ] {
            assert_eq!(sessions.get(bad).unwrap_err(), Refused::Unusable, "{bad:?}");
        }
        assert!(sessions.get("conv-1/ü").is_ok());
    }
}
