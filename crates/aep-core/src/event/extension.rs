//! Extension attributes (AEP-0001 §5.4): the name and value rules an emitter checks
//! before an event exists.

use serde_json::value::RawValue;
use serde_json::Value;

use super::CORE_ATTRIBUTES;

/// A refused extension attribute (AEP-0001 §5.4): the emitting library must refuse it
/// rather than emit a non-conformant envelope.
///
/// ```
/// use aep_core::{Event, ExtensionError};
/// let mut e = Event::new("1", "agent.idle", "t", "s", "a");
/// assert_eq!(e.set_extension("seq", 1.into()), Err(ExtensionError::CoreName("seq".into())));
/// assert_eq!(e.set_extension("acme_x", 1.into()), Err(ExtensionError::BadName("acme_x".into())));
/// assert_eq!(e.set_extension("acmex", 1.5.into()), Err(ExtensionError::NonScalar("acmex".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// The name collides with a core attribute; on the wire it would be
    /// indistinguishable from the attribute itself.
    #[error("extension attribute `{0}` collides with a core attribute name (AEP-0001 §5.4); pick a vendor-prefixed name")]
    CoreName(String),
    /// The name does not match `[a-z0-9]{{1,20}}`.
    #[error("extension attribute name `{0}` must be 1 to 20 lowercase ASCII letters or digits (AEP-0001 §5.4)")]
    BadName(String),
    /// The value is not a JSON string, integer or boolean.
    #[error(
        "extension attribute `{0}` must carry a string, integer or boolean value (AEP-0001 §5.4)"
    )]
    NonScalar(String),
}

/// Checks an extension attribute name against AEP-0001 §5.4.
///
/// ```
/// use aep_core::event::check_extension_name;
/// assert!(check_extension_name("acmeregion").is_ok());
/// assert!(check_extension_name("session").is_err()); // core name
/// assert!(check_extension_name("Acme-Region").is_err()); // ill-formed
/// ```
pub fn check_extension_name(name: &str) -> Result<(), ExtensionError> {
    if CORE_ATTRIBUTES.contains(&name) {
        return Err(ExtensionError::CoreName(name.to_owned()));
    }
    let well_formed = (1..=20).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if well_formed {
        Ok(())
    } else {
        Err(ExtensionError::BadName(name.to_owned()))
    }
}

/// Checks an extension attribute value against AEP-0001 §5.4 (string, integer or
/// boolean).
///
/// ```
/// use aep_core::event::is_extension_value;
/// use serde_json::json;
/// assert!(is_extension_value(&json!("eu-1")) && is_extension_value(&json!(-3)) && is_extension_value(&json!(true)));
/// assert!(!is_extension_value(&json!(0.5)) && !is_extension_value(&json!(null)) && !is_extension_value(&json!({})));
/// ```
pub fn is_extension_value(value: &Value) -> bool {
    match value {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

pub(super) fn raw(value: &Value) -> Box<RawValue> {
    // Serializing a `Value` cannot fail: its map keys are always strings.
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| null_raw())
}

pub(super) fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_else(|_| unreachable_raw())
}

#[cold]
pub(super) fn unreachable_raw() -> Box<RawValue> {
    // "null" is valid JSON; this arm exists only so no path in this module can panic.
    Box::default()
}
