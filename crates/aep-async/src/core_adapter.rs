//! Narrow stand-ins for aep-core pieces that are not on `main` yet. Each block is the
//! one place its rule is used from; each is replaced by the aep-core call once merged.

// TODO(core): use the aep-core reader of SSE marker comments once one exists (the
// `resume` module has positions and the SSE `id:` form, not the comment syntax).
#[cfg(feature = "sse")]
pub(crate) mod sse_marker {
    use aep_core::resume::Position;

    /// Reads `replay-exhausted {session} {epoch}:{seq}` (AEP-0003 §3.3.3), the comment
    /// text after the colon.
    pub(crate) fn parse_exhausted(comment: &str) -> Option<(String, Position)> {
        let rest = comment.strip_prefix("replay-exhausted ")?;
        let (session, pos) = rest.trim_end().rsplit_once(' ')?;
        let (e, s) = pos.split_once(':')?;
        Some((
            session.to_owned(),
            Position::new(e.parse().ok()?, s.parse().ok()?),
        ))
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn exhausted_comment() {
            let (s, p) = super::parse_exhausted("replay-exhausted s:1 2:30").unwrap();
            assert_eq!((s.as_str(), p.epoch(), p.seq()), ("s:1", 2, 30));
            assert_eq!(super::parse_exhausted("replay-complete"), None);
        }
    }
}
