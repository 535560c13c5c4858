//! The attr-match filter of `tail`, `sink` and `project` (AEP-0003 §6), from flags.

use aep::protocol::{Filter, Severity};
use serde_json::{Map, Value};

use crate::args::{json_object, RelayArgs};
use crate::exit::Failure;

/// The relay to read and what to read of it: `tail`, `sink` and `project` flatten this
/// in, so the three declare `--url`, `--token` and the filter flags once.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    #[command(flatten)]
    pub relay: RelayArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// `--type`, `--session`, `--agent`, `--severity` and `--filter`, combined into one
/// attr-match filter, checked fail-closed before anything is sent.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FilterArgs {
    /// Event types; `*` stands for one segment (`tool.*`). Repeat or comma-separate.
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    types: Vec<String>,
    /// Sessions. Repeat or comma-separate.
    #[arg(long, value_name = "SESSION", value_delimiter = ',')]
    session: Vec<String>,
    /// Agents. Repeat or comma-separate.
    #[arg(long, value_name = "AGENT", value_delimiter = ',')]
    agent: Vec<String>,
    /// Events at or above this severity (debug, info, notice, warning, error, critical).
    #[arg(long, value_name = "LEVEL")]
    severity: Option<Severity>,
    /// An attr-match filter object (AEP-0003 §6), e.g. '{"run":"r1"}'; the flags above
    /// add to it and may not name the same attribute.
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    filter: Option<Value>,
}

impl FilterArgs {
    /// The wire filter; a malformed one (an unknown key, a glob outside `type`, a key
    /// named twice) is a usage error naming what is wrong.
    pub fn build(&self) -> Result<Value, Failure> {
        let mut map = match &self.filter {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let mut add = |key: &str, value: Value| -> Result<(), Failure> {
            if map.contains_key(key) {
                return Err(Failure::usage(format!(
                    "--filter already names `{key}`; give it once, in the filter or as --{}",
                    if key == "type" { "type" } else { key }
                )));
            }
            map.insert(key.to_owned(), value);
            Ok(())
        };
        let list = |v: &[String]| match v {
            [one] => Value::from(one.as_str()),
            many => Value::from(many.to_vec()),
        };
        if !self.types.is_empty() {
            add("type", list(&self.types))?;
        }
        if !self.session.is_empty() {
            add("session", list(&self.session))?;
        }
        if !self.agent.is_empty() {
            add("agent", list(&self.agent))?;
        }
        if let Some(level) = self.severity {
            add("severity", serde_json::json!({"gte": level.as_str()}))?;
        }
        let value = Value::Object(map);
        Filter::from_value(&value).map_err(|e| Failure::usage(format!("bad filter: {e}")))?;
        Ok(value)
    }
}
