//! Reading vendor payloads: every accessor is total (a missing or mistyped member is
//! `None`), so a malformed payload maps to less, never to a panic.

use serde_json::Value;

/// The member `key` of an object (`None` when `v` is no object or lacks it, or holds
/// `null`).
pub(crate) fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object()?.get(key).filter(|x| !x.is_null())
}

/// The value at a path of object keys.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, key| get(cur, key))
}

/// A non-empty string member.
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    get(v, key)?.as_str().filter(|x| !x.is_empty())
}

/// A non-empty string at a path.
pub(crate) fn s_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path)?.as_str().filter(|x| !x.is_empty())
}

/// A member as text: a non-empty string as it is, a number or a boolean spelled out
/// (vendors send ids and counters both ways).
pub(crate) fn text(v: &Value, key: &str) -> Option<String> {
    scalar_text(get(v, key)?)
}

/// A scalar as text.
pub(crate) fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(x) if !x.is_empty() => Some(x.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A boolean member (`true`/`false`, or the strings `"true"`/`"false"` OTel
/// attributes carry).
pub(crate) fn flag(v: &Value, key: &str) -> Option<bool> {
    match get(v, key)? {
        Value::Bool(b) => Some(*b),
        Value::String(x) if x == "true" => Some(true),
        Value::String(x) if x == "false" => Some(false),
        _ => None,
    }
}

/// A number member, also from its decimal string.
pub(crate) fn num(v: &Value, key: &str) -> Option<Value> {
    match get(v, key)? {
        Value::Number(n) => Some(Value::Number(n.clone())),
        Value::String(x) => x.trim().parse::<i64>().map(Value::from).ok().or_else(|| {
            x.trim()
                .parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        }),
        _ => None,
    }
}

/// A member that is present and not empty (AEP's reading of a value: aep-core's
/// `truthy`).
pub(crate) fn present(v: &Value, key: &str) -> bool {
    get(v, key).is_some_and(aep_core::payload::truthy)
}

/// The text parts of a content-part array (`[{type: "text", text}]`) joined, or the
/// string itself.
pub(crate) fn joined_text(v: &Value) -> Option<String> {
    match v {
        Value::String(x) => Some(x.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(x) => Some(x.as_str()),
                    other => s(other, "text"),
                })
                .collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }
}
