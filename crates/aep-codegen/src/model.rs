//! The schema registry read into the few shapes the payload schemas use.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::CodegenError;

/// A capture level as annotated by `x-aep-capture` (AEP-0001 §8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    /// `metadata`, also the default of an unannotated field (AEP-0002 §5.1 rule 4).
    Metadata,
    /// `redacted`.
    Redacted,
    /// `full`.
    Full,
}

impl Capture {
    pub(crate) fn wire(self) -> &'static str {
        match self {
            Capture::Metadata => "metadata",
            Capture::Redacted => "redacted",
            Capture::Full => "full",
        }
    }
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Capture::Metadata => "Metadata",
            Capture::Redacted => "Redacted",
            Capture::Full => "Full",
        }
    }
}

/// A `[metadata*]` field of AEP-0002 §5.3: annotated `metadata`, but its real content is
/// allowed only at `redacted`+, so a hop below `redacted` degrades it structurally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exception {
    /// `attention.requested` `prompt`: the AEP-0003 §9.2 synthesis from envelope facts.
    SynthesizedPrompt,
    /// An option, field or choice `label`: its sibling `id` as the placeholder.
    IdLabel,
    /// `answer.values`: only number and boolean entries are structural.
    StructuralValues,
}

impl Exception {
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Exception::SynthesizedPrompt => "SynthesizedPrompt",
            Exception::IdLabel => "IdLabel",
            Exception::StructuralValues => "StructuralValues",
        }
    }
}

/// The `[metadata*]` fields AEP-0002 §5.3 names. The schemas carry them only as prose
/// (`$comment`), so they are listed here and cross-checked against the schemas: a listed
/// path must exist annotated `metadata`, and a comment announcing an exception must be
/// listed.
const EXCEPTIONS: &[(&str, &str, Exception)] = &[
    (
        "attention.requested",
        "prompt",
        Exception::SynthesizedPrompt,
    ),
    ("attention.requested", "options[].label", Exception::IdLabel),
    ("attention.requested", "fields[].label", Exception::IdLabel),
    (
        "attention.requested",
        "fields[].choices[].label",
        Exception::IdLabel,
    ),
    (
        "attention.answered",
        "answer.values",
        Exception::StructuralValues,
    ),
    (
        "control.attention.respond",
        "answer.values",
        Exception::StructuralValues,
    ),
];

/// Words in a `$comment` that announce a `[metadata*]` field.
const EXCEPTION_MARKERS: &[&str] = &["by exception", "type-dependent gating"];

#[derive(Debug)]
pub(crate) struct Registry {
    pub types: Vec<TypeDef>,
    /// The registered categories of `registry/categories.json` (AEP-0002 §3), in file
    /// order, without the `x` vendor namespace.
    pub categories: Vec<String>,
}

/// The `status` values of `registry/types.json` (AEP-0002 §4).
pub(crate) const STATUSES: &[&str] = &["mandatory", "optional", "reserved"];
/// The `scope` values of `registry/types.json` (AEP-0002 §4).
pub(crate) const SCOPES: &[&str] = &["session", "agent", "command"];

#[derive(Debug)]
pub(crate) struct TypeDef {
    pub name: String,
    /// One of [`STATUSES`].
    pub status: String,
    /// One of [`SCOPES`].
    pub scope: String,
    pub summary: String,
    /// The schema file name, or `None` for a reserved type whose payload is deferred.
    pub schema_file: Option<String>,
    pub root: Option<Object>,
}

#[derive(Debug, Clone)]
pub(crate) struct Object {
    pub props: Vec<Prop>,
    pub comment: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Prop {
    pub wire: String,
    pub capture: Capture,
    pub annotated: bool,
    pub required: bool,
    pub comment: Option<String>,
    /// A JSON Schema `description`, when a schema gives one.
    pub description: Option<String>,
    pub exception: Option<Exception>,
    pub ty: Ty,
}

#[derive(Debug, Clone)]
pub(crate) enum Ty {
    String,
    Integer { unsigned: bool },
    Number,
    Boolean,
    Enum(Vec<String>),
    Object(Object),
    OpenObject,
    TextOrObject,
    Array(Box<Ty>),
    Any,
}

pub(crate) fn load(dir: &Path) -> Result<Registry, CodegenError> {
    let reg_path = dir.join("registry").join("types.json");
    let reg = read_json(&reg_path)?;
    let rows = reg
        .get("types")
        .and_then(Value::as_array)
        .ok_or_else(|| unsupported(&reg_path, "no `types` array".into()))?;
    let mut types = Vec::with_capacity(rows.len());
    let mut listed = Vec::new();
    for row in rows {
        let field = |k: &str| row.get(k).and_then(Value::as_str).map(str::to_owned);
        let name =
            field("type").ok_or_else(|| unsupported(&reg_path, "row without `type`".into()))?;
        let schema_file = field("schema");
        let root = match &schema_file {
            Some(file) => {
                let path = dir.join("types").join(file);
                let schema = read_json(&path)?;
                let mut cx = Cx {
                    path: &path,
                    type_name: &name,
                    found: Vec::new(),
                };
                let root = cx.object(&schema, "")?;
                for (t, p, _) in EXCEPTIONS.iter().filter(|(t, _, _)| *t == name) {
                    if !cx.found.iter().any(|f| f == p) {
                        return Err(unsupported(
                            &path,
                            format!("the [metadata*] field `{p}` of `{t}` is missing or not annotated `metadata`"),
                        ));
                    }
                }
                listed.push(name.clone());
                Some(root)
            }
            None => None,
        };
        // The registry's closed vocabularies become Rust enums in aep-core; a value the
        // generator does not know must stop it rather than be guessed.
        let closed = |key: &str, allowed: &[&str]| {
            field(key)
                .filter(|v| allowed.contains(&v.as_str()))
                .ok_or_else(|| {
                    unsupported(
                        &reg_path,
                        format!("`{name}`: `{key}` must be one of {allowed:?}"),
                    )
                })
        };
        types.push(TypeDef {
            status: closed("status", STATUSES)?,
            scope: closed("scope", SCOPES)?,
            summary: field("summary").unwrap_or_default(),
            name,
            schema_file,
            root,
        });
    }
    for (t, _, _) in EXCEPTIONS {
        if !listed.iter().any(|l| l == t) {
            return Err(unsupported(
                &reg_path,
                format!("`{t}` has [metadata*] fields but no schema"),
            ));
        }
    }
    Ok(Registry {
        types,
        categories: categories(&dir.join("registry").join("categories.json"))?,
    })
}

fn categories(path: &Path) -> Result<Vec<String>, CodegenError> {
    let doc = read_json(path)?;
    let rows = doc
        .get("categories")
        .and_then(Value::as_array)
        .ok_or_else(|| unsupported(path, "no `categories` array".into()))?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let name = row
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| unsupported(path, "category without `name`".into()))?;
        // `x` is the vendor namespace (AEP-0001 §6), not a category a core type carries.
        if name != "x" {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

struct Cx<'a> {
    path: &'a Path,
    type_name: &'a str,
    /// The exception paths met, to check the table against the schemas.
    found: Vec<String>,
}

impl Cx<'_> {
    fn object(&mut self, node: &Value, base: &str) -> Result<Object, CodegenError> {
        let empty = Map::new();
        let props = node
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(props.len());
        for (wire, schema) in props {
            let path = if base.is_empty() {
                wire.clone()
            } else {
                format!("{base}.{wire}")
            };
            out.push(self.prop(wire, schema, &path, required.contains(&wire.as_str()))?);
        }
        Ok(Object {
            props: out,
            comment: comment(node),
        })
    }

    fn prop(
        &mut self,
        wire: &str,
        schema: &Value,
        path: &str,
        required: bool,
    ) -> Result<Prop, CodegenError> {
        let annotation = schema.get("x-aep-capture");
        let capture = match annotation.map(|a| a.as_str()) {
            None => Capture::Metadata,
            Some(Some("metadata")) => Capture::Metadata,
            Some(Some("redacted")) => Capture::Redacted,
            Some(Some("full")) => Capture::Full,
            Some(other) => {
                return Err(unsupported(
                    self.path,
                    format!("`{path}`: x-aep-capture {other:?} is not metadata, redacted or full"),
                ))
            }
        };
        let comment = comment(schema);
        let exception = EXCEPTIONS
            .iter()
            .find(|(t, p, _)| *t == self.type_name && *p == path)
            .map(|(_, _, e)| *e);
        let announced = comment
            .as_deref()
            .is_some_and(|c| EXCEPTION_MARKERS.iter().any(|m| c.contains(m)));
        if announced && exception.is_none() {
            return Err(unsupported(
                self.path,
                format!("`{path}` announces a [metadata*] exception the generator does not list; add it to EXCEPTIONS"),
            ));
        }
        if exception.is_some() {
            if capture != Capture::Metadata {
                return Err(unsupported(
                    self.path,
                    format!(
                        "[metadata*] field `{path}` is annotated `{}`",
                        capture.wire()
                    ),
                ));
            }
            self.found.push(path.to_owned());
        }
        let ty = self.ty(schema, path)?;
        Ok(Prop {
            wire: wire.to_owned(),
            capture,
            annotated: annotation.is_some(),
            required,
            comment,
            description: schema
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            exception,
            ty,
        })
    }

    fn ty(&mut self, schema: &Value, path: &str) -> Result<Ty, CodegenError> {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            let strings: Option<Vec<String>> = values
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect();
            return Ok(strings.map_or(Ty::Any, Ty::Enum));
        }
        let ty = match schema.get("type") {
            None => return Ok(Ty::Any),
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => {
                let mut names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
                names.sort_unstable();
                if names == ["object", "string"] {
                    return Ok(Ty::TextOrObject);
                }
                return Err(unsupported(
                    self.path,
                    format!("`{path}`: type union {names:?}"),
                ));
            }
            Some(other) => {
                return Err(unsupported(self.path, format!("`{path}`: type {other}")));
            }
        };
        Ok(match ty {
            "string" => Ty::String,
            "integer" => Ty::Integer {
                unsigned: schema
                    .get("minimum")
                    .and_then(Value::as_f64)
                    .is_some_and(|m| m >= 0.0),
            },
            "number" => Ty::Number,
            "boolean" => Ty::Boolean,
            "object" if schema.get("properties").is_some() => {
                Ty::Object(self.object(schema, path)?)
            }
            "object" => Ty::OpenObject,
            "array" => match schema.get("items") {
                Some(items) => Ty::Array(Box::new(self.ty(items, &format!("{path}[]"))?)),
                None => Ty::Array(Box::new(Ty::Any)),
            },
            other => {
                return Err(unsupported(self.path, format!("`{path}`: type `{other}`")));
            }
        })
    }
}

fn comment(node: &Value) -> Option<String> {
    node.get("$comment")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn read_json(path: &Path) -> Result<Value, CodegenError> {
    let text = std::fs::read_to_string(path).map_err(|source| CodegenError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| CodegenError::Json {
        path: path.to_owned(),
        source,
    })
}

fn unsupported(path: &Path, what: String) -> CodegenError {
    CodegenError::Unsupported {
        path: PathBuf::from(path),
        what,
    }
}
