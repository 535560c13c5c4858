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

// TODO(core): use the aep-core reader of SSE marker comments once one exists (the
// `resume` module has positions and the SSE `id:` form, not the comment syntax).
#[cfg(feature = "sse")]
pub(crate) mod sse_marker {
    use aep_core::resume::Position;

    /// Reads `replay-exhausted {session} {epoch}:{seq}` (AEP-0003 §3.3.3), the comment
    /// text after the colon.
    pub(crate) fn parse_exhausted(comment: &str) -> Option<(String, Position)> {
        let rest = comment.strip_prefix("replay-exhausted ")?;
        let (session, pos) = rest.trim_end().rsplit_once(' ')?;
        let (e, s) = pos.split_once(':')?;
        Some((
            session.to_owned(),
            Position::new(e.parse().ok()?, s.parse().ok()?),
        ))
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn exhausted_comment() {
            let (s, p) = super::parse_exhausted("replay-exhausted s:1 2:30").unwrap();
            assert_eq!((s.as_str(), p.epoch(), p.seq()), ("s:1", 2, 30));
            assert_eq!(super::parse_exhausted("replay-complete"), None);
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
