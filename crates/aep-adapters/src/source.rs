//! The seventeen sources of AEP-0002 Annex A behind one shape: a [`Moment`] (the
//! vendor's payload and what the agent said beside it) and a [`Posture`] in, the
//! [`Draft`]s of the events it maps to out.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::channel::ChannelMode;
use crate::draft::{Draft, Posture};
use crate::sources;

/// One source vocabulary of AEP-0002 Annex A.
///
/// ```
/// use aep_adapters::Source;
/// let s: Source = "gemini-cli".parse()?;
/// assert_eq!(s, Source::GeminiCli);
/// assert_eq!(s.name(), "gemini-cli");
/// assert!(s.is_hook_agent());
/// assert!(!Source::Acp.is_hook_agent());
/// assert_eq!(Source::ALL.len(), 17);
/// # Ok::<(), aep_adapters::UnknownSource>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Claude Code hooks (A.1).
    ClaudeCode,
    /// Codex hooks (A.2).
    Codex,
    /// Gemini CLI hooks (A.3).
    GeminiCli,
    /// Qwen Code hooks (A.4).
    QwenCode,
    /// VS Code agent hooks (A.5).
    Vscode,
    /// Kimi Code CLI hooks (A.6); its web channel is [`sources::kimi_code::web`].
    KimiCode,
    /// OpenCode plugin moments (A.7); its SSE channel is [`sources::opencode::sse`].
    Opencode,
    /// Kilo Code plugin moments (A.8); its SSE channel is [`sources::kilocode::sse`].
    Kilocode,
    /// Cline subprocess hooks (A.9).
    Cline,
    /// Hermes Agent shell hooks (A.10).
    Hermes,
    /// Antigravity hooks (A.11).
    Antigravity,
    /// pi extension-bus events (A.12).
    Pi,
    /// ACP, the Agent Client Protocol (A.13).
    Acp,
    /// AG-UI (A.14).
    Agui,
    /// OpenHands agent-server events (A.15).
    Openhands,
    /// The Codex OTel channel (A.2).
    CodexOtel,
    /// The VS Code agent OTel channel (A.5).
    VscodeOtel,
}

/// A source name no source has.
///
/// ```
/// let err = "claude".parse::<aep_adapters::Source>().unwrap_err();
/// assert!(err.to_string().contains("claude-code"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSource(pub String);

impl fmt::Display for UnknownSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Source::ALL.iter().map(|s| s.name()).collect();
        write!(
            f,
            "unknown source `{}`; sources: {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownSource {}

/// Where a source's identity comes from (the pins' `identity` block, AEP-0002 Annex A).
///
/// ```
/// let id = aep_adapters::Source::Codex.identity();
/// assert_eq!((id.session_from, id.run_from), ("session_id", Some("turn_id")));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// What names the AEP session.
    pub session_from: &'static str,
    /// What names the AEP run; `None` where the session runtime synthesizes runs.
    pub run_from: Option<&'static str>,
}

impl Source {
    /// Every source, in Annex A order.
    pub const ALL: [Source; 17] = [
        Source::ClaudeCode,
        Source::Codex,
        Source::GeminiCli,
        Source::QwenCode,
        Source::Vscode,
        Source::KimiCode,
        Source::Opencode,
        Source::Kilocode,
        Source::Cline,
        Source::Hermes,
        Source::Antigravity,
        Source::Pi,
        Source::Acp,
        Source::Agui,
        Source::Openhands,
        Source::CodexOtel,
        Source::VscodeOtel,
    ];

    /// The twelve agents that call a hook command or load a plugin (what `aep hook`
    /// serves).
    ///
    /// ```
    /// use aep_adapters::Source;
    /// assert_eq!((Source::HOOK_AGENTS[0], Source::HOOK_AGENTS[11]), (Source::ClaudeCode, Source::Pi));
    /// assert!(!Source::HOOK_AGENTS.contains(&Source::Acp));
    /// ```
    // Annex A lists them first: the first twelve of `ALL`.
    pub const HOOK_AGENTS: [Source; 12] = match Source::ALL.first_chunk() {
        Some(agents) => *agents,
        None => panic!("Source::ALL holds the twelve hook agents first"),
    };

    /// The source's name, as the pins' file names spell it.
    ///
    /// ```
    /// assert_eq!(aep_adapters::Source::VscodeOtel.name(), "vscode-otel");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Source::ClaudeCode => "claude-code",
            Source::Codex => "codex",
            Source::GeminiCli => "gemini-cli",
            Source::QwenCode => "qwen-code",
            Source::Vscode => "vscode",
            Source::KimiCode => "kimi-code",
            Source::Opencode => "opencode",
            Source::Kilocode => "kilocode",
            Source::Cline => "cline",
            Source::Hermes => "hermes",
            Source::Antigravity => "antigravity",
            Source::Pi => "pi",
            Source::Acp => "acp",
            Source::Agui => "agui",
            Source::Openhands => "openhands",
            Source::CodexOtel => "codex-otel",
            Source::VscodeOtel => "vscode-otel",
        }
    }

    /// The vendor token of the source's `x.{vendor}.*` types (an OTel channel shares its
    /// agent's).
    ///
    /// ```
    /// assert_eq!(aep_adapters::Source::CodexOtel.vendor(), "codex");
    /// ```
    pub fn vendor(self) -> &'static str {
        match self {
            Source::CodexOtel => "codex",
            Source::VscodeOtel => "vscode",
            other => other.name(),
        }
    }

    /// Whether the agent calls a hook command or loads a plugin (one of the twelve).
    ///
    /// ```
    /// assert!(aep_adapters::Source::Pi.is_hook_agent());
    /// ```
    pub fn is_hook_agent(self) -> bool {
        Source::HOOK_AGENTS.contains(&self)
    }

    /// Where the source's identity comes from.
    ///
    /// ```
    /// assert_eq!(aep_adapters::Source::GeminiCli.identity().run_from, None);
    /// ```
    pub fn identity(self) -> Identity {
        let (session_from, run_from) = match self {
            Source::ClaudeCode | Source::GeminiCli | Source::QwenCode | Source::Vscode => {
                ("session_id", None)
            }
            Source::KimiCode => ("session_id", None),
            Source::Codex => ("session_id", Some("turn_id")),
            Source::Opencode | Source::Kilocode => ("properties.sessionID", None),
            Source::Cline => ("taskId", None),
            Source::Hermes => ("session_id", Some("extra.turn_id")),
            Source::Antigravity => ("conversationId", None),
            Source::Pi => ("session.id", None),
            Source::Acp => ("params.sessionId", Some("the session/prompt request id")),
            Source::Agui => ("threadId", Some("runId")),
            Source::Openhands => ("conversation_id", None),
            Source::CodexOtel => ("conversation.id", None),
            Source::VscodeOtel => ("resource:session.id", None),
        };
        Identity {
            session_from,
            run_from,
        }
    }

    /// The AEP session a payload of this source belongs to (its `session_from`), when
    /// the payload names one. A payload that names none (Kimi Code's subagent hooks,
    /// a VS Code payload without its optional `session_id`) belongs to the caller's
    /// fallback session (`aep hook` uses `unknown`).
    ///
    /// ```
    /// use aep_adapters::Source;
    /// use serde_json::json;
    /// assert_eq!(Source::Cline.session_of(&json!({"taskId": "task_1"})).as_deref(), Some("task_1"));
    /// let bus = json!({"kind": "bus", "event": {"type": "session.created", "properties": {"info": {"id": "s9"}}}});
    /// assert_eq!(Source::Opencode.session_of(&bus).as_deref(), Some("s9"));
    /// assert_eq!(Source::Hermes.session_of(&json!({"session_id": "", "extra": {"session_key": "s1"}})).as_deref(), Some("s1"));
    /// ```
    pub fn session_of(self, p: &Value) -> Option<String> {
        use crate::json::{get, s, s_at};
        let found = match self {
            Source::ClaudeCode
            | Source::Codex
            | Source::GeminiCli
            | Source::QwenCode
            | Source::Vscode
            | Source::KimiCode => s(p, "session_id"),
            Source::Opencode | Source::Kilocode => {
                let e = get(p, "event").unwrap_or(p);
                let props = get(e, "properties").unwrap_or(&Value::Null);
                s(props, "sessionID")
                    .or(s_at(props, &["info", "sessionID"]))
                    .or(s_at(props, &["info", "id"]))
                    .or(s_at(p, &["permission", "sessionID"]))
                    .or(s_at(p, &["input", "sessionID"]))
            }
            Source::Cline => s(p, "taskId"),
            Source::Hermes => s(p, "session_id")
                .or(s_at(p, &["extra", "session_key"]))
                .or(s_at(p, &["extra", "parent_session_id"])),
            Source::Antigravity => s(p, "conversationId"),
            Source::Pi => s_at(p, &["session", "id"]),
            Source::Acp => s_at(p, &["params", "sessionId"]).or(s_at(p, &["result", "sessionId"])),
            Source::Agui => s(p, "threadId"),
            Source::Openhands => s(p, "conversation_id"),
            Source::CodexOtel => s_at(p, &["attributes", "conversation.id"]),
            Source::VscodeOtel => {
                s_at(p, &["resource", "session.id"]).or(s_at(p, &["attributes", "session.id"]))
            }
        };
        found.map(str::to_owned)
    }

    /// What a hook of this agent prints on stdout when it has no decision to give: the
    /// reply that leaves the agent to do as it would have done (`hook`: the hook's name,
    /// for agents that pass it apart from the payload). Nothing for most; Cline reads a
    /// JSON object (`{}`); Antigravity wants its safely-handled empty decision on
    /// `PreToolUse` and `Stop` (never a named decision, never `"continue"`) and `{}`
    /// elsewhere.
    ///
    /// ```
    /// use aep_adapters::Source;
    /// assert_eq!(Source::Antigravity.neutral_reply(Some("PreToolUse")), r#"{"decision": ""}"#);
    /// assert_eq!(Source::Antigravity.neutral_reply(Some("PostToolUse")), "{}");
    /// assert_eq!(Source::ClaudeCode.neutral_reply(None), "");
    /// ```
    pub fn neutral_reply(self, hook: Option<&str>) -> &'static str {
        match (self, hook) {
            (Source::Antigravity, Some("PreToolUse" | "Stop")) => {
                sources::antigravity::NEUTRAL_DECISION
            }
            (Source::Antigravity | Source::Cline, _) => "{}",
            _ => "",
        }
    }

    /// Maps one moment of this source to the drafts of its events, at `posture` (which
    /// decides the opt-ins; rendering the drafts applies its ceiling).
    ///
    /// This is the pure mapping the Annex A pins state: no state, no identity beyond
    /// what the payload names. [`crate::session`] keeps the state (runs, tool pairs,
    /// pending attention, joins) and stamps the envelopes.
    ///
    /// ```
    /// use aep_adapters::{Moment, Posture, Source};
    /// use serde_json::json;
    /// let payload = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "fix it"});
    /// let drafts = Source::QwenCode.map(&Moment::new(&payload), &Posture::default());
    /// assert_eq!(drafts[0].render(&Posture::default()).to_pin(), json!({"type": "run.started", "data": {"trigger": "user"}}));
    /// ```
    pub fn map(self, moment: &Moment<'_>, posture: &Posture) -> Vec<Draft> {
        let p = moment.payload;
        match self {
            Source::ClaudeCode => sources::claude_code::map(p),
            Source::Codex => sources::codex::map(p),
            Source::GeminiCli => sources::gemini_cli::map(p),
            Source::QwenCode => sources::qwen_code::map(p),
            Source::Vscode => sources::vscode::map(p),
            Source::KimiCode => sources::kimi_code::map(p),
            Source::Opencode => sources::opencode::map(p),
            Source::Kilocode => sources::kilocode::map(p),
            Source::Cline => sources::cline::map(p),
            Source::Hermes => sources::hermes::map(p),
            Source::Antigravity => {
                sources::antigravity::map(moment.hook.unwrap_or(""), p, moment.joined)
            }
            Source::Pi => sources::pi::map(p, posture),
            Source::Acp => sources::acp::map(p, posture),
            Source::Agui => sources::agui::map(p, posture),
            Source::Openhands => sources::openhands::map(p, posture),
            Source::CodexOtel => sources::codex_otel::map(p, moment.mode),
            Source::VscodeOtel => sources::vscode_otel::map(p, moment.mode),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Source {
    type Err = UnknownSource;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Source::ALL
            .into_iter()
            .find(|src| src.name() == s)
            .ok_or_else(|| UnknownSource(s.to_owned()))
    }
}

/// One thing a source said: its payload, and what the agent or the session supplies
/// beside it.
///
/// ```
/// use aep_adapters::{ChannelMode, Moment};
/// let payload = serde_json::json!({"stepIdx": 5, "error": ""});
/// let m = Moment::new(&payload).hook("PostToolUse").joined_name("run_command");
/// assert_eq!(m.payload()["stepIdx"], 5);
/// let otel = Moment::new(&payload).mode(ChannelMode::Primary);
/// # let _ = otel;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Moment<'a> {
    payload: &'a Value,
    hook: Option<&'a str>,
    joined: Option<&'a str>,
    mode: ChannelMode,
}

impl<'a> Moment<'a> {
    /// A moment carrying `payload` alone.
    pub fn new(payload: &'a Value) -> Moment<'a> {
        Moment {
            payload,
            hook: None,
            joined: None,
            mode: ChannelMode::Companion,
        }
    }

    aep_core::setters! {
        /// The hook name when the agent names it outside the payload (Antigravity passes it
        /// on the command line: no payload names its own event).
        pub fn hook(hook: &'a str) => hook = Some(hook);
        /// The tool name the session joined to this moment (Antigravity's
        /// `(conversationId, stepIdx)` join, made by [`crate::session`]).
        pub fn joined_name(name: &'a str) => joined = Some(name);
        /// The channel mode of an OTel source (companion by default).
        pub fn mode(mode: ChannelMode) => mode = mode;
    }

    /// The payload.
    pub fn payload(&self) -> &'a Value {
        self.payload
    }

    /// The hook name given beside the payload, if any.
    pub fn hook_name(&self) -> Option<&'a str> {
        self.hook
    }
}
