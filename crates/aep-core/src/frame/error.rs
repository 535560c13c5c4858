//! The `error` frame and its codes: the closed subscribe-refusal set (AEP-0003 §6.5),
//! the command-path codes (AEP-0004 §4.2) and the connection refusals (AEP-0003 §3.5, §4),
//! and what an emitter does with an event an endpoint refused ([`IngestRefusal`]).

use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use super::members::{put, write_extra, FrameError, Members};
use crate::names::open_set_as_str;

// A malformed frame's answer is an `error` frame, so it is written here, above
// `members` where the error is made (AEP-0003 §6.5).
impl FrameError {
    /// The in-band answer an endpoint owes this frame: a malformed `subscribe` is
    /// refused with `invalid-filter`, its `id` echoed, and the connection survives
    /// (AEP-0003 §6.5); any other malformed frame gets none, as an unreadable frame is
    /// ignored (§2).
    ///
    /// ```
    /// use aep_core::frame::{decode, DecodeError, ErrorCode, Frame};
    /// let Err(DecodeError::Frame(e)) = decode(r#"{"type":"subscribe","id":"s1","from":{}}"#) else {
    ///     panic!("want a frame error");
    /// };
    /// let refusal = e.refusal().expect("a subscribe is answered");
    /// assert_eq!((refusal.code, refusal.id.as_deref()), (ErrorCode::InvalidFilter, Some("s1")));
    /// let Err(DecodeError::Frame(e)) = decode(r#"{"type":"hello","versions":"0.1"}"#) else {
    ///     panic!("want a frame error");
    /// };
    /// assert!(e.refusal().is_none());
    /// ```
    pub fn refusal(&self) -> Option<ErrorFrame> {
        if self.frame_type != "subscribe" {
            return None;
        }
        let refusal = ErrorFrame::new(ErrorCode::InvalidFilter).with_detail(self.to_string());
        Some(match &self.id {
            Some(id) => refusal.with_id(id.clone()),
            None => refusal,
        })
    }
}

/// The `code` of an `error` frame.
///
/// The spec defines closed sets per situation: the subscribe refusals of AEP-0003 §6.5
/// ([`is_subscribe_code`](Self::is_subscribe_code)), the command-path refusals of
/// AEP-0004 §4.2 ([`is_command_code`](Self::is_command_code)), and the connection
/// refusals of AEP-0003 §3.5 and §4. Codes outside them (the reference relay's
/// `bad-json`, `invalid-event`, `binary-unsupported`, or a future code) read as
/// [`ErrorCode::Other`], never as an error. Parsing a known code always yields its
/// variant, never `Other`.
///
/// ```
/// use aep_core::frame::ErrorCode;
/// assert_eq!(ErrorCode::from("no-route"), ErrorCode::NoRoute);
/// assert_eq!(ErrorCode::from("bad-json"), ErrorCode::Other("bad-json".into()));
/// assert!(ErrorCode::LimitExceeded.is_subscribe_code());
/// assert!(ErrorCode::Ambiguous.is_command_code());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The first frame was not `hello` (AEP-0003 §3.5 rule 1).
    HelloRequired,
    /// No version in common; the frame lists `versions` (AEP-0003 §4 rule 1).
    VersionUnsupported,
    /// A malformed `filter` or `from`, or an illegal filter key (AEP-0003 §6.5).
    InvalidFilter,
    /// The subscription needs an undeclared filter dialect (AEP-0003 §6.5).
    UnknownDialect,
    /// This connection may not do this: subscribe, roster, or command (AEP-0003 §6.5,
    /// §4.1; AEP-0004 §4.2).
    Unauthorized,
    /// An endpoint resource limit (AEP-0003 §6.5).
    LimitExceeded,
    /// The target does not accept the command type; refused on its behalf
    /// (AEP-0004 §4.2).
    Unsupported,
    /// More than one live claimant of the addressed session (AEP-0004 §4.5).
    Ambiguous,
    /// No connected emitter owns the addressed session (AEP-0004 §4.2).
    NoRoute,
    /// Any other code, kept as sent.
    Other(String),
}

impl ErrorCode {
    /// The wire spelling.
    ///
    /// ```
    /// assert_eq!(aep_core::frame::ErrorCode::HelloRequired.as_str(), "hello-required");
    /// ```
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::HelloRequired => "hello-required",
            ErrorCode::VersionUnsupported => "version-unsupported",
            ErrorCode::InvalidFilter => "invalid-filter",
            ErrorCode::UnknownDialect => "unknown-dialect",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::LimitExceeded => "limit-exceeded",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::Ambiguous => "ambiguous",
            ErrorCode::NoRoute => "no-route",
            ErrorCode::Other(s) => s,
        }
    }

    /// Whether the code is in the closed subscribe-refusal set of AEP-0003 §6.5.
    ///
    /// ```
    /// use aep_core::frame::ErrorCode;
    /// assert!(ErrorCode::InvalidFilter.is_subscribe_code());
    /// assert!(!ErrorCode::NoRoute.is_subscribe_code());
    /// assert!(!ErrorCode::Other("teapot".into()).is_subscribe_code());
    /// ```
    pub fn is_subscribe_code(&self) -> bool {
        self.subscribe_refusal().is_some()
    }

    /// Whether the code is one of the command-path codes of AEP-0004 §4.2.
    ///
    /// ```
    /// use aep_core::frame::ErrorCode;
    /// assert!(ErrorCode::NoRoute.is_command_code() && ErrorCode::Unauthorized.is_command_code());
    /// assert!(!ErrorCode::HelloRequired.is_command_code());
    /// ```
    pub fn is_command_code(&self) -> bool {
        self.command_refusal().is_some()
    }

    /// The code as a member of the closed subscribe-refusal set, if it is one.
    ///
    /// ```
    /// use aep_core::frame::{ErrorCode, SubscribeRefusal};
    /// assert_eq!(ErrorCode::LimitExceeded.subscribe_refusal(), Some(SubscribeRefusal::LimitExceeded));
    /// assert_eq!(ErrorCode::NoRoute.subscribe_refusal(), None);
    /// ```
    pub fn subscribe_refusal(&self) -> Option<SubscribeRefusal> {
        SubscribeRefusal::ALL
            .into_iter()
            .find(|r| ErrorCode::from(*r) == *self)
    }

    /// The code as a member of the command-path set, if it is one.
    ///
    /// ```
    /// use aep_core::frame::{CommandRefusal, ErrorCode};
    /// assert_eq!(ErrorCode::Ambiguous.command_refusal(), Some(CommandRefusal::Ambiguous));
    /// ```
    pub fn command_refusal(&self) -> Option<CommandRefusal> {
        CommandRefusal::ALL
            .iter()
            .copied()
            .find(|r| ErrorCode::from(*r) == *self)
    }
}

/// What an emitter does with events an endpoint refused: send them again with the same
/// ids, or count them rejected for good. One rule for both emitting bindings: a
/// failure of the endpoint (an HTTP `5xx`; over WebSocket `limit-exceeded`, an endpoint
/// resource such as its disk running out) may pass, and the at-least-once contract
/// sends the same event again (AEP-0003 §3.2 rule 4, AEP-0001 §7.4); a refusal of the
/// event itself (a `4xx`, `invalid-event`, `bad-json`, `unauthorized`, a code this
/// crate does not know) is final, and sending the same bytes again is refused again.
///
/// ```
/// use aep_core::frame::{ErrorCode, IngestRefusal};
/// assert_eq!(IngestRefusal::of_status(507), IngestRefusal::Transient);
/// assert_eq!(IngestRefusal::of_status(400), IngestRefusal::Permanent);
/// assert_eq!(IngestRefusal::of_code(&ErrorCode::LimitExceeded), IngestRefusal::Transient);
/// assert!(!IngestRefusal::of_code(&ErrorCode::from("invalid-event")).is_transient());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IngestRefusal {
    /// The endpoint could not take the events now: send them again, same ids.
    Transient,
    /// The endpoint refused the events themselves: count them rejected.
    Permanent,
}

impl IngestRefusal {
    /// An HTTP ingest's refusing status: a `5xx` is the server's failure, anything
    /// else (a `4xx`: invalid, unauthorized, too large) the request's (AEP-0003 §3.2
    /// rules 3 and 4).
    pub fn of_status(status: u16) -> IngestRefusal {
        if status >= 500 {
            IngestRefusal::Transient
        } else {
            IngestRefusal::Permanent
        }
    }

    /// The code of an `error` frame refusing an event written on a WebSocket: only
    /// `limit-exceeded` (an endpoint resource limit, AEP-0003 §6.5) is the endpoint's
    /// state rather than the event's, as a `5xx` (`507` for a full disk) is over HTTP.
    pub fn of_code(code: &ErrorCode) -> IngestRefusal {
        match code {
            ErrorCode::LimitExceeded => IngestRefusal::Transient,
            _ => IngestRefusal::Permanent,
        }
    }

    /// Whether the same events may be taken if sent again.
    pub fn is_transient(self) -> bool {
        self == IngestRefusal::Transient
    }
}

/// The closed set of codes refusing a `subscribe` (AEP-0003 §6.5); a `roster` request
/// from an emitter is refused with its `unauthorized` too (§4.1 rule 2). An endpoint
/// that builds refusals from this type cannot step outside the set, and the spec
/// declares it closed, so this enum is exhaustive.
///
/// ```
/// use aep_core::frame::{ErrorFrame, Frame, SubscribeRefusal};
/// let f = ErrorFrame::subscribe_refusal("sub-1", SubscribeRefusal::InvalidFilter);
/// assert_eq!(Frame::from(f.with_detail("filter must be a JSON object")).to_json(),
///     r#"{"type":"error","id":"sub-1","code":"invalid-filter","detail":"filter must be a JSON object"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubscribeRefusal {
    /// `invalid-filter`: a malformed `filter` or `from`, or an illegal filter key.
    InvalidFilter,
    /// `unknown-dialect`: a filter dialect the endpoint did not advertise.
    UnknownDialect,
    /// `unauthorized`: this connection may not subscribe (or ask for a roster).
    Unauthorized,
    /// `limit-exceeded`: an endpoint resource limit; `detail` should name it.
    LimitExceeded,
}

impl SubscribeRefusal {
    /// The whole set.
    ///
    /// ```
    /// use aep_core::frame::{ErrorCode, SubscribeRefusal};
    /// assert!(SubscribeRefusal::ALL.iter().all(|r| ErrorCode::from(*r).is_subscribe_code()));
    /// ```
    pub const ALL: [SubscribeRefusal; 4] = [
        SubscribeRefusal::InvalidFilter,
        SubscribeRefusal::UnknownDialect,
        SubscribeRefusal::Unauthorized,
        SubscribeRefusal::LimitExceeded,
    ];
}

impl From<SubscribeRefusal> for ErrorCode {
    fn from(r: SubscribeRefusal) -> ErrorCode {
        match r {
            SubscribeRefusal::InvalidFilter => ErrorCode::InvalidFilter,
            SubscribeRefusal::UnknownDialect => ErrorCode::UnknownDialect,
            SubscribeRefusal::Unauthorized => ErrorCode::Unauthorized,
            SubscribeRefusal::LimitExceeded => ErrorCode::LimitExceeded,
        }
    }
}

/// The command-path codes a relay refuses a command with, toward the sender
/// (AEP-0004 §4.2, §4.5).
///
/// ```
/// use aep_core::frame::{CommandRefusal, ErrorFrame, Frame};
/// let f = ErrorFrame::command_refusal("01JCMD", CommandRefusal::NoRoute);
/// assert_eq!(Frame::from(f).to_json(), r#"{"type":"error","code":"no-route","cause":"01JCMD"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CommandRefusal {
    /// `unauthorized`: unauthenticated binding, or a policy denial.
    Unauthorized,
    /// `unsupported`: outside the target's declared `accepts`.
    Unsupported,
    /// `ambiguous`: more than one live claimant of the session.
    Ambiguous,
    /// `no-route`: no connected emitter owns the session.
    NoRoute,
}

impl CommandRefusal {
    /// The whole set.
    ///
    /// ```
    /// use aep_core::frame::{CommandRefusal, ErrorCode};
    /// assert!(CommandRefusal::ALL.iter().all(|r| ErrorCode::from(*r).is_command_code()));
    /// ```
    pub const ALL: &'static [CommandRefusal] = &[
        CommandRefusal::Unauthorized,
        CommandRefusal::Unsupported,
        CommandRefusal::Ambiguous,
        CommandRefusal::NoRoute,
    ];
}

impl From<CommandRefusal> for ErrorCode {
    fn from(r: CommandRefusal) -> ErrorCode {
        match r {
            CommandRefusal::Unauthorized => ErrorCode::Unauthorized,
            CommandRefusal::Unsupported => ErrorCode::Unsupported,
            CommandRefusal::Ambiguous => ErrorCode::Ambiguous,
            CommandRefusal::NoRoute => ErrorCode::NoRoute,
        }
    }
}

impl From<&str> for ErrorCode {
    fn from(s: &str) -> ErrorCode {
        match s {
            "hello-required" => ErrorCode::HelloRequired,
            "version-unsupported" => ErrorCode::VersionUnsupported,
            "invalid-filter" => ErrorCode::InvalidFilter,
            "unknown-dialect" => ErrorCode::UnknownDialect,
            "unauthorized" => ErrorCode::Unauthorized,
            "limit-exceeded" => ErrorCode::LimitExceeded,
            "unsupported" => ErrorCode::Unsupported,
            "ambiguous" => ErrorCode::Ambiguous,
            "no-route" => ErrorCode::NoRoute,
            other => ErrorCode::Other(other.to_owned()),
        }
    }
}

impl From<String> for ErrorCode {
    fn from(s: String) -> ErrorCode {
        match ErrorCode::from(s.as_str()) {
            ErrorCode::Other(_) => ErrorCode::Other(s),
            known => known,
        }
    }
}

open_set_as_str!(ErrorCode, ErrorCode::from);

/// The `error` frame: a connection-scoped refusal, never an event, never persisted.
///
/// `id` correlates it with a `subscribe` or `roster` request (AEP-0003 §6.5, §4.1);
/// `cause` with a command the relay refused on the target's behalf (AEP-0004 §4.2).
///
/// ```
/// use aep_core::frame::{decode, ErrorCode, Frame, Message};
/// let Message::Frame(Frame::Error(e)) = decode(r#"{"type":"error","id":"sub-1","code":"invalid-filter","detail":"filter must be a JSON object"}"#)? else { panic!() };
/// assert_eq!(e.code, ErrorCode::InvalidFilter);
/// assert_eq!(e.id.as_deref(), Some("sub-1"));
/// # Ok::<(), aep_core::frame::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ErrorFrame {
    /// What was refused.
    pub code: ErrorCode,
    /// The refused request's `id` (subscribe, roster).
    pub id: Option<String>,
    /// The refused command's `id` (AEP-0004 §4.2).
    pub cause: Option<String>,
    /// Human-readable detail.
    pub detail: Option<String>,
    /// The supported versions, on `version-unsupported` (AEP-0003 §4 rule 1).
    pub versions: Option<Vec<String>>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ErrorFrame {
    /// An error frame with `code` and nothing else.
    pub fn new(code: ErrorCode) -> ErrorFrame {
        ErrorFrame {
            code,
            id: None,
            cause: None,
            detail: None,
            versions: None,
            extra: Map::new(),
        }
    }

    /// The in-band refusal of the `subscribe` (or `roster`) request `id`
    /// (AEP-0003 §6.5): the connection survives it.
    pub fn subscribe_refusal(id: impl Into<String>, code: SubscribeRefusal) -> ErrorFrame {
        ErrorFrame::new(code.into()).with_id(id)
    }

    /// A relay's refusal of the command `cause`, sent to the sender's connection
    /// (AEP-0004 §4.2); never an event, never in the session's history.
    pub fn command_refusal(cause: impl Into<String>, code: CommandRefusal) -> ErrorFrame {
        ErrorFrame::new(code.into()).with_cause(cause)
    }

    crate::setters! {
        /// Sets `id`.
        #[must_use]
        pub fn with_id(id: impl Into<String>) => id = Some(id.into());

        /// Sets `cause`.
        #[must_use]
        pub fn with_cause(cause: impl Into<String>) => cause = Some(cause.into());

        /// Sets `detail`.
        #[must_use]
        pub fn with_detail(detail: impl Into<String>) => detail = Some(detail.into());
    }

    /// Sets `versions`.
    #[must_use]
    pub fn with_versions<I, S>(mut self, versions: I) -> ErrorFrame
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.versions = Some(versions.into_iter().map(Into::into).collect());
        self
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<ErrorFrame, FrameError> {
        let code = ErrorCode::from(m.req_str("code")?);
        let id = m.opt_str("id")?;
        let cause = m.opt_str("cause")?;
        let detail = match m.take("detail") {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => Some(other.to_string()),
        };
        let versions = m.opt_strings("versions")?;
        Ok(ErrorFrame {
            code,
            id,
            cause,
            detail,
            versions,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "id", self.id.as_ref())?;
        m.serialize_entry("code", &self.code)?;
        put(m, "cause", self.cause.as_ref())?;
        put(m, "detail", self.detail.as_ref())?;
        put(m, "versions", self.versions.as_ref())?;
        write_extra(m, &self.extra)
    }
}
