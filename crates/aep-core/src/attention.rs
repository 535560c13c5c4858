//! The attention loop, target side (AEP-0002 §5.3, §7; AEP-0004 §5-6; AEP-0006;
//! AEP-0008): what an agent asking a person emits, how it checks the answer it gets, and
//! how every request reaches exactly one terminal, as values and a sans-IO state machine.
//!
//! ```text
//! attention.requested ──▶ control.attention.respond ──▶ control.accepted ──▶ attention.answered ──▶ attention.resolved
//!        │                  (invalid: control.rejected, still pending)
//!        ├── deadline ──▶ attention.timeout
//!        └── withdrawn ──▶ attention.resolved{resolution:"dismissed"}
//! ```
//!
//! - [`AttentionRequest`] (with [`FormField`]): what to ask (permission, a choice, free
//!   text, a form; the refusing option; `respond_via`; a timeout), checked before it is
//!   emitted ([`RequestError`]), and its `attention.requested` payload.
//! - [`AttentionRequest::check_answer`]: one answer against its request: AEP-0006's form
//!   rules ([`form_problems`], which the stream validator shares), AEP-0008's text
//!   answers (text naming an option is that option; text naming none is never the
//!   permissive choice); the [`Answer`] applied or why it is an [`InvalidAnswer`].
//! - [`AttentionDesk`]: the pending requests of a target; each respond
//!   [`Respond::Answered`] (accept, then `attention.answered` and `attention.resolved`,
//!   cause-linked to the command), [`Respond::Rejected`] (nacked `invalid`, the request
//!   stays pending) or [`Respond::NotPending`]; a deadline's `attention.timeout` and a
//!   withdrawal's `attention.resolved{resolution:"dismissed"}` ([`Closed`]).
//!
//! `aep_async::ControlTarget::ask` drives the desk on tokio; this module owns the rules.

mod answer;
mod desk;
mod request;

pub use answer::{form_problems, Answer, Applied, FormProblem, InvalidAnswer};
pub use desk::{Answered, AttentionDesk, Closed, Rejected, Respond, RESPOND};
pub use request::{AttentionRequest, FormField, RequestError, ALLOW, DENY};

/// The kind of a request (AEP-0002 §5.3 `kind`), the generated payload enum.
pub use crate::payload::AttentionRequestedKind as AttentionKind;
/// How an answer may travel (AEP-0008 `respond_via`), the generated payload enum.
pub use crate::payload::AttentionRequestedRespondVia as RespondVia;
