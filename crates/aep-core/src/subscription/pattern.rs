//! Dotted type patterns of the subscription model.

use std::fmt;

/// Why a type pattern was refused.
///
/// ```
/// use aep_core::subscription::{PatternError, TypePattern};
/// assert_eq!(TypePattern::parse("tool.").unwrap_err(), PatternError::EmptySegment("tool.".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// `""`.
    #[error("type pattern is empty")]
    Empty,
    /// `a..b`, `.a` or `a.`: every segment between dots must be non-empty.
    #[error("type pattern `{0}` has an empty segment (a leading, trailing or doubled `.`)")]
    EmptySegment(String),
    /// `**`, `tool*`, `*x`: `*` must be a whole segment.
    #[error("type pattern `{0}` uses `*` inside a segment: `*` must stand alone between dots")]
    PartialWildcard(String),
}

/// One type pattern of a subscription filter's `types`.
///
/// The rules, in order:
/// - A pattern is split into segments on `.`; literal segments compare case-sensitively.
/// - `*` alone matches every type.
/// - A trailing `.*` matches **one or more** trailing segments: `tool.call.*` matches
///   `tool.call.started` and `tool.call.a.b`, not `tool.call` (as AEP-0003 §6.2 rule 3
///   says of `attention.*` and `attention`), so the two dialects agree wherever both can
///   express a pattern.
/// - Any other `*` segment matches exactly one segment: `tool.*.progress` matches
///   `tool.call.progress`, not `tool.progress` nor `tool.a.b.progress`. A leading `*`
///   followed by more segments is such a segment (`*.completed`).
/// - Empty segments and `*` inside a segment (`**`, `tool*`) are refused.
///
/// ```
/// use aep_core::subscription::TypePattern;
/// let p = TypePattern::parse("tool.*.progress")?;
/// assert!(p.matches("tool.call.progress"));
/// assert!(!p.matches("tool.progress"));
/// let trailing = TypePattern::parse("memory.*")?;
/// assert!(trailing.matches("memory.fact.added"));
/// assert!(!trailing.matches("memory"));
/// assert!(TypePattern::parse("*")?.matches("anything.at.all"));
/// assert!(TypePattern::parse("tool.**").is_err());
/// # Ok::<(), aep_core::subscription::PatternError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct TypePattern {
    raw: Box<str>,
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// `*`.
    All,
    /// No `*` at all.
    Exact,
    /// Literal segments then a trailing `.*`: the literal prefix including its dot.
    Prefix(Box<str>),
    /// A `*` segment before the end.
    Segments {
        segs: Box<[Seg]>,
        /// Whether the pattern ends in `.*` (one or more further segments).
        open: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Lit(Box<str>),
    Any,
}

impl TypePattern {
    /// Parses and compiles a pattern.
    pub fn parse(raw: &str) -> Result<TypePattern, PatternError> {
        if raw.is_empty() {
            return Err(PatternError::Empty);
        }
        let kind = if raw == "*" {
            Kind::All
        } else {
            let parts: Vec<&str> = raw.split('.').collect();
            if parts.iter().any(|p| p.is_empty()) {
                return Err(PatternError::EmptySegment(raw.to_owned()));
            }
            if parts.iter().any(|p| p.contains('*') && *p != "*") {
                return Err(PatternError::PartialWildcard(raw.to_owned()));
            }
            let (body, open) = match parts.split_last() {
                Some((&"*", body)) => (body, true),
                _ => (&parts[..], false),
            };
            if !body.contains(&"*") {
                if open {
                    Kind::Prefix(raw[..raw.len() - 1].into())
                } else {
                    Kind::Exact
                }
            } else {
                Kind::Segments {
                    segs: body
                        .iter()
                        .map(|p| {
                            if *p == "*" {
                                Seg::Any
                            } else {
                                Seg::Lit((*p).into())
                            }
                        })
                        .collect(),
                    open,
                }
            }
        };
        Ok(TypePattern {
            raw: raw.into(),
            kind,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether this is `*`, which matches every type.
    pub fn is_all(&self) -> bool {
        self.kind == Kind::All
    }

    /// The literal first segment, when the pattern has one (what a router indexes on).
    ///
    /// ```
    /// use aep_core::subscription::TypePattern;
    /// assert_eq!(TypePattern::parse("tool.*.progress")?.first_segment(), Some("tool"));
    /// assert_eq!(TypePattern::parse("*.completed")?.first_segment(), None);
    /// # Ok::<(), aep_core::subscription::PatternError>(())
    /// ```
    pub fn first_segment(&self) -> Option<&str> {
        match self.kind {
            Kind::All => None,
            _ => self.raw.split('.').next().filter(|s| *s != "*"),
        }
    }

    /// The AEP-0003 attr-match `type` predicate with exactly this pattern's meaning,
    /// when attr-match can express it: an exact type, or literal `[a-z0-9_-]` segments
    /// followed by `.*`.
    pub(crate) fn as_attr_match(&self) -> Option<&str> {
        match &self.kind {
            Kind::Exact => Some(&self.raw),
            Kind::Prefix(p) if attr_match_prefix(p) => Some(&self.raw),
            _ => None,
        }
    }

    /// An attr-match `prefix.*` pattern matching a superset of this pattern (the literal
    /// segments before its first inner `*`), when there is one.
    pub(crate) fn attr_match_superset(&self) -> Option<String> {
        let Kind::Segments { segs, .. } = &self.kind else {
            return None;
        };
        let lits: Vec<&str> = segs
            .iter()
            .map_while(|s| match s {
                Seg::Lit(l) => Some(&**l),
                Seg::Any => None,
            })
            .collect();
        if lits.is_empty() {
            return None;
        }
        let prefix = format!("{}.", lits.join("."));
        attr_match_prefix(&prefix).then(|| format!("{prefix}*"))
    }

    /// Whether `event_type` matches. Does not allocate.
    #[inline]
    pub fn matches(&self, event_type: &str) -> bool {
        match &self.kind {
            Kind::All => true,
            Kind::Exact => *self.raw == *event_type,
            Kind::Prefix(p) => event_type.starts_with(&**p),
            Kind::Segments { segs, open } => {
                let mut parts = event_type.split('.');
                for seg in segs.iter() {
                    match (seg, parts.next()) {
                        (_, None) => return false,
                        (Seg::Lit(l), Some(p)) if **l != *p => return false,
                        _ => {}
                    }
                }
                // Open: at least one more segment; closed: none.
                parts.next().is_some() == *open
            }
        }
    }
}

/// Whether `prefix.` is an attr-match pattern prefix (the filter module owns the rule).
fn attr_match_prefix(prefix_with_dot: &str) -> bool {
    prefix_with_dot
        .strip_suffix('.')
        .is_some_and(crate::filter::is_pattern_body)
}

impl fmt::Debug for TypePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TypePattern").field(&self.raw).finish()
    }
}

impl fmt::Display for TypePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl std::str::FromStr for TypePattern {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TypePattern::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        TypePattern::parse(p).unwrap().matches(t)
    }

    /// Every row of the lifecycle model's pattern table.
    #[test]
    fn the_models_pattern_table() {
        // (pattern, types it matches, types it does not)
        let table: [(&str, &[&str], &[&str]); 5] = [
            // "*": all event types.
            (
                "*",
                &["memory.fact.added", "tool.call", "x.acme.tool.synced", "a"],
                &[],
            ),
            // "memory.*": all memory.* events.
            (
                "memory.*",
                &["memory.fact.added", "memory.episode.stored"],
                &["memory", "memoryx.fact", "context.memory.added"],
            ),
            // "tool.call.*": all tool.call.* events.
            (
                "tool.call.*",
                &["tool.call.started", "tool.call.a.b"],
                &["tool.call", "tool.caller.x"],
            ),
            // "tool.*.progress": exactly one segment in the middle.
            (
                "tool.*.progress",
                &["tool.call.progress", "tool.any.progress"],
                &[
                    "tool.progress",
                    "tool.a.b.progress",
                    "tool.call.progress.more",
                ],
            ),
            // "task.progress": exact match only.
            (
                "task.progress",
                &["task.progress"],
                &["task.progress.x", "task"],
            ),
        ];
        for (pattern, hits, misses) in table {
            for t in hits {
                assert!(m(pattern, t), "{pattern} should match {t}");
            }
            for t in misses {
                assert!(!m(pattern, t), "{pattern} should not match {t}");
            }
        }
    }

    #[test]
    fn case_sensitive_and_leading_star() {
        assert!(!m("Tool.*", "tool.call"));
        assert!(!m("task.progress", "Task.Progress"));
        assert!(m("*.completed", "tool.completed"));
        assert!(!m("*.completed", "x.acme.completed"));
        assert!(m("*.*", "a.b") && m("*.*", "a.b.c") && !m("*.*", "a"));
        assert!(m("tool.*.*", "tool.a.b") && !m("tool.*.*", "tool.a"));
    }

    #[test]
    fn malformed_patterns() {
        assert_eq!(TypePattern::parse(""), Err(PatternError::Empty));
        for p in ["tool.", ".tool", "tool..call", ".", "..", "tool.*."] {
            assert_eq!(
                TypePattern::parse(p),
                Err(PatternError::EmptySegment(p.into())),
                "{p}"
            );
        }
        for p in ["**", "tool.**", "tool*", "*tool", "to*ol.x", "tool.c*"] {
            assert_eq!(
                TypePattern::parse(p),
                Err(PatternError::PartialWildcard(p.into())),
                "{p}"
            );
        }
    }

    #[test]
    fn lowering_helpers() {
        let p = |s| TypePattern::parse(s).unwrap();
        assert_eq!(p("tool.call.*").as_attr_match(), Some("tool.call.*"));
        assert_eq!(p("task.progress").as_attr_match(), Some("task.progress"));
        assert_eq!(p("Tool.*").as_attr_match(), None);
        assert_eq!(p("tool.*.progress").as_attr_match(), None);
        assert_eq!(
            p("tool.*.progress").attr_match_superset().as_deref(),
            Some("tool.*")
        );
        assert_eq!(p("*.x").attr_match_superset(), None);
        assert_eq!(p("*").first_segment(), None);
    }
}
