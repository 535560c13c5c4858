//! One module per Annex A source: its table, its identity rules, and the deviations it
//! documents, as the Annex asks ("deviations MUST be documented in the adapter").

pub mod acp;
pub mod agui;
pub mod antigravity;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod codex_otel;
pub mod gemini_cli;
pub mod hermes;
pub mod kilocode;
pub mod kimi_code;
pub mod opencode;
pub mod openhands;
pub mod pi;
pub mod qwen_code;
pub mod vscode;
pub mod vscode_otel;

mod bus;
mod otel;
