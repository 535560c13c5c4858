//! Field paths in the schema-annotation notation (`a.b`, `items[].text`): which
//! members of a payload [`Redactor::redact_fields`](super::Redactor::redact_fields) runs the
//! pipeline over.

use serde_json::Value;

/// A field path in the schema-annotation notation: `a.b`, `items[].text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldPath {
    /// Member names, each with how many `[]` follow it.
    steps: Vec<(String, usize)>,
}

/// Why a field path was refused.
///
/// ```
/// use aep_core::redact::{RedactOptions, Redactor};
/// let r = Redactor::new(RedactOptions::default())?;
/// let err = r.redact_fields(&mut serde_json::json!({}), ["a..b"]).unwrap_err();
/// assert!(err.to_string().contains("`a..b`"));
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field path `{path}` is malformed: expected member names joined by `.`, each optionally followed by `[]` (e.g. `answer.text`, `items[].note`)")]
pub struct FieldPathError {
    path: String,
}

impl FieldPathError {
    /// The refused path.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// let r = Redactor::new(RedactOptions::default())?;
    /// let err = r.redact_fields(&mut serde_json::json!({}), ["a[]b"]).unwrap_err();
    /// assert_eq!(err.path(), "a[]b");
    /// # Ok::<(), aep_core::redact::RedactError>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl FieldPath {
    pub(super) fn parse(path: &str) -> Result<FieldPath, FieldPathError> {
        let err = || FieldPathError {
            path: path.to_owned(),
        };
        let mut steps = Vec::new();
        for segment in path.split('.') {
            let name = segment.trim_end_matches("[]");
            let arrays = (segment.len() - name.len()) / 2;
            if name.is_empty() || name.contains(['[', ']']) {
                return Err(err());
            }
            steps.push((name.to_owned(), arrays));
        }
        Ok(FieldPath { steps })
    }

    /// The values this path names inside `data`.
    pub(super) fn resolve<'v>(&self, data: &'v mut Value) -> Vec<&'v mut Value> {
        let mut current = vec![data];
        for (name, arrays) in &self.steps {
            let mut next = Vec::new();
            for v in current {
                if let Some(member) = v.as_object_mut().and_then(|m| m.get_mut(name)) {
                    next.push(member);
                }
            }
            for _ in 0..*arrays {
                next = next
                    .into_iter()
                    .filter_map(Value::as_array_mut)
                    .flat_map(|items| items.iter_mut())
                    .collect();
            }
            current = next;
        }
        current
    }
}
