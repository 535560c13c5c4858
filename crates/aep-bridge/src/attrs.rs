//! Ordered name/value lists, as the mappings keep CloudEvents extensions and OTLP
//! attributes: in the order they were written, looked up by name.

use serde_json::Value;

/// Every pair, the name borrowed as `&str`.
pub(crate) fn pairs(list: &[(String, Value)]) -> impl ExactSizeIterator<Item = (&str, &Value)> {
    list.iter().map(|(k, v)| (k.as_str(), v))
}

/// The value of the first pair named `name`.
pub(crate) fn get<'a>(list: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    list.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}
