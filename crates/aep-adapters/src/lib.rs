//! # aep-adapters: agent vocabularies to AEP events, without IO
//!
//! The seventeen source-vocabulary mappings of AEP-0002 Annex A (Claude Code, Codex,
//! Gemini CLI, Qwen Code, the VS Code agent, Kimi Code, OpenCode, Kilo Code, Cline,
//! Hermes, Antigravity, pi, ACP, AG-UI, OpenHands, and the Codex and VS Code OTel
//! channels), sans-IO like aep-core: no sockets, no clock, no files.
//!
//! Two layers:
//!
//! - **The mapping** ([`Source::map`], one module per source in [`sources`]): a pure
//!   function from one vendor payload (a [`Moment`]) to the [`Draft`]s of the events it
//!   means, every `data` member tagged with the capture level it needs. It is what the
//!   Annex A pins state, and `aep-conformance` checks it against every pin.
//! - **The session** ([`session`]): the state one agent session keeps between hooks
//!   (its position, its open run and tool calls, pending attention requests, the joins
//!   some sources need), which turns drafts into stamped [`aep_core::Event`]s:
//!   synthesized runs, cause links, terminals exactly once.
//!
//! What every source shares is written once: the capture posture ([`Posture`]:
//! `metadata` by default, `attention.*` at `redacted`, content kept at `redacted`
//! through aep-core's AEP-0003 §9.4 pipeline, the §9.3 digests always), the
//! vendor-extension fallback ([`naming`]), AEP-0006 forms from `AskUserQuestion` and
//! elicitation schemas ([`form`]), the two modes of an observation channel
//! ([`ChannelMode`]).
//!
//! ```
//! use aep_adapters::{Moment, Posture, Source};
//! use serde_json::json;
//!
//! let hook = json!({
//!     "hook_event_name": "PreToolUse", "session_id": "s1", "turn_id": "t1",
//!     "tool_name": "shell", "tool_use_id": "call_1", "tool_input": {"command": "ls -la"}
//! });
//! let posture = Posture::default();
//! let drafts = Source::Codex.map(&Moment::new(&hook), &posture);
//! assert_eq!(drafts[0].render(&posture).to_pin(), json!({
//!     "type": "tool.requested",
//!     "data": {"tool": {"name": "shell", "call_id": "call_1"}, "args_digest": "1df8bccaec747dc615b50678f35bf5b5"},
//!     "subject": "shell"
//! }));
//! ```
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod channel;
pub mod draft;
mod family;
pub mod form;
pub mod hold;
mod json;
pub mod naming;
pub mod session;
mod source;
pub mod sources;

pub use channel::ChannelMode;
pub use draft::{Draft, Posture, PostureError, Rendered, DEFAULT_CEILING};
pub use source::{Identity, Moment, Source, UnknownSource};
