//! Class `golden-stream`: the golden corpus as one stream keeps the cross-event rules
//! (AEP-0001 §7, AEP-0002 §2 and §7, AEP-0004 §3, AEP-0006), and carries the shapes
//! those rules are about.

use std::collections::BTreeSet;
use std::path::Path;

use aep_core::gating::gate_form_values;
use aep_core::types::EventType;
use aep_core::validate::{Issue, Rule, StreamValidator};
use aep_core::Event;
use serde_json::Value;

use crate::check::Check;
use crate::fixtures;

/// Runs the class.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let golden = match fixtures::golden(fixtures) {
        Ok(g) => g,
        Err(check) => return vec![check],
    };
    let mut events = Vec::new();
    for (i, value) in golden.iter().enumerate() {
        match Event::from_value(value) {
            Ok(e) => events.push(e),
            Err(e) => return vec![Check::fail(format!("golden[{i}] parses"), e.to_string())],
        }
    }
    let mut validator = StreamValidator::new().require_acks(true);
    let mut issues: Vec<Issue> = events.iter().flat_map(|e| validator.push(e)).collect();
    issues.extend(validator.finish());
    let only = |rules: &[Rule]| -> Vec<Issue> {
        issues.iter().filter(|i| rules.contains(&i.rule())).cloned().collect()
    };
    let verdict = |name: &str, rules: &[Rule]| {
        let hits = only(rules);
        Check::new(name, hits.is_empty(), crate::golden::summary(&hits))
    };

    let mut checks = form_checks(&golden, &events);
    checks.push(verdict(
        "golden seq strictly monotonic per (source, session, epoch)",
        &[Rule::SeqRegression, Rule::EpochRegression],
    ));
    let epochs: BTreeSet<u64> = events
        .iter()
        .filter(|e| e.session() == Some("s_epoch"))
        .map(Event::epoch)
        .collect();
    checks.push(Check::new(
        "golden carries an epoch bump with seq reset (restart discipline, AEP-0001 §7.2)",
        epochs == BTreeSet::from([0, 1]),
        format!("epochs of s_epoch: {epochs:?}"),
    ));
    checks.push(verdict(
        "golden honors lifecycle invariants (one terminal per run; attention closed before session.ended)",
        &[
            Rule::RunTerminalExclusivity,
            Rule::SessionTerminalExclusivity,
            Rule::EndedWithPendingAttention,
        ],
    ));
    checks.push(verdict("golden has no (source,id) collision", &[Rule::IdCollision]));
    let dups: Vec<&Event> = events
        .iter()
        .filter(|e| e.id() == "01JX9YBXDUPID000000000GOLD")
        .collect();
    checks.push(Check::new(
        "golden carries the cross-source same-id pair (dedupe scope is (source,id), never bare id)",
        matches!(dups.as_slice(), [a, b] if a.source() != b.source()),
        format!("{} events carry the pair's id", dups.len()),
    ));
    let shared: Vec<&Event> = events
        .iter()
        .filter(|e| e.session() == Some("s_shared"))
        .collect();
    checks.push(Check::new(
        "golden carries the cross-source same-session pair (session identity is emitter-scoped, AEP-0001 §5.2)",
        matches!(shared.as_slice(), [a, b]
            if a.source() != b.source() && a.seq() == Some(0) && b.seq() == Some(0)),
        format!("{} events in s_shared", shared.len()),
    ));
    checks.push(verdict(
        "golden has one ack decision per command (AEP-0004 §3)",
        &[Rule::AckExclusivity],
    ));
    let commands = events
        .iter()
        .filter(|e| EventType::parse(e.event_type()).is_ok_and(|t| t.is_command()))
        .count();
    let unacked = only(&[Rule::CommandUnacked]);
    checks.push(Check::new(
        "golden acks every command it carries",
        commands > 0 && unacked.is_empty(),
        if commands == 0 {
            "golden carries no command".to_owned()
        } else {
            crate::golden::summary(&unacked)
        },
    ));
    checks
}

/// The AEP-0006 round trip: the golden corpus carries a `kind: "form"` request, and each
/// answer to it keeps the `values` rules.
fn form_checks(golden: &[Value], events: &[Event]) -> Vec<Check> {
    let is_form = |v: &Value| {
        v.get("type").and_then(Value::as_str) == Some("attention.requested")
            && v.pointer("/data/kind").and_then(Value::as_str) == Some("form")
    };
    let forms: Vec<usize> = (0..golden.len()).filter(|&i| golden.get(i).is_some_and(is_form)).collect();
    let mut checks = vec![Check::new(
        "golden carries a kind=form round-trip",
        !forms.is_empty(),
        "no attention.requested with kind=form".to_owned(),
    )];
    for &f in &forms {
        let Some(request) = events.get(f) else { continue };
        let answers = events.iter().filter(|e| {
            e.event_type() == "attention.answered" && e.subject() == Some(request.id())
        });
        let fields = golden
            .get(f)
            .and_then(|v| v.pointer("/data/fields"))
            .unwrap_or(&Value::Null);
        for answer in answers {
            let mut v = StreamValidator::new();
            let mut issues = v.push(request);
            issues.extend(v.push(answer));
            checks.push(Check::new(
                "golden form answer satisfies the values rules",
                issues.is_empty(),
                crate::golden::summary(&issues),
            ));
            checks.push(capture_honest(fields, answer));
        }
    }
    checks
}

/// AEP-0006 gating on the golden answer: every `values` entry naming a declared field
/// survives gating at the answer's own `capture`, so the emitter carried no free text
/// below `redacted`.
fn capture_honest(fields: &Value, answer: &Event) -> Check {
    let values = answer
        .data()
        .and_then(|d| d.pointer("/answer/values").cloned())
        .unwrap_or(Value::Null);
    let kept = gate_form_values(fields, &values, answer.capture());
    let declared: Vec<&String> = values
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .filter(|k| {
            fields
                .as_array()
                .is_some_and(|fs| fs.iter().any(|f| f.get("id").and_then(Value::as_str) == Some(k)))
        })
        .collect();
    let gated_out: Vec<&&String> = declared.iter().filter(|k| !kept.contains_key(**k)).collect();
    Check::new(
        "golden form answer capture-honest (free text only at redacted+)",
        gated_out.is_empty() && kept.len() == declared.len(),
        format!("gated out: {gated_out:?}"),
    )
}
