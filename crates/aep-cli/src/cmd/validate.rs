//! `aep validate`: every envelope, payload, capture and stream rule of aep-core over a
//! JSONL file, each finding with its rule id and line number.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::SystemTime;

use aep::protocol::envelope::rfc3339_millis;
use aep::protocol::types::{lookup, EventType, TypeStatus};
use aep::protocol::validate::{validate_value, Issue, StreamValidator};
use aep::protocol::Event;
use serde_json::{json, Value};

use crate::exit::{Exit, Outcome};
use crate::input::{at, Input};
use crate::term;

/// Check a JSONL file of events against AEP 0.1.
///
/// Each line is judged by the envelope rules (AEP-0001 §5-§8), its payload schema and
/// capture annotations (AEP-0002 §5), and, with the lines before it, by the stream rules
/// (AEP-0001 §7 ids and positions, AEP-0002 terminals and attention, AEP-0004 acks,
/// AEP-0006 forms). Findings go to stderr as `FILE:LINE: RULE ...`; exit 1 if any.
///
/// Warnings do not count: a type outside the 0.1 registry (tolerated, AEP-0001 §10), a
/// reserved type, a line repeating an earlier one byte for byte (a redelivery).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The JSONL file; `-` reads stdin.
    #[arg(default_value = "-", value_name = "FILE")]
    file: PathBuf,
    /// Print an aep-conformance-report document on stdout, one check per line.
    #[arg(long)]
    json: bool,
    /// Also require an ack for every command by the end of the file (AEP-0004 §3).
    #[arg(long)]
    require_acks: bool,
}

/// One thing wrong, from aep-core's rules or from reading the line.
#[derive(Debug)]
struct Finding {
    rule: String,
    attr: Option<String>,
    message: String,
    section: &'static str,
}

impl From<Issue> for Finding {
    fn from(issue: Issue) -> Finding {
        Finding {
            rule: issue.rule().as_str().to_owned(),
            attr: issue.attr().map(str::to_owned),
            message: issue.message().to_owned(),
            section: issue.section(),
        }
    }
}

impl Finding {
    fn to_json(&self) -> Value {
        json!({"rule": self.rule, "attr": self.attr, "message": self.message, "section": self.section})
    }
}

/// What one line (or the end of the stream, `line` None) came to.
#[derive(Debug, Default)]
struct Verdict {
    line: Option<usize>,
    event_type: Option<String>,
    findings: Vec<Finding>,
    warnings: Vec<String>,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Outcome {
    let started = rfc3339_millis(SystemTime::now());
    let input = Input::open(&args.file)?;
    let name = input.name().to_owned();
    let mut stream = StreamValidator::new().require_acks(args.require_acks);
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    let mut verdicts = Vec::new();
    let (mut findings, mut warnings, mut lines) = (0usize, 0usize, 0usize);
    let mut report = |v: Verdict, verdicts: &mut Vec<Verdict>| {
        findings += v.findings.len();
        warnings += v.warnings.len();
        print_verdict(&name, &v);
        if args.json {
            verdicts.push(v);
        }
    };
    for line in input.lines() {
        let line = line?;
        lines += 1;
        let verdict = judge(&line.bytes, line.number, &mut stream, &mut seen);
        report(verdict, &mut verdicts);
    }
    let end = Verdict {
        findings: stream.finish().into_iter().map(Finding::from).collect(),
        ..Verdict::default()
    };
    report(end, &mut verdicts);
    if args.json {
        let doc = report_doc(&name, &verdicts, &started);
        crate::term::print_json_pretty(&doc);
    }
    summary(&name, lines, findings, warnings, args.json);
    Ok(if findings == 0 {
        Exit::Success
    } else {
        Exit::Findings
    })
}

fn judge(
    bytes: &[u8],
    number: usize,
    stream: &mut StreamValidator,
    seen: &mut HashMap<(String, String), usize>,
) -> Verdict {
    let mut v = Verdict {
        line: Some(number),
        ..Verdict::default()
    };
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => {
            v.findings.push(Finding {
                rule: "not-json".into(),
                attr: None,
                message: format!("the line is not JSON: {e}"),
                section: "AEP-0003 §3.1",
            });
            return v;
        }
    };
    v.event_type = value.get("type").and_then(Value::as_str).map(str::to_owned);
    v.findings
        .extend(validate_value(&value).into_iter().map(Finding::from));
    if let Some(t) = v.event_type.as_deref() {
        if let Some(w) = registry_warning(t) {
            v.warnings.push(w);
        }
    }
    if let Ok(event) = Event::from_value(&value) {
        let stream_issues = stream.push(&event);
        let key = (event.source().to_owned(), event.id().to_owned());
        match seen.get(&key) {
            Some(first) if stream_issues.is_empty() => v.warnings.push(format!(
                "repeats line {first} (same source and id, same content: a redelivery a consumer dedupes)"
            )),
            Some(_) => {}
            None => {
                seen.insert(key, number);
            }
        }
        v.findings
            .extend(stream_issues.into_iter().map(Finding::from));
    }
    v
}

/// The registry facts a validator warns about and AEP-0001 §10 tolerates.
fn registry_warning(t: &str) -> Option<String> {
    let parsed = EventType::parse(t).ok()?;
    if parsed.is_vendor() {
        return None;
    }
    match lookup(t) {
        None => Some(format!(
            "type `{t}` is not in the AEP 0.1 registry (consumers tolerate it, AEP-0001 §10; a vendor type is x.VENDOR.…)"
        )),
        Some(r) if r.status == TypeStatus::Reserved => Some(format!(
            "type `{t}` is reserved: its payload is not defined in 0.1 (AEP-0002 §4)"
        )),
        Some(_) => None,
    }
}

fn print_verdict(name: &str, v: &Verdict) {
    let mut err = anstream::stderr().lock();
    let place = match v.line {
        Some(n) => at(name, n),
        None => format!("{name}: end of stream"),
    };
    for f in &v.findings {
        let (s, d) = (term::ERROR, term::DIM);
        let attr = f
            .attr
            .as_deref()
            .map(|a| format!("{a}: "))
            .unwrap_or_default();
        let _ = writeln!(
            err,
            "{place}: {s}{}{s:#}: {attr}{} {d}({}){d:#}",
            f.rule, f.message, f.section
        );
    }
    for w in &v.warnings {
        let s = term::WARN;
        let _ = writeln!(err, "{place}: {s}warning{s:#}: {w}");
    }
}

fn summary(name: &str, lines: usize, findings: usize, warnings: usize, quiet_ok: bool) {
    let mut err = anstream::stderr().lock();
    let (style, word) = if findings == 0 {
        (term::OK, "ok")
    } else {
        (term::ERROR, "FAILED")
    };
    if findings == 0 && warnings == 0 && quiet_ok {
        return;
    }
    let _ = writeln!(
        err,
        "{name}: {style}{word}{style:#}: {lines} lines, {findings} finding(s), {warnings} warning(s)"
    );
}

/// The aep-conformance-report document (`spec/conformance/README.md`): one check per
/// line and one for the end of the stream.
fn report_doc(name: &str, verdicts: &[Verdict], started: &str) -> Value {
    let checks: Vec<Value> = verdicts
        .iter()
        .map(|v| {
            let label = match (v.line, &v.event_type) {
                (Some(n), Some(t)) => format!("line {n} {t}"),
                (Some(n), None) => format!("line {n}"),
                (None, _) => "stream rules at the end of the file".into(),
            };
            let mut check = json!({
                "name": label,
                "status": if v.findings.is_empty() { "pass" } else { "fail" },
                "line": v.line,
            });
            if !v.findings.is_empty() {
                let detail: Vec<String> = v
                    .findings
                    .iter()
                    .map(|f| format!("{}: {}", f.rule, f.message))
                    .collect();
                check["detail"] = Value::from(detail.join("; "));
                check["findings"] = v.findings.iter().map(Finding::to_json).collect();
            }
            if !v.warnings.is_empty() {
                check["warnings"] = json!(v.warnings);
            }
            check
        })
        .collect();
    let fail = verdicts.iter().filter(|v| !v.findings.is_empty()).count();
    json!({
        "format": "aep-conformance-report",
        "formatVersion": 1,
        "aep": aep::SPEC_VERSION,
        "tool": "aep-validate",
        "target": name,
        "startedAt": started,
        "finishedAt": rfc3339_millis(SystemTime::now()),
        "checks": checks,
        "summary": {"pass": checks.len() - fail, "fail": fail, "skip": 0, "total": checks.len()},
        "ok": fail == 0,
    })
}
