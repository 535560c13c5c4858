//! [`EnvelopeView`]: an envelope read in place, for paths that check an event and pass
//! its bytes on without keeping it.

use super::scan::{self, Json, Plain};
use crate::level::{Capture, Severity};

/// A plain envelope line read in place: the attributes borrowed from the line, `data`
/// and extension values checked as JSON but not decoded. Nothing is allocated for an
/// envelope without extension attributes (a list holds those).
///
/// This is the fast path of a relay's ingest (AEP-0003 §3.2.3: check the envelope,
/// store and forward the bytes), where most events are never looked at again. It reads
/// the envelopes [`Event`](super::Event)'s own direct reader reads (no escapes in keys or string
/// attributes, `seq` and `epoch` as plain integers) whose `data` and extension values
/// nest at most 64 levels deep, and answers `None` for everything else, valid or not:
/// parse that with [`Event::from_slice`](super::Event::from_slice), which decides every case (and reads deeper
/// values too). Where it reads, `Event::from_slice` reads the same attributes.
///
/// Check it with [`crate::validate::validate_envelope_view`], the rules
/// [`crate::validate::validate_envelope`] runs on an [`Event`](super::Event).
///
/// ```
/// use aep_core::event::EnvelopeView;
///
/// let line = r#"{"aep":"0.1","id":"01J","type":"tool.called","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a/session/s1","agent":"a","session":"s1","seq":4,"data":{"tool":"bash"}}"#;
/// let view = EnvelopeView::read(line).expect("a plain envelope");
/// assert_eq!(view.event_type(), "tool.called");
/// assert_eq!((view.session(), view.epoch(), view.seq()), (Some("s1"), 0, Some(4)));
/// assert_eq!(view.data_raw(), Some(r#"{"tool":"bash"}"#));
/// assert!(aep_core::validate::validate_envelope_view(&view).is_empty());
///
/// // an escape in a string attribute is valid JSON, but not the plain envelope
/// assert!(EnvelopeView::read(&line.replace("\"a\",", "\"\\u0061\",")).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct EnvelopeView<'a> {
    pub(crate) plain: Plain<'a, Json<'a>>,
}

impl<'a> EnvelopeView<'a> {
    /// Reads `line` in place, or `None` when it is not a plain envelope (including when
    /// it is not an envelope at all): [`Event::from_slice`](super::Event::from_slice) then decides.
    ///
    /// ```
    /// use aep_core::event::EnvelopeView;
    /// let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(EnvelopeView::read(line).unwrap().id(), "1");
    /// assert!(EnvelopeView::read("[1]").is_none());
    /// assert!(EnvelopeView::read(&line.replace('}', r#","data":{"n":[1,}}"#)).is_none());
    /// ```
    pub fn read(line: &'a str) -> Option<EnvelopeView<'a>> {
        scan::read(line).map(|plain| EnvelopeView { plain })
    }

    /// `id`.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().id(), "1");
    /// ```
    pub fn id(&self) -> &'a str {
        self.plain.id
    }

    /// `type`, as written.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().event_type(), "agent.idle");
    /// ```
    pub fn event_type(&self) -> &'a str {
        self.plain.ty
    }

    /// `source`.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().source(), "s");
    /// ```
    pub fn source(&self) -> &'a str {
        self.plain.source
    }

    /// `agent`.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().agent(), "a");
    /// ```
    pub fn agent(&self) -> &'a str {
        self.plain.agent
    }

    /// `time`, as written.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().time(), "t");
    /// ```
    pub fn time(&self) -> &'a str {
        self.plain.time
    }

    /// `subject`, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"tool.called","time":"t","source":"s","agent":"a","subject":"t_1"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().subject(), Some("t_1"));
    /// ```
    pub fn subject(&self) -> Option<&'a str> {
        self.plain.subject
    }

    /// `run`, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","run":"r1"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().run(), Some("r1"));
    /// ```
    pub fn run(&self) -> Option<&'a str> {
        self.plain.run
    }

    /// `step`, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"run.step.started","time":"t","source":"s","agent":"a","step":"p1"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().step(), Some("p1"));
    /// ```
    pub fn step(&self) -> Option<&'a str> {
        self.plain.step
    }

    /// `cause`, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"control.accepted","time":"t","source":"s","agent":"a","cause":"c1"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().cause(), Some("c1"));
    /// ```
    pub fn cause(&self) -> Option<&'a str> {
        self.plain.cause
    }

    /// `traceparent`, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().traceparent(), None);
    /// ```
    pub fn traceparent(&self) -> Option<&'a str> {
        self.plain.traceparent
    }

    /// `session`, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().session(), None);
    /// ```
    pub fn session(&self) -> Option<&'a str> {
        self.plain.session
    }

    /// `seq`, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","session":"s","seq":9}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().seq(), Some(9));
    /// ```
    pub fn seq(&self) -> Option<u64> {
        self.plain.seq
    }

    /// `epoch`, 0 when absent (AEP-0001 §5.1).
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// assert_eq!(aep_core::event::EnvelopeView::read(line).unwrap().epoch(), 0);
    /// ```
    pub fn epoch(&self) -> u64 {
        self.plain.epoch.unwrap_or(0)
    }

    /// `severity`, `info` when absent (AEP-0001 §8.1).
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","severity":"error"}"#;
    /// let view = aep_core::event::EnvelopeView::read(line).unwrap();
    /// assert_eq!(view.severity(), aep_core::Severity::Error);
    /// ```
    pub fn severity(&self) -> Severity {
        self.plain.severity.unwrap_or_default()
    }

    /// `capture`, `metadata` when absent (AEP-0001 §8.2).
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    /// let view = aep_core::event::EnvelopeView::read(line).unwrap();
    /// assert_eq!(view.capture(), aep_core::Capture::Metadata);
    /// ```
    pub fn capture(&self) -> Capture {
        self.plain.capture.unwrap_or_default()
    }

    /// The JSON text of `data` as written, when present.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{ "n" : 1.50 }}"#;
    /// let view = aep_core::event::EnvelopeView::read(line).unwrap();
    /// assert_eq!(view.data_raw(), Some(r#"{ "n" : 1.50 }"#));
    /// ```
    pub fn data_raw(&self) -> Option<&'a str> {
        self.plain.data.map(|Json(text)| text)
    }

    /// The extension attributes, in wire order, each with its value's JSON text.
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","acme":"x"}"#;
    /// let view = aep_core::event::EnvelopeView::read(line).unwrap();
    /// assert_eq!(view.extensions().collect::<Vec<_>>(), [("acme", "\"x\"")]);
    /// ```
    pub fn extensions(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        self.plain.extensions.iter().map(|&(k, Json(v))| (k, v))
    }

    /// The JSON text of extension attribute `name`, when present (as
    /// [`Event::extension_raw`](crate::Event::extension_raw) gives it).
    ///
    /// ```
    /// # let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","acme":"x"}"#;
    /// let view = aep_core::event::EnvelopeView::read(line).unwrap();
    /// assert_eq!(view.extension_raw("acme"), Some(r#""x""#));
    /// assert_eq!(view.extension_raw("other"), None);
    /// ```
    pub fn extension_raw(&self, name: &str) -> Option<&'a str> {
        self.extensions().find(|(k, _)| *k == name).map(|(_, v)| v)
    }
}
