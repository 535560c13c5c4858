//! Editing an agent's configuration without clobbering it (`aep setup`): hook entries
//! merged into JSON settings, marker-fenced blocks in TOML and YAML files, and the
//! line diff `--dry-run` prints.
//!
//! What is ours is recognized by its command (`aep ... hook AGENT`), so a second run
//! changes nothing, a moved `aep` is refreshed in place, and `--remove` takes out only
//! what setup wrote: the user's own hooks, keys and comments-free JSON stay as they
//! were (JSON is rewritten with two-space indentation, keys in their order).

use serde_json::{json, Map, Value};

/// How an agent's JSON file holds its hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Claude Code's shape (also Codex, Gemini CLI, Qwen Code, Antigravity):
    /// `hooks.{Event}: [{matcher?, hooks: [{type: "command", command}]}]`.
    Groups,
    /// The VS Code agent's: `hooks.{Event}: [{type: "command", command}]`.
    Flat,
}

/// One hook to register: the event, the tool matcher (tool events), the command.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: String,
    pub matcher: Option<String>,
    pub command: String,
    /// The handler's `timeout` in seconds, where the hook is held (a permission loop).
    pub timeout: Option<u64>,
}

/// Whether `command` is one `aep setup` wrote for `agent`: `... hook AGENT[ HOOK]`
/// run by a program named `aep`.
pub fn is_ours(command: &str, agent: &str) -> bool {
    let command = command.trim();
    // The program: a quoted path up to its closing quote, else the first word.
    let (program, rest) = match command.chars().next() {
        Some(q @ ('\'' | '"')) => match command[1..].find(q) {
            Some(i) => (&command[1..=i], &command[i + 2..]),
            None => return false,
        },
        _ => match command.split_once(char::is_whitespace) {
            Some((p, r)) => (p, r),
            None => return false,
        },
    };
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let mut words = rest.split_whitespace();
    (name == "aep" || name == "aep.exe")
        && words.next() == Some("hook")
        && words.next() == Some(agent)
}

fn command_of(entry: &Value) -> Option<&str> {
    entry.get("command").and_then(Value::as_str)
}

/// Merges `hooks` into the settings document `doc` (an object; created members as
/// needed). Returns whether anything changed. An entry of ours for the same event
/// (and hook name) is refreshed in place; the user's entries are never touched.
pub fn merge_hooks(
    doc: &mut Value,
    shape: Shape,
    agent: &str,
    hooks: &[Hook],
) -> Result<bool, String> {
    let root = doc
        .as_object_mut()
        .ok_or("the file holds no JSON object at its top")?;
    let table = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let table = table
        .as_object_mut()
        .ok_or("its `hooks` member is not an object")?;
    let mut changed = false;
    for hook in hooks {
        let list = table
            .entry(hook.event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        let list = list
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{}` is not an array", hook.event))?;
        // The entry of ours already there, if any (refreshed when it differs).
        let mut found = false;
        for item in list.iter_mut() {
            let handlers: Vec<&mut Value> = match shape {
                Shape::Flat => vec![item],
                Shape::Groups => match item.get_mut("hooks").and_then(Value::as_array_mut) {
                    Some(h) => h.iter_mut().collect(),
                    None => Vec::new(),
                },
            };
            for h in handlers {
                let Some(cmd) = command_of(h) else { continue };
                if is_ours(cmd, agent) && same_hook(cmd, &hook.command) {
                    found = true;
                    if cmd != hook.command {
                        h["command"] = json!(hook.command);
                        changed = true;
                    }
                    if let Some(t) = hook.timeout {
                        if h.get("timeout") != Some(&json!(t)) {
                            h["timeout"] = json!(t);
                            changed = true;
                        }
                    }
                }
            }
        }
        if found {
            continue;
        }
        let mut handler = json!({"type": "command", "command": hook.command});
        if let Some(t) = hook.timeout {
            handler["timeout"] = json!(t);
        }
        let entry = match shape {
            Shape::Flat => handler,
            Shape::Groups => {
                let mut g = Map::new();
                if let Some(m) = &hook.matcher {
                    g.insert("matcher".into(), json!(m));
                }
                g.insert("hooks".into(), json!([handler]));
                Value::Object(g)
            }
        };
        list.push(entry);
        changed = true;
    }
    Ok(changed)
}

/// Two commands of ours name the same registration: the same hook name after `AGENT`,
/// if any (Antigravity passes it).
fn same_hook(a: &str, b: &str) -> bool {
    let tail = |c: &str| {
        c.split_whitespace()
            .skip_while(|t| *t != "hook")
            .skip(2)
            .collect::<Vec<_>>()
            .join(" ")
    };
    tail(a) == tail(b)
}

/// Removes every hook of ours for `agent` from `doc`, and the groups, events and
/// `hooks` member it leaves empty. Returns whether anything changed.
pub fn remove_hooks(doc: &mut Value, shape: Shape, agent: &str) -> bool {
    let Some(table) = doc.get_mut("hooks").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut changed = false;
    for list in table.values_mut() {
        let Some(list) = list.as_array_mut() else {
            continue;
        };
        let before = list.len();
        match shape {
            Shape::Flat => list.retain(|h| !command_of(h).is_some_and(|c| is_ours(c, agent))),
            Shape::Groups => {
                for group in list.iter_mut() {
                    if let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                        let n = handlers.len();
                        handlers.retain(|h| !command_of(h).is_some_and(|c| is_ours(c, agent)));
                        changed |= handlers.len() != n;
                    }
                }
                list.retain(|g| {
                    g.get("hooks")
                        .and_then(Value::as_array)
                        .is_none_or(|h| !h.is_empty())
                });
            }
        }
        changed |= list.len() != before;
    }
    table.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
    if table.is_empty() {
        if let Some(root) = doc.as_object_mut() {
            root.remove("hooks");
        }
    }
    changed
}

/// `doc` as a settings file writes it: two-space JSON and a final newline.
pub fn to_text(doc: &Value) -> String {
    let mut text = serde_json::to_string_pretty(doc).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

/// The fence lines around a block of ours.
fn fence(marker: &str, comment: &str) -> (String, String) {
    (
        format!("{comment} >>> {marker} (written by aep setup; `--remove` takes it out)"),
        format!("{comment} <<< {marker}"),
    )
}

/// `text` with the fenced block of `marker` set to `block` (replaced in place, or
/// appended at the end: a TOML array-of-tables block must come last, so no key of the
/// user's ever lands inside it).
pub fn set_fenced(text: &str, marker: &str, comment: &str, block: &str) -> String {
    let (open, close) = fence(marker, comment);
    let body = format!("{open}\n{}\n{close}\n", block.trim_end());
    match find_fence(text, &open, &close) {
        Some((start, end)) => format!("{}{body}{}", &text[..start], &text[end..]),
        None => {
            let mut out = text.to_owned();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&body);
            out
        }
    }
}

/// `text` without the fenced block of `marker`.
pub fn remove_fenced(text: &str, marker: &str, comment: &str) -> String {
    let (open, close) = fence(marker, comment);
    match find_fence(text, &open, &close) {
        Some((start, end)) => {
            let head = text[..start].trim_end_matches('\n');
            let tail = &text[end..];
            let mut out = head.to_owned();
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(tail.trim_start_matches('\n'));
            out
        }
        None => text.to_owned(),
    }
}

/// The byte range of a fenced block, its closing line's newline included.
fn find_fence(text: &str, open: &str, close: &str) -> Option<(usize, usize)> {
    let start = text.find(open)?;
    let rel = text[start..].find(close)?;
    let mut end = start + rel + close.len();
    if text[end..].starts_with('\n') {
        end += 1;
    }
    Some((start, end))
}

/// A line diff of `old` to `new` (`-`, `+`, and two lines of context), for `--dry-run`.
pub fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Longest common subsequence on lines: settings files are small.
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        return new.lines().map(|l| format!("+{l}\n")).collect();
    }
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    let near = |k: usize| {
        let lo = k.saturating_sub(2);
        let hi = (k + 2).min(ops.len().saturating_sub(1));
        (lo..=hi).any(|x| ops.get(x).is_some_and(|(c, _)| *c != ' '))
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, line)) in ops.iter().enumerate() {
        if *c == ' ' && !near(k) {
            skipped = true;
            continue;
        }
        if skipped {
            out.push_str("...\n");
            skipped = false;
        }
        out.push(*c);
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a panic is the failure report

    use super::*;

    fn hook(event: &str, cmd: &str) -> Hook {
        Hook {
            event: event.into(),
            matcher: Some("*".into()),
            timeout: None,
            command: cmd.into(),
        }
    }

    #[test]
    fn merging_keeps_the_user_s_hooks_and_is_idempotent() {
        let mut doc = json!({"model": "opus", "hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
        ]}});
        let ours = [
            hook("PreToolUse", "/usr/bin/aep hook claude-code"),
            hook("Stop", "/usr/bin/aep hook claude-code"),
        ];
        assert!(merge_hooks(&mut doc, Shape::Groups, "claude-code", &ours).unwrap());
        let once = doc.clone();
        assert!(!merge_hooks(&mut doc, Shape::Groups, "claude-code", &ours).unwrap());
        assert_eq!(doc, once);
        assert_eq!(
            doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "./lint.sh"
        );
        assert_eq!(doc["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        // a moved aep is refreshed in place, not added twice
        let moved = [hook("PreToolUse", "/opt/aep hook claude-code")];
        assert!(merge_hooks(&mut doc, Shape::Groups, "claude-code", &moved).unwrap());
        assert_eq!(doc["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert!(remove_hooks(&mut doc, Shape::Groups, "claude-code"));
        assert_eq!(
            doc,
            json!({"model": "opus", "hooks": {"PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
            ]}})
        );
    }

    #[test]
    fn only_aep_s_own_commands_are_recognized() {
        assert!(is_ours("/usr/local/bin/aep hook codex", "codex"));
        assert!(is_ours(
            "'/my tools/aep' hook antigravity PreToolUse",
            "antigravity"
        ));
        assert!(!is_ours("/usr/local/bin/aep hook codex-otel", "codex"));
        assert!(!is_ours("./notify.sh hook codex", "codex"));
        assert!(!is_ours("aep", "codex"));
    }

    #[test]
    fn fenced_blocks_append_replace_and_go() {
        let text = "model = \"k2\"\n";
        let once = set_fenced(text, "aep kimi-code", "#", "[[hooks]]\nevent = \"Stop\"");
        assert!(once.starts_with(text) && once.contains("[[hooks]]"));
        assert_eq!(
            set_fenced(&once, "aep kimi-code", "#", "[[hooks]]\nevent = \"Stop\""),
            once
        );
        let refreshed = set_fenced(&once, "aep kimi-code", "#", "[[hooks]]\nevent = \"Start\"");
        assert!(refreshed.contains("Start") && !refreshed.contains("\"Stop\""));
        assert_eq!(remove_fenced(&refreshed, "aep kimi-code", "#"), text);
    }

    #[test]
    fn the_diff_shows_what_changes() {
        let d = diff("a\nb\nc\n", "a\nb\nx\nc\n");
        assert!(d.contains("+x"), "{d}");
        assert!(!d.contains("-b"), "{d}");
    }
}
