//! Where output goes and how it looks: JSON for programs on stdout, text for people on
//! stderr, colour only on a terminal and never under `NO_COLOR` (anstream decides), a
//! progress bar only when stderr is a terminal.

use std::io::{IsTerminal, Write};

use anstyle::{AnsiColor, Style};

pub use aep::protocol::redact::redact_urls;

/// Whether stdout is a terminal: the default output of a subcommand that prints events
/// is text there and JSON otherwise.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// The style of a label: errors red, warnings yellow, notes dim.
pub const ERROR: Style = AnsiColor::Red.on_default().bold();
/// Warnings.
pub const WARN: Style = AnsiColor::Yellow.on_default().bold();
/// Success.
pub const OK: Style = AnsiColor::Green.on_default().bold();
/// Secondary text.
pub const DIM: Style = Style::new().dimmed();

/// Writes `label: message` to stderr, the label styled; the stream drops the colour
/// where it does not belong. A URL in the message loses its credentials (userinfo,
/// `?token=`): no line of `aep` shows a secret pasted into `--url`.
pub fn say(style: Style, label: &str, message: impl std::fmt::Display) {
    let message = message.to_string();
    let message = redact_urls(&message);
    let mut err = anstream::stderr().lock();
    let _ = writeln!(err, "{style}{label}{style:#} {message}");
}

/// `error: ...` on stderr.
pub fn error(message: impl std::fmt::Display) {
    say(ERROR, "error:", message);
}

/// `warning: ...` on stderr.
pub fn warn(message: impl std::fmt::Display) {
    say(WARN, "warning:", message);
}

/// A line of plain information on stderr, URLs redacted as [`say`] does.
pub fn note(message: impl std::fmt::Display) {
    let message = message.to_string();
    let message = redact_urls(&message);
    let mut err = anstream::stderr().lock();
    let _ = writeln!(err, "{message}");
}

/// A progress bar over the bytes of an input on stderr when it is a terminal (a spinner
/// when the size is unknown), a hidden one otherwise, so a log file or a CI transcript
/// gets no control characters. Its message counts events.
pub fn progress(total_bytes: Option<u64>) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let (bar, template) = match total_bytes {
        Some(n) => (
            indicatif::ProgressBar::new(n),
            "{bar:40} {bytes}/{total_bytes} {msg} ({eta} left)",
        ),
        None => (
            indicatif::ProgressBar::new_spinner(),
            "{spinner} {bytes} {msg} ({elapsed})",
        ),
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// One JSON document on stdout, pretty-printed. A closed stdout (a pipe whose reader
/// left) is not an error worth reporting.
pub fn print_json_pretty(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
    let _ = out.flush();
}

/// One JSON document on stdout, on one line.
pub fn print_json(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = writeln!(out);
    let _ = out.flush();
}
