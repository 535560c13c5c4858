//! Narrow stand-ins for aep-core pieces that are not on `main` yet. Each block is the
//! one place its rule is used from; each is replaced by the aep-core call once merged.

// TODO(core): use aep_core::envelope when merged.
pub(crate) mod envelope {
    use std::time::{SystemTime, UNIX_EPOCH};

    /// A fresh ULID (AEP-0001 §5.1 `id`).
    pub(crate) fn new_id() -> String {
        ulid::Ulid::new().to_string()
    }

    /// The current time as RFC 3339 UTC with milliseconds (AEP-0001 §5.1 `time`).
    pub(crate) fn now() -> String {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let secs = ms / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = civil_from_days(days as i64);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
            rem / 3600,
            (rem / 60) % 60,
            rem % 60,
            ms % 1000
        )
    }

    // Howard Hinnant's days-to-civil conversion for the proleptic Gregorian calendar.
    fn civil_from_days(z: i64) -> (i64, u32, u32) {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m, d)
    }

    /// `aep://{host}/agent/{agent}[/session/{session}]` (AEP-0001 §5.2).
    pub(crate) fn source(host: &str, agent: &str, session: Option<&str>) -> String {
        match session {
            Some(s) => format!("aep://{host}/agent/{agent}/session/{s}"),
            None => format!("aep://{host}/agent/{agent}"),
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn time_is_rfc3339_ms() {
            let t = super::now();
            assert_eq!(t.len(), 24, "{t}");
            assert!(t.ends_with('Z') && &t[10..11] == "T" && &t[19..20] == ".");
            assert_eq!(super::civil_from_days(0), (1970, 1, 1));
            assert_eq!(super::civil_from_days(20_000), (2024, 10, 4));
        }
    }
}

// TODO(core): use aep_core::capture (the down-leveler) when merged. Until then the
// ceiling is enforced on the label only: an event asking for more than the ceiling is
// stamped with the ceiling.
pub(crate) mod capture {
    use aep_core::{Capture, Event};

    pub(crate) fn enforce_ceiling(event: &mut Event, ceiling: Capture) {
        if event.capture() > ceiling {
            event.set_capture(Some(ceiling));
        }
    }
}

// TODO(core): use aep_core::dedupe when merged.
pub(crate) mod dedupe {
    use std::collections::{HashSet, VecDeque};

    /// Bounded `(source, id)` memory (AEP-0001 §7.4), oldest forgotten first.
    #[derive(Debug)]
    pub(crate) struct Dedupe {
        seen: HashSet<(Box<str>, Box<str>)>,
        order: VecDeque<(Box<str>, Box<str>)>,
        capacity: usize,
    }

    impl Dedupe {
        pub(crate) fn new(capacity: usize) -> Self {
            Dedupe {
                seen: HashSet::with_capacity(capacity.min(65_536)),
                order: VecDeque::with_capacity(capacity.min(65_536)),
                capacity: capacity.max(1),
            }
        }

        /// True the first time `(source, id)` is offered.
        pub(crate) fn first_sight(&mut self, source: &str, id: &str) -> bool {
            let key: (Box<str>, Box<str>) = (source.into(), id.into());
            if self.seen.contains(&key) {
                return false;
            }
            if self.order.len() >= self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.seen.remove(&old);
                }
            }
            self.order.push_back(key.clone());
            self.seen.insert(key);
            true
        }
    }
}

// TODO(core): use aep_core::resume when merged.
pub(crate) mod resume {
    use serde::{Deserialize, Serialize};

    /// A resume position (AEP-0003 §7).
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct Position {
        /// The session.
        pub session: String,
        /// The emitter epoch.
        pub epoch: u64,
        /// The last delivered sequence number.
        pub seq: u64,
    }

    #[cfg(feature = "sse")]
    /// Encoded characters one position costs inside the URL-encoded `from` array,
    /// its separating comma included.
    fn encoded_size(p: &Position) -> usize {
        let json = serde_json::to_string(p).unwrap_or_default();
        let escaped: usize = json
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"_.-~/".contains(&b) {
                    1
                } else {
                    3
                }
            })
            .sum();
        escaped + 3
    }

    #[cfg(feature = "sse")]
    /// The newest positions (at the end of `all`) that fit `budget` encoded characters,
    /// at most `cap` of them, and the older rest. At least one position always rides,
    /// so a single oversized entry cannot stall resume.
    pub(crate) fn split_from(
        all: &[Position],
        cap: Option<usize>,
        budget: usize,
    ) -> (Vec<Position>, Vec<Position>) {
        let mut size = 2;
        let mut i = all.len();
        let mut taken = 0;
        while i > 0 && cap.is_none_or(|c| taken < c) {
            let s = encoded_size(&all[i - 1]);
            if taken > 0 && size + s > budget {
                break;
            }
            size += s;
            taken += 1;
            i -= 1;
        }
        (all[i..].to_vec(), all[..i].to_vec())
    }

    #[cfg(feature = "sse")]
    /// Parses `: replay-exhausted {session} {epoch}:{seq}` after the colon and space.
    pub(crate) fn parse_exhausted(comment: &str) -> Option<(String, u64, u64)> {
        let rest = comment.strip_prefix("replay-exhausted ")?;
        let (session, pos) = rest.trim_end().rsplit_once(' ')?;
        let (e, s) = pos.split_once(':')?;
        Some((session.to_owned(), e.parse().ok()?, s.parse().ok()?))
    }

    #[cfg(all(test, feature = "sse"))]
    mod tests {
        use super::*;

        fn p(i: u64) -> Position {
            Position {
                session: format!("s{i}"),
                epoch: 0,
                seq: i,
            }
        }

        #[test]
        fn split_keeps_newest_within_budget() {
            let all: Vec<_> = (0..100).map(p).collect();
            let (head, rest) = split_from(&all, None, 600);
            assert!(!head.is_empty() && !rest.is_empty());
            assert_eq!(head.len() + rest.len(), 100);
            assert_eq!(head.last(), all.last());
            let (head, rest) = split_from(&all, Some(3), 6000);
            assert_eq!(head.len(), 3);
            assert_eq!(rest.len(), 97);
            let (head, _) = split_from(&all[..1], None, 1);
            assert_eq!(head.len(), 1, "one position always rides");
        }

        #[test]
        fn exhausted_comment() {
            assert_eq!(
                parse_exhausted("replay-exhausted s:1 2:30"),
                Some(("s:1".into(), 2, 30))
            );
            assert_eq!(parse_exhausted("replay-complete"), None);
        }
    }
}

// TODO(core): use aep_core::filter when merged. Only used to route WebSocket
// deliveries to the subscriptions of one connection (a relay sends an event once per
// matching subscription, without naming it); the relay remains the filter authority.
#[cfg(feature = "ws")]
pub(crate) mod filter {
    use aep_core::{Event, Severity};
    use serde_json::Value;

    pub(crate) fn matches(filter: &Value, event: &Event) -> bool {
        let Some(map) = filter.as_object() else {
            return false;
        };
        map.iter()
            .all(|(key, pred)| member_matches(key, pred, event))
    }

    fn attr(key: &str, e: &Event) -> Option<Value> {
        Some(match key {
            "id" => Value::from(e.id()),
            "type" => Value::from(e.event_type()),
            "subject" => Value::from(e.subject()?),
            "source" => Value::from(e.source()),
            "agent" => Value::from(e.agent()),
            "session" => Value::from(e.session()?),
            "run" => Value::from(e.run()?),
            "step" => Value::from(e.step()?),
            "epoch" => Value::from(e.epoch()),
            "cause" => Value::from(e.cause()?),
            "severity" => Value::from(e.severity().as_str()),
            "capture" => Value::from(e.capture().as_str()),
            other => e.extension(other)?,
        })
    }

    fn member_matches(key: &str, pred: &Value, e: &Event) -> bool {
        if key == "severity" {
            if let Some(cmp) = pred.as_object() {
                let level = e.severity();
                let bound = |k: &str| {
                    cmp.get(k)
                        .and_then(Value::as_str)
                        .map(str::parse::<Severity>)
                };
                let gte_ok = match bound("gte") {
                    Some(Ok(b)) => level >= b,
                    Some(Err(_)) => false,
                    None => true,
                };
                let lte_ok = match bound("lte") {
                    Some(Ok(b)) => level <= b,
                    Some(Err(_)) => false,
                    None => true,
                };
                return gte_ok && lte_ok;
            }
        }
        let Some(actual) = attr(key, e) else {
            return false;
        };
        let one = |p: &Value| {
            if key == "type" {
                if let (Some(pat), Some(ty)) = (p.as_str(), actual.as_str()) {
                    if let Some(prefix) = pat.strip_suffix(".*") {
                        return ty.len() > prefix.len() + 1
                            && ty.starts_with(prefix)
                            && ty.as_bytes().get(prefix.len()) == Some(&b'.');
                    }
                }
            }
            *p == actual
        };
        match pred {
            Value::Array(items) => items.iter().any(one),
            p => one(p),
        }
    }
}

// TODO(core): use aep_core::frame when merged.
#[cfg(feature = "ws")]
pub(crate) mod frame {
    use serde_json::{json, Value};

    use super::resume::Position;

    /// The `hello` frame (AEP-0003 §4).
    pub(crate) fn hello(
        role: &str,
        agent: &str,
        instance: &str,
        accepts: Option<&[String]>,
    ) -> Value {
        let mut caps = json!({
            "capture": ["none", "metadata", "redacted", "full"],
            "filters": ["attr-match"],
            "experimental": {},
        });
        if let (Some(accepts), Some(map)) = (accepts, caps.as_object_mut()) {
            map.insert(
                "control".into(),
                json!({"accepts": accepts, "ack_window_ms": 10_000}),
            );
        }
        json!({
            "type": "hello",
            "versions": [aep_core::AEP_VERSION],
            "role": role,
            "identity": {"agent": agent, "instance": instance},
            "capabilities": caps,
        })
    }

    /// The `from` member of a `subscribe` frame (AEP-0003 §6.5).
    pub(crate) enum SubscribeFrom<'a> {
        None,
        All,
        Positions(&'a [Position]),
    }

    /// The `subscribe` frame (AEP-0003 §6.5).
    pub(crate) fn subscribe(
        id: &str,
        filter: &Value,
        from: SubscribeFrom<'_>,
        capture: Option<aep_core::Capture>,
    ) -> Value {
        let mut f = json!({"type": "subscribe", "id": id, "filter": filter});
        if let Some(map) = f.as_object_mut() {
            match from {
                SubscribeFrom::None => {}
                SubscribeFrom::All => {
                    map.insert("from".into(), Value::from("all"));
                }
                SubscribeFrom::Positions(ps) => {
                    map.insert("from".into(), serde_json::to_value(ps).unwrap_or_default());
                }
            }
            if let Some(c) = capture {
                map.insert("capture".into(), Value::from(c.as_str()));
            }
        }
        f
    }

    /// Whether a WS text payload is an event (its `type` has a dot) rather than a
    /// frame (AEP-0003 §2).
    pub(crate) fn is_event_type(ty: &str) -> bool {
        ty.contains('.')
    }
}
