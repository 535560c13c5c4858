//! Events as text for people: one line each (time, session, type, subject, severity
//! coloured), and tables.

use aep::protocol::{Event, Severity};
use anstyle::{AnsiColor, Style};

/// The style of a severity: the higher, the louder.
pub fn severity_style(s: Severity) -> Style {
    match s {
        Severity::Debug => Style::new().dimmed(),
        Severity::Info => Style::new(),
        Severity::Notice => AnsiColor::Cyan.on_default(),
        Severity::Warning => AnsiColor::Yellow.on_default(),
        Severity::Error => AnsiColor::Red.on_default(),
        Severity::Critical => AnsiColor::Red.on_default().bold(),
    }
}

/// `HH:MM:SS.mmm` of an RFC 3339 time, or the text as it is when it is not one.
pub fn clock(time: &str) -> &str {
    match time.get(11..23) {
        Some(t)
            if time
                .as_bytes()
                .get(10)
                .is_some_and(|b| *b == b'T' || *b == b't' || *b == b' ') =>
        {
            t
        }
        _ => time,
    }
}

/// One event as one line: `time  session  type  subject  severity`.
pub fn event_line(e: &Event) -> String {
    let dim = Style::new().dimmed();
    let sev = e.severity();
    let s = severity_style(sev);
    let session = e.session().unwrap_or("-");
    let subject = e.subject().map(|s| format!("  {s}")).unwrap_or_default();
    format!(
        "{dim}{}{dim:#}  {session}  {s}{}{s:#}{subject}  {s}{}{s:#}",
        clock(e.time()),
        e.event_type(),
        sev.as_str()
    )
}

/// Rows under a header, each column as wide as its widest cell.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.trim_end().to_owned()
    };
    let head = Style::new().bold();
    let mut out = format!("{head}{}{head:#}\n", line(header.to_vec()));
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}
