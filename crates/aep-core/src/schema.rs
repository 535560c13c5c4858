//! Payload schema facts kept as data: every field's `x-aep-capture` annotation
//! (AEP-0002 §5.1) as a static tree per registered type, with the `[metadata*]`
//! exception fields of AEP-0002 §5.3 marked. The down-leveler of [`crate::capture`]
//! reads these trees.
//!
//! ```
//! use aep_core::{schema::{type_capture, Exception}, Capture};
//! let answered = type_capture("attention.answered").expect("registered");
//! let answer = answered.field("answer").expect("annotated");
//! assert_eq!(answer.property("text").map(|f| f.capture), Some(Capture::Redacted));
//! assert_eq!(answer.property("values").and_then(|f| f.exception), Some(Exception::StructuralValues));
//! ```

use crate::level::Capture;

// The annotations themselves, generated from the schemas by aep-codegen.
mod annotations;

pub use annotations::{type_capture, TYPE_CAPTURES};

/// How a `[metadata*]` field (AEP-0002 §5.3) degrades below `redacted`. Such a field is
/// annotated `metadata`, yet carries real content only at `redacted`+; a hop has no
/// source context to synthesize or classify, so it degrades the field structurally.
///
/// ```
/// use aep_core::schema::{type_capture, Exception};
/// let requested = type_capture("attention.requested").expect("registered");
/// assert_eq!(requested.field("prompt").and_then(|f| f.exception), Some(Exception::SynthesizedPrompt));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exception {
    /// `attention.requested` `prompt`: replaced by the AEP-0003 §9.2 synthesis from
    /// envelope facts (`{agent} requests {kind}: {subject}`).
    SynthesizedPrompt,
    /// An option, form field or choice `label`: replaced by its sibling `id`, the
    /// structural placeholder.
    IdLabel,
    /// `answer.values` (AEP-0006): only number and boolean entries are structural; a
    /// string may be free text, and an array's ids cannot be checked without the
    /// request's `field_spec`.
    StructuralValues,
}

/// One annotated payload field: its wire name, the minimum capture level at which it may
/// be present, and the annotations below it.
///
/// ```
/// use aep_core::{schema::type_capture, Capture};
/// let returned = type_capture("resource.retrieval.returned").expect("registered");
/// let documents = returned.field("documents").expect("annotated");
/// assert_eq!(documents.item("content").map(|f| f.capture), Some(Capture::Full));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldCapture {
    /// The member name as on the wire.
    pub name: &'static str,
    /// The `x-aep-capture` level (`metadata` when unannotated, AEP-0002 §5.1 rule 4).
    pub capture: Capture,
    /// Set on the `[metadata*]` fields of AEP-0002 §5.3.
    pub exception: Option<Exception>,
    /// The annotated members when the field is an object.
    pub properties: &'static [FieldCapture],
    /// The annotated members of each item when the field is an array of objects.
    pub items: &'static [FieldCapture],
}

impl FieldCapture {
    /// The annotation of the object member `name`.
    ///
    /// ```
    /// use aep_core::{schema::type_capture, Capture};
    /// let failed = type_capture("tool.failed").expect("registered");
    /// let error = failed.field("error").expect("annotated");
    /// assert_eq!(error.property("message").map(|f| f.capture), Some(Capture::Redacted));
    /// ```
    pub fn property(&self, name: &str) -> Option<&'static FieldCapture> {
        self.properties.iter().find(|f| f.name == name)
    }

    /// The annotation of member `name` of each array item.
    ///
    /// ```
    /// use aep_core::{schema::type_capture, Capture};
    /// let cited = type_capture("resource.citation.recorded").expect("registered");
    /// let citations = cited.field("citations").expect("annotated");
    /// assert_eq!(citations.item("cited_text").map(|f| f.capture), Some(Capture::Full));
    /// ```
    pub fn item(&self, name: &str) -> Option<&'static FieldCapture> {
        self.items.iter().find(|f| f.name == name)
    }
}

/// The capture annotations of one registered type's payload schema.
///
/// ```
/// use aep_core::{schema::type_capture, Capture};
/// let started = type_capture("session.started").expect("registered");
/// assert_eq!(started.event_type, "session.started");
/// assert_eq!(started.field("cwd").map(|f| f.capture), Some(Capture::Redacted));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeCapture {
    /// The registered type.
    pub event_type: &'static str,
    /// The annotated top-level members of `data`.
    pub fields: &'static [FieldCapture],
}

impl TypeCapture {
    /// The annotation of the top-level `data` member `name`.
    ///
    /// ```
    /// use aep_core::{schema::type_capture, Capture};
    /// let requested = type_capture("tool.requested").expect("registered");
    /// assert_eq!(requested.field("args").map(|f| f.capture), Some(Capture::Full));
    /// assert!(requested.field("vendor_field").is_none()); // defaults to metadata
    /// ```
    pub fn field(&self, name: &str) -> Option<&'static FieldCapture> {
        self.fields.iter().find(|f| f.name == name)
    }
}
