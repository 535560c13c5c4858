//! The vendor-extension names (AEP-0001 §6): `x.{vendor}.{category}.{rest}`, each
//! segment `[a-z0-9_]+`, built mechanically from the vendor's own names so that an
//! unknown hook or event degrades to a vendor type, never to a guess on a core type.

/// `name` in snake case: `PreToolUse` → `pre_tool_use`, `ACPToolCall` →
/// `acp_tool_call`, `some-future hook` → `some_future_hook`. Only `[a-z0-9_]` remain;
/// an empty result is `unknown`.
///
/// ```
/// use aep_adapters::naming::snake;
/// assert_eq!(snake("SomeFutureHook"), "some_future_hook");
/// assert_eq!(snake("ACPToolCallEvent"), "acp_tool_call_event");
/// assert_eq!(snake("user_prompt"), "user_prompt");
/// assert_eq!(snake("Ümlaut-Hook!"), "mlaut_hook");
/// assert_eq!(snake("??"), "unknown");
/// ```
pub fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if c.is_ascii() {
            out.push('_');
        }
    }
    tidy(&out)
}

/// `name` lowercased to one segment: `[a-z0-9_]` kept, anything else dropped
/// (`SomeFutureHook` → `somefuturehook`, the Antigravity fallback).
///
/// ```
/// assert_eq!(aep_adapters::naming::flat("SomeFutureHook"), "somefuturehook");
/// ```
pub fn flat(name: &str) -> String {
    let out: String = name
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    tidy(&out)
}

/// `name` as dotted segments: every `/`, `.`, `_`, `-` or space separates
/// (`fs/read_text_file` → `fs.read.text.file`, the ACP and Cline fallbacks).
///
/// ```
/// assert_eq!(aep_adapters::naming::dotted("fs/read_text_file"), "fs.read.text.file");
/// assert_eq!(aep_adapters::naming::dotted("some_future_hook"), "some.future.hook");
/// ```
pub fn dotted(name: &str) -> String {
    let parts: Vec<String> = name
        .split(['/', '.', '_', '-', ' '])
        .map(flat)
        .filter(|p| p != "unknown")
        .collect();
    if parts.is_empty() {
        "unknown".to_owned()
    } else {
        parts.join(".")
    }
}

/// Collapses runs of `_`, trims them at the ends; `unknown` when nothing is left.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        out.push(c);
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        "unknown".to_owned()
    } else {
        out
    }
}

/// `x.{vendor}.{rest}`, with `rest` made of at least two segments (the envelope's type
/// pattern): a one-segment `rest` gains the mechanical `.event` suffix.
///
/// ```
/// use aep_adapters::naming::vendor_type;
/// assert_eq!(vendor_type("acp", "initialize"), "x.acp.initialize.event");
/// assert_eq!(vendor_type("acp", "session.cancel"), "x.acp.session.cancel");
/// ```
pub fn vendor_type(vendor: &str, rest: &str) -> String {
    if rest.contains('.') {
        format!("x.{vendor}.{rest}")
    } else {
        format!("x.{vendor}.{rest}.event")
    }
}

/// The mechanical fallback of the hook agents: `x.{vendor}.session.{snake(hook)}`.
///
/// ```
/// assert_eq!(aep_adapters::naming::session_fallback("codex", "SomeFutureHook"), "x.codex.session.some_future_hook");
/// ```
pub fn session_fallback(vendor: &str, hook: &str) -> String {
    format!("x.{vendor}.session.{}", snake(hook))
}

/// A SCREAMING or snake name as `{head}.{last}` (`TEXT_MESSAGE_START` →
/// `text_message.start`; one word gains `.event`): the AG-UI fallback.
///
/// ```
/// assert_eq!(aep_adapters::naming::last_split("WHOLLY_NOVEL_SIGNAL"), "wholly_novel.signal");
/// assert_eq!(aep_adapters::naming::last_split("RAW"), "raw.event");
/// ```
pub fn last_split(name: &str) -> String {
    let s = snake(&name.to_ascii_lowercase());
    match s.rsplit_once('_') {
        Some((head, last)) => format!("{head}.{last}"),
        None => format!("{s}.event"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_core::types::EventType;

    #[test]
    fn every_fallback_is_a_legal_vendor_type() {
        for hostile in [
            "",
            "...",
            "__",
            "A",
            "ÆØÅ",
            "a/b/c",
            "x.y",
            "😀hook",
            "Pre Tool-Use",
        ] {
            for t in [
                session_fallback("codex", hostile),
                vendor_type("acp", &dotted(hostile)),
                format!("x.agui.{}", last_split(hostile)),
                format!("x.antigravity.hook.{}", flat(hostile)),
            ] {
                assert!(EventType::parse(&t).is_ok(), "{hostile:?} -> {t}");
            }
        }
    }
}
