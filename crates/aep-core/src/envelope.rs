//! Envelope construction for emitters: ULID ids, RFC 3339 times, extension attributes
//! checked at the producing boundary (AEP-0001 §5).
//!
//! An [`EnvelopeFactory`] stamps new [`Event`]s with a fresh `id` (a ULID, RECOMMENDED
//! by AEP-0001 §5.1 #2 because it sorts by time), the current `time` in RFC 3339 UTC
//! with milliseconds, the emitter's `source` and `agent`, and any default extension
//! attributes. Extension attributes are refused *before* an event exists (AEP-0001 §5.4:
//! the emitting library surfaces the error instead of emitting a non-conformant
//! envelope). Time comes from a [`Clock`], so tests pin it.
//!
//! Session, `seq` and `epoch` are not stamped here: they belong to whoever owns the
//! session's counter (the emitters of the async crate).
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use aep_core::envelope::{EnvelopeFactory, ManualClock};
//!
//! let clock = ManualClock::new(UNIX_EPOCH + Duration::from_millis(1_783_073_704_221));
//! let factory = EnvelopeFactory::new("aep://h/agent/a", "a")
//!     .with_clock(clock)
//!     .with_extension("acmeregion", "eu-1")?;
//! let event = factory.event("agent.heartbeat");
//! assert_eq!(event.time(), "2026-07-03T10:15:04.221Z");
//! assert_eq!(event.id().len(), 26);
//! assert_eq!(event.extension_str("acmeregion"), Some("eu-1"));
//! assert!(factory.clone().with_extension("seq", 1).is_err());
//! # Ok::<(), aep_core::ExtensionError>(())
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use ulid::{Generator, Ulid};

use crate::event::{check_extension_name, is_extension_value, Event, ExtensionError};

/// A source of wall-clock time. Inject one to make stamped times deterministic.
///
/// Any `Fn() -> SystemTime` is a clock; [`SystemClock`] reads the system's and
/// [`ManualClock`] is set by hand.
///
/// ```
/// use std::time::{SystemTime, UNIX_EPOCH};
/// use aep_core::envelope::Clock;
/// let fixed = || UNIX_EPOCH;
/// assert_eq!(fixed.now(), UNIX_EPOCH);
/// ```
pub trait Clock {
    /// The current time.
    fn now(&self) -> SystemTime;
}

impl<F: Fn() -> SystemTime> Clock for F {
    fn now(&self) -> SystemTime {
        self()
    }
}

/// The system's wall clock.
///
/// ```
/// use aep_core::envelope::{Clock, SystemClock};
/// assert!(SystemClock.now() > std::time::UNIX_EPOCH);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that only moves when told to; clones share the same time.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use aep_core::envelope::{Clock, ManualClock};
/// let clock = ManualClock::new(UNIX_EPOCH);
/// let view = clock.clone();
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(view.now(), UNIX_EPOCH + Duration::from_secs(2));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<SystemTime>>);

impl ManualClock {
    /// A clock reading `start`.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use aep_core::envelope::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new(UNIX_EPOCH).now(), UNIX_EPOCH);
    /// ```
    pub fn new(start: SystemTime) -> ManualClock {
        ManualClock(Arc::new(Mutex::new(start)))
    }

    /// Sets the time.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use aep_core::envelope::{Clock, ManualClock};
    /// let clock = ManualClock::new(UNIX_EPOCH);
    /// clock.set(UNIX_EPOCH + Duration::from_secs(60));
    /// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_secs(60));
    /// ```
    pub fn set(&self, t: SystemTime) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = t;
    }

    /// Moves the time forward.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use aep_core::envelope::{Clock, ManualClock};
    /// let clock = ManualClock::new(UNIX_EPOCH);
    /// clock.advance(Duration::from_millis(5));
    /// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_millis(5));
    /// ```
    pub fn advance(&self, by: Duration) {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *t = t.checked_add(by).unwrap_or(*t);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An emitter's `source` URI: `aep://{host}/agent/{agent}[/session/{session}]`
/// (AEP-0001 §5.2), as a string. Every emitter of this SDK (aep-async's `Emitter`, the
/// agent adapters' sessions) calls it; the form itself is [`SourceUri`](crate::SourceUri)'s,
/// which reads it back too.
///
/// ```
/// use aep_core::envelope::source_uri;
/// assert_eq!(source_uri("host-a", "coder", Some("s1")), "aep://host-a/agent/coder/session/s1");
/// assert_eq!(source_uri("host-a", "coder", None), "aep://host-a/agent/coder");
/// ```
pub fn source_uri(host: &str, agent: &str, session: Option<&str>) -> String {
    let uri = crate::SourceUri::new(host, agent);
    match session {
        Some(s) => uri.with_session(s).into_string(),
        None => uri.into_string(),
    }
}

/// One generator for the whole process, so ids minted in the same millisecond still
/// sort in minting order across every factory.
static IDS: Mutex<Generator> = Mutex::new(Generator::new());

/// A new ULID for an event minted at `now`, monotonic within this process: each id is
/// greater than the previous one, even when `now` repeats or steps back (the ULID then
/// keeps the previous id's millisecond and increments its random part).
///
/// ```
/// use std::time::UNIX_EPOCH;
/// let a = aep_core::envelope::new_ulid(UNIX_EPOCH);
/// let b = aep_core::envelope::new_ulid(UNIX_EPOCH);
/// assert!(b > a);
/// ```
pub fn new_ulid(now: SystemTime) -> Ulid {
    let mut ids = IDS.lock().unwrap_or_else(PoisonError::into_inner);
    // Overflow needs 2^80 ids in one millisecond; a plain random ULID is then the only
    // value left, at the cost of ordering.
    ids.generate_from_datetime(now)
        .unwrap_or_else(|_| Ulid::from_datetime(now))
}

/// Formats a time as RFC 3339 in UTC with milliseconds: `2026-07-03T10:15:04.221Z`
/// (the form of every `time` in the AEP corpus).
///
/// Sub-millisecond digits are truncated. Years outside 0000-9999, which RFC 3339 cannot
/// write, are clamped to the nearest representable instant.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use aep_core::envelope::rfc3339_millis;
/// assert_eq!(rfc3339_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
/// assert_eq!(rfc3339_millis(UNIX_EPOCH + Duration::from_millis(951_782_400_500)), "2000-02-29T00:00:00.500Z");
/// ```
pub fn rfc3339_millis(t: SystemTime) -> String {
    let mut buf = [0; 24];
    rfc3339_millis_into(t, &mut buf).to_owned()
}

/// Mints a fresh `id` ([`new_ulid`]) and `time` ([`rfc3339_millis`]) for `now` on the
/// stack and lends both to `f`: every minted envelope (an emitted event, a command, a
/// re-stamped event) copies them into its own text, so no `String` is made for either.
pub(crate) fn with_id_and_time<R>(now: SystemTime, f: impl FnOnce(&str, &str) -> R) -> R {
    let (mut id, mut time) = ([0; ulid::ULID_LEN], [0; 24]);
    let id = new_ulid(now).array_to_str(&mut id);
    f(id, rfc3339_millis_into(now, &mut time))
}

/// [`rfc3339_millis`] into a buffer on the caller's stack: an emitted event copies its
/// `time` into its own text, so it need not pass through a `String` first.
pub(crate) fn rfc3339_millis_into(t: SystemTime, buf: &mut [u8; 24]) -> &str {
    let millis: i128 = match t.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_millis() as i128,
        // Before 1970: round toward the past so the fraction counts forward.
        Err(before) => {
            let d = before.duration();
            -(d.as_millis() as i128) - i128::from(d.subsec_nanos() % 1_000_000 != 0)
        }
    };
    const MIN_MS: i128 = -62_167_219_200_000; // 0000-01-01T00:00:00.000Z
    const MAX_MS: i128 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    let millis = millis.clamp(MIN_MS, MAX_MS);
    let secs = millis.div_euclid(1000) as i64;
    let ms = millis.rem_euclid(1000) as u16;
    // Events come many to the second: the date and time of day are written once per
    // second per thread, and only the milliseconds per event.
    let cached = LAST_SECOND
        .try_with(|last| {
            let (at, prefix) = last.get();
            if at != Some(secs) {
                let prefix = second_prefix(secs);
                last.set((Some(secs), prefix));
                return prefix;
            }
            prefix
        })
        .unwrap_or_else(|_| second_prefix(secs));
    buf[..20].copy_from_slice(&cached);
    buf[20] = b'0' + (ms / 100) as u8;
    buf[21] = b'0' + (ms / 10 % 10) as u8;
    buf[22] = b'0' + (ms % 10) as u8;
    buf[23] = b'Z';
    // every byte written is an ASCII digit or separator
    std::str::from_utf8(buf).unwrap_or("0000-01-01T00:00:00.000Z")
}

thread_local! {
    /// The last second written on this thread and its `YYYY-MM-DDTHH:MM:SS.` text.
    static LAST_SECOND: std::cell::Cell<(Option<i64>, [u8; 20])> =
        const { std::cell::Cell::new((None, [0; 20])) };
}

/// `YYYY-MM-DDTHH:MM:SS.` for a second within 0000-9999 (the caller clamps).
fn second_prefix(secs: i64) -> [u8; 20] {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = [0u8; 20];
    let mut at = 0;
    // Written digit by digit: `format!` costs ten times as much.
    let mut digits = |value: i64, width: u32, then: u8| {
        for place in (0..width).rev() {
            let digit = (value / 10i64.pow(place)).rem_euclid(10) as u8;
            if let Some(b) = out.get_mut(at) {
                *b = b'0' + digit;
            }
            at += 1;
        }
        if let Some(b) = out.get_mut(at) {
            *b = then;
        }
        at += 1;
    };
    digits(year, 4, b'-');
    digits(i64::from(month), 2, b'-');
    digits(i64::from(day), 2, b'T');
    digits(sod / 3600, 2, b':');
    digits(sod % 3600 / 60, 2, b':');
    digits(sod % 60, 2, b'.');
    out
}

/// The proleptic Gregorian date `days` after 1970-01-01.
///
/// Counts in 400-year eras (146,097 days each) with years starting on 1 March, so the
/// leap day is the last day of its year and needs no special case.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468; // days from 0000-03-01 to 1970-01-01
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Checks a set of extension attributes against AEP-0001 §5.4 and sets them all, or
/// none: the first refused attribute is returned and the event is left unchanged.
///
/// ```
/// use aep_core::{envelope::set_extensions, Event, ExtensionError};
/// let mut e = Event::new("1", "agent.idle", "t", "s", "a");
/// let err = set_extensions(&mut e, [("acmeregion", "eu-1".into()), ("type", "x".into())]).unwrap_err();
/// assert_eq!(err, ExtensionError::CoreName("type".into()));
/// assert_eq!(e.extensions().len(), 0);
/// # Ok::<(), ExtensionError>(())
/// ```
pub fn set_extensions<'a>(
    event: &mut Event,
    extensions: impl IntoIterator<Item = (&'a str, Value)>,
) -> Result<(), ExtensionError> {
    let checked = extensions
        .into_iter()
        .map(|(name, value)| check_extension(name, &value).map(|()| (name, value)))
        .collect::<Result<Vec<_>, _>>()?;
    for (name, value) in checked {
        event.set_extension(name, value)?;
    }
    Ok(())
}

fn check_extension(name: &str, value: &Value) -> Result<(), ExtensionError> {
    check_extension_name(name)?;
    if is_extension_value(value) {
        Ok(())
    } else {
        Err(ExtensionError::NonScalar(name.to_owned()))
    }
}

/// Stamps new events for one emitter: fresh ULID `id`, current `time`, its `source` and
/// `agent`, and its default extension attributes (checked when added).
///
/// ```
/// use aep_core::envelope::EnvelopeFactory;
/// let factory = EnvelopeFactory::new("aep://h/agent/a/session/s", "a");
/// let e = factory.event("run.started").with_session("s").with_seq(1);
/// assert_eq!(e.source(), "aep://h/agent/a/session/s");
/// assert!(e.time().ends_with('Z'));
/// ```
#[derive(Clone)]
pub struct EnvelopeFactory<C = SystemClock> {
    source: String,
    agent: String,
    extensions: Vec<(String, Value)>,
    clock: C,
}

impl EnvelopeFactory<SystemClock> {
    /// A factory for the emitter `agent` at `source`, reading the system clock.
    ///
    /// ```
    /// let f = aep_core::envelope::EnvelopeFactory::new("aep://h/agent/a", "a");
    /// assert_eq!((f.source(), f.agent()), ("aep://h/agent/a", "a"));
    /// ```
    pub fn new(source: impl Into<String>, agent: impl Into<String>) -> Self {
        EnvelopeFactory {
            source: source.into(),
            agent: agent.into(),
            extensions: Vec::new(),
            clock: SystemClock,
        }
    }
}

impl<C: Clock> EnvelopeFactory<C> {
    /// The same factory reading another clock.
    ///
    /// ```
    /// use std::time::UNIX_EPOCH;
    /// let f = aep_core::envelope::EnvelopeFactory::new("s", "a").with_clock(|| UNIX_EPOCH);
    /// assert_eq!(f.now_rfc3339(), "1970-01-01T00:00:00.000Z");
    /// ```
    pub fn with_clock<D: Clock>(self, clock: D) -> EnvelopeFactory<D> {
        EnvelopeFactory {
            source: self.source,
            agent: self.agent,
            extensions: self.extensions,
            clock,
        }
    }

    /// Adds an extension attribute every event carries, refusing what AEP-0001 §5.4
    /// forbids (a core name, an ill-formed name, a non-scalar value).
    ///
    /// ```
    /// use aep_core::{envelope::EnvelopeFactory, ExtensionError};
    /// let f = EnvelopeFactory::new("s", "a");
    /// assert_eq!(f.clone().with_extension("Acme", 1).unwrap_err(), ExtensionError::BadName("Acme".into()));
    /// assert_eq!(
    ///     f.with_extension("acmetags", serde_json::json!(["a"])).unwrap_err(),
    ///     ExtensionError::NonScalar("acmetags".into())
    /// );
    /// ```
    pub fn with_extension(
        mut self,
        name: &str,
        value: impl Into<Value>,
    ) -> Result<Self, ExtensionError> {
        let value = value.into();
        check_extension(name, &value)?;
        match self.extensions.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v = value,
            None => self.extensions.push((name.to_owned(), value)),
        }
        Ok(self)
    }

    /// A new event of `event_type`, stamped with a fresh id and the current time.
    ///
    /// ```
    /// use std::time::UNIX_EPOCH;
    /// let f = aep_core::envelope::EnvelopeFactory::new("aep://h/agent/a", "a").with_clock(|| UNIX_EPOCH);
    /// let (one, two) = (f.event("agent.heartbeat"), f.event("agent.heartbeat"));
    /// assert_eq!(one.time(), "1970-01-01T00:00:00.000Z");
    /// assert!(one.id() < two.id()); // ULIDs, monotonic within one factory
    /// assert_eq!(one.agent(), "a");
    /// ```
    pub fn event(&self, event_type: impl AsRef<str>) -> Event {
        let mut event = with_id_and_time(self.clock.now(), |id, time| {
            Event::from_strs(id, event_type.as_ref(), time, &self.source, &self.agent)
        });
        for (name, value) in &self.extensions {
            // Checked by `with_extension`; a refusal here cannot happen.
            let _ = event.set_extension(name, value.clone());
        }
        event
    }

    /// Re-stamps an existing event with a fresh id and the current time (for an event
    /// built elsewhere that is about to be emitted for the first time; a retry keeps
    /// its id, AEP-0003 §3.2 #4).
    ///
    /// ```
    /// use std::time::UNIX_EPOCH;
    /// let f = aep_core::envelope::EnvelopeFactory::new("s", "a").with_clock(|| UNIX_EPOCH);
    /// let mut e = aep_core::Event::new("draft", "agent.idle", "t", "s", "a");
    /// f.stamp(&mut e);
    /// assert_eq!(e.id().len(), 26);
    /// assert_eq!(e.time(), "1970-01-01T00:00:00.000Z");
    /// ```
    pub fn stamp(&self, event: &mut Event) {
        with_id_and_time(self.clock.now(), |id, time| {
            event.set_id(id);
            event.set_time(time);
        });
    }

    /// The current time of this factory's clock, as an AEP `time` string.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let at = UNIX_EPOCH + Duration::from_millis(1_783_073_704_221);
    /// let f = aep_core::envelope::EnvelopeFactory::new("s", "a").with_clock(move || at);
    /// assert_eq!(f.now_rfc3339(), "2026-07-03T10:15:04.221Z");
    /// ```
    pub fn now_rfc3339(&self) -> String {
        rfc3339_millis(self.clock.now())
    }

    /// The `source` stamped on events.
    ///
    /// ```
    /// let f = aep_core::envelope::EnvelopeFactory::new("aep://h/agent/a", "a");
    /// assert_eq!(f.event("agent.idle").source(), f.source());
    /// ```
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The `agent` stamped on events.
    ///
    /// ```
    /// let f = aep_core::envelope::EnvelopeFactory::new("aep://h/agent/a", "a");
    /// assert_eq!(f.event("agent.idle").agent(), f.agent());
    /// ```
    pub fn agent(&self) -> &str {
        &self.agent
    }
}

impl<C> fmt::Debug for EnvelopeFactory<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvelopeFactory")
            .field("source", &self.source)
            .field("agent", &self.agent)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_millis(ms: i64) -> SystemTime {
        if ms >= 0 {
            UNIX_EPOCH + Duration::from_millis(ms as u64)
        } else {
            UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
        }
    }

    #[test]
    fn known_instants() {
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
            (1_783_073_704_221, "2026-07-03T10:15:04.221Z"),
            (68_256_000_000, "1972-03-01T00:00:00.000Z"),
            (4_102_444_800_000, "2100-01-01T00:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
            (-1_000, "1969-12-31T23:59:59.000Z"),
            (-500, "1969-12-31T23:59:59.500Z"),
            (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
        ] {
            assert_eq!(rfc3339_millis(at_millis(ms)), text, "{ms}");
        }
        // Sub-millisecond parts truncate toward the past on both sides of the epoch.
        assert_eq!(
            rfc3339_millis(UNIX_EPOCH + Duration::from_micros(1_999)),
            "1970-01-01T00:00:00.001Z"
        );
        assert_eq!(
            rfc3339_millis(UNIX_EPOCH - Duration::from_micros(1)),
            "1969-12-31T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339_millis(UNIX_EPOCH + Duration::from_secs(400_000_000_000)),
            "9999-12-31T23:59:59.999Z"
        );
    }

    /// Days from 1970-01-01 by counting whole years and months: slow, obviously right.
    fn days_by_counting(y: i64, m: u32, d: u32) -> i64 {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let mut days = 0i64;
        if y >= 1970 {
            days += (1970..y)
                .map(|y| if leap(y) { 366 } else { 365 })
                .sum::<i64>();
        } else {
            days -= (y..1970)
                .map(|y| if leap(y) { 366 } else { 365 })
                .sum::<i64>();
        }
        let lens = [
            31,
            if leap(y) { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        days + lens[..(m - 1) as usize].iter().sum::<i64>() + i64::from(d) - 1
    }

    #[test]
    fn civil_dates_agree_with_counting() {
        for days in (-800_000..800_000).step_by(997).chain(-1000..1000) {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && (1..=31).contains(&d));
            assert_eq!(days_by_counting(y, m, d), days, "{y}-{m}-{d}");
        }
    }

    #[test]
    fn times_are_written_at_the_edges_of_the_range() {
        let day = Duration::from_secs(86_400);
        let cases = [
            (
                UNIX_EPOCH - Duration::from_millis(1),
                "1969-12-31T23:59:59.999Z",
            ),
            (
                UNIX_EPOCH + Duration::from_millis(1_783_073_704_221),
                "2026-07-03T10:15:04.221Z",
            ),
            (UNIX_EPOCH + day * 365 * 9_000, "9999-12-31T23:59:59.999Z"),
            (UNIX_EPOCH - day * 365 * 3_000, "0000-01-01T00:00:00.000Z"),
        ];
        for (t, want) in cases {
            assert_eq!(rfc3339_millis(t), want);
        }
    }

    /// The per-thread second cache never serves one second's text for another: times
    /// within a second, across second boundaries and far apart, interleaved, read as
    /// `format!` writes them.
    #[test]
    fn times_are_right_whatever_came_before() {
        let reference = |ms: i64| {
            let (secs, frac) = (ms.div_euclid(1000), ms.rem_euclid(1000));
            let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
            let sod = secs.rem_euclid(86_400);
            format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:03}Z",
                sod / 3600,
                sod % 3600 / 60,
                sod % 60
            )
        };
        let base = 1_783_073_704_221_i64;
        let mut steps = Vec::new();
        for i in 0..3_000_i64 {
            steps.push(base + i * 7); // many per second, crossing seconds
            if i % 97 == 0 {
                steps.push(base - 86_400_000 * 400 + i); // a far-away second between
            }
            if i % 211 == 0 {
                steps.push(-1 - i); // before 1970
            }
        }
        for ms in steps {
            let t = if ms >= 0 {
                UNIX_EPOCH + Duration::from_millis(ms as u64)
            } else {
                UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
            };
            assert_eq!(rfc3339_millis(t), reference(ms), "{ms}");
        }
    }

    #[test]
    fn ids_are_monotonic_and_times_come_from_the_clock() {
        let clock = ManualClock::new(at_millis(1_783_073_704_221));
        let f = EnvelopeFactory::new("s", "a").with_clock(clock.clone());
        let ids: Vec<String> = (0..100)
            .map(|_| f.event("agent.idle").id().to_owned())
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        clock.set(at_millis(1_000));
        let mut e = f.event("agent.idle");
        assert_eq!(e.time(), "1970-01-01T00:00:01.000Z");
        assert!(
            e.id() > ids[99].as_str(),
            "a clock stepping back keeps ids ordered"
        );
        clock.advance(Duration::from_millis(5));
        f.stamp(&mut e);
        assert_eq!(e.time(), "1970-01-01T00:00:01.005Z");
        assert_eq!(f.now_rfc3339(), e.time());
    }

    #[test]
    fn extensions_are_refused_at_the_boundary() {
        let f = EnvelopeFactory::new("s", "a");
        assert_eq!(
            f.clone().with_extension("data", "x").unwrap_err(),
            ExtensionError::CoreName("data".into())
        );
        assert_eq!(
            f.clone().with_extension("acme_region", "x").unwrap_err(),
            ExtensionError::BadName("acme_region".into())
        );
        assert_eq!(
            f.clone().with_extension("acmescore", 0.5).unwrap_err(),
            ExtensionError::NonScalar("acmescore".into())
        );
        let f = f
            .with_extension("acmen", 1)
            .unwrap()
            .with_extension("acmen", 2)
            .unwrap();
        assert_eq!(f.event("agent.idle").extension("acmen"), Some(2.into()));
    }
}
