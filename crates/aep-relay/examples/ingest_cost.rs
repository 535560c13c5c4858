//! Where ingest time goes, per event: parse, validate, payload.
use std::time::Instant;
fn main() {
    let text = std::fs::read_to_string("/tmp/batch0.ndjson").unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    for round in 0..3 {
        let t = Instant::now();
        let events: Vec<aep_core::Event> = lines
            .iter()
            .filter_map(|l| aep_core::Event::from_slice(l.as_bytes()).ok())
            .collect();
        let parse = t.elapsed();
        let t = Instant::now();
        let n: usize = events
            .iter()
            .map(|e| aep_core::validate::validate_event(e).len())
            .sum();
        let validate = t.elapsed();
        let t = Instant::now();
        let m: usize = events.iter().filter_map(|e| e.data()).count();
        let data = t.elapsed();
        let t = Instant::now();
        let f = aep_core::filter::Filter::from_json(r#"{"session":"perf0"}"#).unwrap_or_default();
        let k = events.iter().filter(|e| f.matches(e)).count();
        let filter = t.elapsed();
        println!("round {round}: {} events parse {:?}/ev validate {:?}/ev (issues {n}) data() {:?}/ev ({m}) filter {:?}/ev ({k})",
            events.len(), parse / lines.len() as u32, validate / lines.len() as u32, data / lines.len() as u32, filter / lines.len() as u32);
    }
}
