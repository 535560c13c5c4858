//! Resume positions, the SSE `id:` form and the `from` budget split.

use aep_core::resume::{encode_from, FromBudget, Position, Positions, ResumePosition, SseIdError};
use aep_core::Event;

fn positions(n: usize) -> Vec<ResumePosition> {
    (0..n)
        .map(|i| ResumePosition::new(format!("s{i:03}"), 0, 1))
        .collect()
}

/// The size the reference SDKs count for a list: 2, then each entry plus its comma.
fn counted(list: &[ResumePosition]) -> usize {
    2 + list.iter().map(|p| p.encoded_len() + 3).sum::<usize>()
}

#[test]
fn encoded_len_is_the_percent_encoded_json() {
    let p = ResumePosition::new("s0", 0, 1);
    // {"session":"s0","epoch":0,"seq":1}: 34 characters, 15 of them `{ " : , }`
    assert_eq!(p.encoded_len(), 34 + 15 * 2);
    assert_eq!(encode_from(std::slice::from_ref(&p)).len(), 3 + 64 + 3);
    // Non-ASCII and reserved bytes cost three characters per byte, as the wire has them.
    let odd = ResumePosition::new("é/ ~", 0, 0);
    let wire = encode_from(std::slice::from_ref(&odd));
    assert!(wire.contains("%C3%A9%2F%20~"), "{wire}");
    assert_eq!(odd.encoded_len(), wire.len() - 6);
    // A quote in a session is escaped in JSON first, then percent-encoded.
    assert!(encode_from(&[ResumePosition::new("a\"b", 0, 0)]).contains("a%5C%22b"));
}

#[test]
fn split_takes_positions_exactly_at_the_budget() {
    let all = positions(5);
    let budget = counted(&all[2..]);
    let (head, rest) = FromBudget::new(budget, 20).split(&all, None);
    assert_eq!(head, &all[2..]);
    assert_eq!(rest, &all[..2]);
}

#[test]
fn split_leaves_a_position_one_character_over() {
    let all = positions(5);
    let budget = counted(&all[2..]) - 1;
    let (head, rest) = FromBudget::new(budget, 20).split(&all, None);
    assert_eq!(head, &all[3..]);
    assert_eq!(rest, &all[..3]);
}

#[test]
fn split_of_nothing_is_nothing() {
    let (head, rest) = FromBudget::default().split(&[], None);
    assert!(head.is_empty() && rest.is_empty());
    let plan = FromBudget::default().plan(&[], None);
    assert!(plan.live().is_empty() && plan.chunks().is_empty() && plan.unsent().is_empty());
}

#[test]
fn one_huge_position_still_rides_alone() {
    let huge = ResumePosition::new("x".repeat(10_000), 3, 4);
    let all = vec![ResumePosition::new("a", 0, 0), huge.clone()];
    let budget = FromBudget::default();
    assert!(huge.encoded_len() > budget.budget());
    let (head, rest) = budget.split(&all, None);
    assert_eq!(head, std::slice::from_ref(&huge));
    assert_eq!(rest, &all[..1]);
    // ...and a huge position behind the newest drains in a chunk of its own.
    let all = vec![huge.clone(), ResumePosition::new("a", 0, 0)];
    let plan = budget.plan(&all, None);
    assert_eq!(plan.live(), &all[1..]);
    assert_eq!(plan.chunks(), &[&all[..1]]);
}

#[test]
fn everything_fits_under_the_default_budget() {
    let all = positions(50);
    let plan = FromBudget::default().plan(&all, None);
    assert_eq!(plan.live(), &all[..]);
    assert!(plan.chunks().is_empty());
}

#[test]
fn drain_chunks_are_capped_and_newest_first() {
    let all = positions(100);
    let per = counted(&all[..3]); // three of these positions per request
    let plan = FromBudget::new(per, 4).plan(&all, None);
    assert_eq!(plan.live(), &all[97..]);
    assert_eq!(plan.chunks().len(), 4);
    assert_eq!(plan.chunks()[0], &all[94..97]);
    assert_eq!(plan.chunks()[3], &all[85..88]);
    assert_eq!(plan.unsent(), &all[..85]);
    // Every position is in exactly one place, in order.
    let mut back: Vec<&ResumePosition> = plan.unsent().iter().collect();
    for chunk in plan.chunks().iter().rev() {
        back.extend(chunk.iter());
    }
    back.extend(plan.live());
    assert!(back.into_iter().eq(all.iter()));

    let none = FromBudget::new(per, 0).plan(&all, None);
    assert!(none.chunks().is_empty());
    assert_eq!(none.unsent(), &all[..97]);
}

#[test]
fn cap_bounds_the_live_request_after_a_refusal() {
    let all = positions(10);
    let budget = FromBudget::default();
    let (head, rest) = budget.split(&all, Some(4));
    assert_eq!((head, rest), (&all[6..], &all[..6]));
    let (head, rest) = budget.split(&all, Some(0));
    assert_eq!((head, rest), (&[][..], &all[..]));
    // The capped rest still drains, uncapped, in chunks.
    let plan = budget.plan(&all, Some(4));
    assert_eq!(plan.chunks(), &[&all[..6]]);
}

#[test]
fn sse_ids_parse_from_the_right() {
    let p = ResumePosition::parse_sse_id("urn:a:b:7:42").unwrap();
    assert_eq!(
        (p.session(), p.position()),
        ("urn:a:b", Position::new(7, 42))
    );
    assert_eq!(p.sse_id().unwrap(), "urn:a:b:7:42");
    let max = format!("s:{}:{}", u64::MAX, u64::MAX);
    assert_eq!(ResumePosition::parse_sse_id(&max).unwrap().to_string(), max);

    for (bad, want) in [
        ("", "MissingSeparator"),
        ("s", "MissingSeparator"),
        ("s:1", "MissingSeparator"),
        (":1:2", "EmptySession"),
        ("s::2", "BadEpoch"),
        ("s:x:2", "BadEpoch"),
        ("s:-1:2", "BadEpoch"),
        ("s:+1:2", "BadEpoch"),
        ("s:1:", "BadSeq"),
        ("s:1: 2", "BadSeq"),
        ("s:1:18446744073709551616", "BadSeq"),
    ] {
        let err = ResumePosition::parse_sse_id(bad).unwrap_err();
        assert!(format!("{err:?}").starts_with(want), "{bad:?}: {err:?}");
        assert!(err.to_string().contains(bad), "{err}");
    }
    for session in ["", "a\nb", "a\rb", "a\0b"] {
        assert!(matches!(
            ResumePosition::new(session, 0, 0).sse_id(),
            Err(SseIdError::Unwritable(_))
        ));
    }
}

#[test]
fn positions_track_the_high_water_mark_in_recency_order() {
    let ev = |session: &str, epoch, seq| {
        Event::new(
            format!("{session}{epoch}{seq}"),
            "log.emitted",
            "t",
            "aep://h",
            "a",
        )
        .with_session(session)
        .with_epoch(epoch)
        .with_seq(seq)
    };
    let mut p = Positions::new();
    assert!(p.observe(&ev("a", 0, 1)));
    assert!(p.observe(&ev("b", 0, 1)));
    assert!(p.observe(&ev("a", 0, 2))); // a moved last
    assert!(!p.observe(&ev("b", 0, 0)));
    assert!(!p.observe(&Event::new("x", "agent.idle", "t", "aep://h", "a")));
    assert!(!p.observe(&Event::new("y", "control.pause", "t", "aep://h", "a").with_session("c")));
    assert!(p.observe(&ev("b", 1, 0)));
    let sessions: Vec<String> = p.to_vec().iter().map(|r| r.session().to_owned()).collect();
    assert_eq!(sessions, ["a", "b"]);
    assert_eq!(p.get("b"), Some(Position::new(1, 0)));
    assert_eq!(p.len(), 2);
    assert_eq!(p.remove("a"), Some(Position::new(0, 2)));
    assert!(!p.is_empty());
}

#[test]
fn positions_persist_and_merge() {
    let mut p = Positions::new();
    p.insert(ResumePosition::new("s:1", 2, 30));
    p.insert(ResumePosition::new("t", 0, 4));
    let json = p.to_json();
    assert_eq!(
        json,
        r#"[{"session":"s:1","epoch":2,"seq":30},{"session":"t","epoch":0,"seq":4}]"#
    );
    let back = Positions::from_json(&json).unwrap();
    assert_eq!(back, p);
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
    let via_serde: Positions = serde_json::from_str(&json).unwrap();
    assert_eq!(via_serde, p);

    let mut newer = Positions::new();
    newer.insert(ResumePosition::new("t", 0, 9));
    newer.insert(ResumePosition::new("s:1", 1, 99)); // behind: ignored
    newer.insert(ResumePosition::new("u", 0, 0));
    p.merge(&newer);
    assert_eq!(p.get("t"), Some(Position::new(0, 9)));
    assert_eq!(p.get("s:1"), Some(Position::new(2, 30)));
    assert_eq!(p.get("u"), Some(Position::new(0, 0)));

    for bad in [
        "",
        "{}",
        r#"[{"session":"s","epoch":-1,"seq":0}]"#,
        r#"[{"session":"s"}]"#,
    ] {
        assert!(Positions::from_json(bad).is_err(), "{bad}");
    }
}

/// The SSE id written into a buffer is the text `sse_id` and `Display` give, for the
/// widest numbers too, and it reads back as the same position.
#[test]
fn an_sse_id_written_in_place_reads_back() {
    use aep_core::resume::SseId;
    for (session, epoch, seq) in [
        ("s", 0, 0),
        ("urn:s:1", 2, 30),
        ("é ü", 9, 10),
        ("x", u64::MAX, u64::MAX),
        ("a:b:1:2", 1, 1_000_000),
    ] {
        let id = SseId::new(session, Position::new(epoch, seq)).unwrap();
        let mut bytes = Vec::new();
        id.write_to(&mut bytes);
        assert_eq!(bytes.len(), id.len());
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, id.to_string());
        let position = ResumePosition::new(session, epoch, seq);
        assert_eq!(position.sse_id().unwrap(), text);
        assert_eq!(ResumePosition::parse_sse_id(&text).unwrap(), position);
    }
    for unwritable in ["", "a\nb", "a\rb", "a\0b"] {
        assert!(matches!(
            SseId::new(unwritable, Position::new(0, 1)),
            Err(SseIdError::Unwritable(_))
        ));
    }
}

/// A replay start includes exactly the positions after it (or from the start of its
/// epoch), in `(epoch, seq)` order, whatever the numbers: no packing of both into one
/// integer, so a seq past 2^40 still orders below the next epoch.
#[test]
fn replay_starts_order_positions_epoch_first() {
    use aep_core::resume::ReplayStart;
    let big = 1u64 << 40;
    let after = ReplayStart::After(Position::new(0, big));
    assert!(after.includes(Position::new(0, big + 1)));
    assert!(after.includes(Position::new(1, 0)));
    assert!(!after.includes(Position::new(0, big)));
    assert!(!ReplayStart::EpochStart(1).includes(Position::new(0, big * 4)));
    assert!(ReplayStart::EpochStart(1).includes(Position::new(1, 0)));
    // a gap is declared when the earliest held is not the next position (§5)
    assert!(after.declares_gap(Position::new(1, 0)));
    assert!(!after.declares_gap(Position::new(0, big + 1)));
    assert!(
        !ReplayStart::After(Position::new(0, u64::MAX)).declares_gap(Position::new(0, u64::MAX))
    );
}

/// A `from` parameter is read whole or refused whole, naming the bad entry.
#[test]
fn a_from_parameter_is_read_fail_closed() {
    use aep_core::resume::{FromError, ReplayStart, ResumeFrom};
    use serde_json::json;
    let read = ResumeFrom::parse_list(&json!([
        {"session": "a", "epoch": 2, "seq": -1},
        {"session": "b", "epoch": 0, "seq": 7},
    ]))
    .unwrap();
    assert_eq!(read[0].start(), ReplayStart::EpochStart(2));
    assert_eq!(read[1].start(), ReplayStart::After(Position::new(0, 7)));
    for bad in [
        json!([{"epoch": 0, "seq": 1}]),
        json!([{"session": 1, "seq": 1}]),
        json!([{"session": "a", "seq": -2}]),
        json!([{"session": "a", "seq": 1.5}]),
        json!([{"session": "a", "epoch": -1}]),
        json!([{"session": "a"}, "x"]),
    ] {
        assert!(
            matches!(ResumeFrom::parse_list(&bad), Err(FromError::BadEntry(_))),
            "{bad}"
        );
    }
    assert_eq!(
        ResumeFrom::parse_list(&json!("all")),
        Err(FromError::NotAnArray)
    );
}

/// The query parameter: `all`, or a list no longer than the reader takes, refused before
/// its entries are read; anything else is not JSON or not a list.
#[test]
fn a_from_query_parameter_is_all_or_a_bounded_list() {
    use aep_core::resume::{FromError, FromParam, ReplayStart, ResumeFrom};
    assert_eq!(FromParam::parse("all", 0), Ok(FromParam::All));
    assert_eq!(
        FromParam::parse(r#"[{"session":"a","epoch":1,"seq":4}]"#, 1),
        Ok(FromParam::Sessions(vec![ResumeFrom::new(
            "a",
            ReplayStart::After(Position::new(1, 4))
        )]))
    );
    // too many is decided before the (bad) entries are read
    assert_eq!(
        FromParam::parse(r#"[1,2,3]"#, 2),
        Err(FromError::TooMany { max: 2 })
    );
    assert!(matches!(
        FromParam::parse(r#"[1]"#, 2),
        Err(FromError::BadEntry(_))
    ));
    assert_eq!(FromParam::parse("ALL", 2), Err(FromError::NotJson));
    assert_eq!(FromParam::parse("{}", 2), Err(FromError::NotAnArray));
    assert_eq!(FromParam::parse("\"all\"", 2), Err(FromError::NotAnArray));
}
