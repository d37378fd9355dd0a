//! Checks a response against the document: the status is one the operation declares, the
//! media type is the declared one, the body matches the declared schema, and every declared
//! response header is present where it is required and matches its schema where present.
//!
//! The black-box tests run every response they receive through [`ResponseChecker::check`],
//! so a handler cannot drift from the document silently. Responses of routes outside the
//! contract's operations (an unknown path, a method a path lacks) must be problem+json
//! bodies matching `Problem`.

use crate::document;
use crate::validation::compile;
use jsonschema::Validator;
use serde_json::{Value, json};
use std::collections::HashMap;
use wpds_document::operations::{OperationInfo, collect};

/// Compiled response schemas of every operation.
pub struct ResponseChecker {
    operations: Vec<OperationInfo>,
    responses: HashMap<(String, u16), DeclaredResponse>,
    problem: Validator,
}

struct DeclaredResponse {
    media_type: String,
    validator: Validator,
    headers: Vec<DeclaredHeader>,
}

/// A response header the document declares.
struct DeclaredHeader {
    /// Its name, lower-case.
    name: String,
    required: bool,
    /// Whether its schema is `integer` or `number` (the value is read as a JSON number).
    numeric: bool,
    validator: Validator,
}

impl ResponseChecker {
    /// Compiles the response schemas of the embedded document.
    pub fn load() -> Result<Self, String> {
        Self::from_document(document::parsed())
    }

    /// Compiles the response schemas of `doc`.
    pub fn from_document(doc: &Value) -> Result<Self, String> {
        let components = doc.get("components").cloned().unwrap_or(Value::Null);
        let operations = collect(doc);
        let mut responses = HashMap::new();
        for op in &operations {
            let raw = &doc["paths"][&op.path][op.method.to_lowercase()]["responses"];
            for status in &op.statuses {
                let response = wpds_document::deref(doc, &raw[status.to_string()]);
                let content = response["content"]
                    .as_object()
                    .ok_or_else(|| format!("{} {status}: no content", op.id))?;
                let (media_type, media) =
                    content.iter().next().ok_or_else(|| format!("{} {status}: empty content", op.id))?;
                let validator = compile(&media["schema"], &components)?;
                let headers = declared_headers(doc, response, &components)
                    .map_err(|e| format!("{} {status}: {e}", op.id))?;
                responses.insert(
                    (op.id.clone(), *status),
                    DeclaredResponse { media_type: media_type.clone(), validator, headers },
                );
            }
        }
        let problem = compile(&json!({"$ref": "#/components/schemas/Problem"}), &components)?;
        Ok(ResponseChecker { operations, responses, problem })
    }

    /// The operation answering `method` on the concrete `path`, if any.
    pub fn operation(&self, method: &str, path: &str) -> Option<&OperationInfo> {
        self.operations
            .iter()
            .find(|op| op.method.eq_ignore_ascii_case(method) && matches_template(&op.path, path))
    }

    /// Checks one response; the error says what does not match.
    pub fn check(
        &self,
        method: &str,
        path: &str,
        status: u16,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<(), String> {
        let media_type = content_type.map(|c| c.split(';').next().unwrap_or_default().trim());
        let parsed: Value = serde_json::from_slice(body)
            .map_err(|e| format!("{method} {path} → {status}: the body is not JSON: {e}"))?;
        let Some(op) = self.operation(method, path) else {
            return self.check_problem(method, path, status, media_type, &parsed);
        };
        let declared = self.responses.get(&(op.id.clone(), status)).ok_or_else(|| {
            format!(
                "{method} {path} → {status}: {} does not declare {status} (it declares {:?})",
                op.id, op.statuses
            )
        })?;
        if media_type != Some(declared.media_type.as_str()) {
            return Err(format!(
                "{method} {path} → {status}: Content-Type {media_type:?}, the document declares {}",
                declared.media_type
            ));
        }
        let errors: Vec<String> = declared
            .validator
            .iter_errors(&parsed)
            .map(|e| format!("{} at {:?}", e, e.instance_path().as_str()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("{method} {path} → {status} ({}): {}", op.id, errors.join("; ")))
        }
    }

    /// Checks the headers of one response of an operation (`header` looks a header up by
    /// its lower-case name): each header the document declares as required is present, and
    /// each declared header present matches its schema. Responses outside the operations
    /// and undeclared statuses are [`ResponseChecker::check`]'s to refuse.
    pub fn check_headers<'a>(
        &self,
        method: &str,
        path: &str,
        status: u16,
        header: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<(), String> {
        let Some(op) = self.operation(method, path) else { return Ok(()) };
        let Some(declared) = self.responses.get(&(op.id.clone(), status)) else { return Ok(()) };
        let mut errors = Vec::new();
        for expected in &declared.headers {
            let Some(value) = header(&expected.name) else {
                if expected.required {
                    errors.push(format!("the required header {} is missing", expected.name));
                }
                continue;
            };
            let parsed = if expected.numeric {
                serde_json::from_str::<Value>(value).unwrap_or_else(|_| Value::String(value.to_owned()))
            } else {
                Value::String(value.to_owned())
            };
            for error in expected.validator.iter_errors(&parsed) {
                errors.push(format!("header {}: {value:?}: {error}", expected.name));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("{method} {path} → {status} ({}): {}", op.id, errors.join("; ")))
        }
    }

    fn check_problem(
        &self,
        method: &str,
        path: &str,
        status: u16,
        media_type: Option<&str>,
        body: &Value,
    ) -> Result<(), String> {
        if status < 400 || media_type != Some("application/problem+json") {
            return Err(format!(
                "{method} {path} → {status} ({media_type:?}) is outside the contract's operations"
            ));
        }
        let errors: Vec<String> = self.problem.iter_errors(body).map(|e| e.to_string()).collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("{method} {path} → {status}: not a Problem: {}", errors.join("; ")))
        }
    }
}

/// The headers `response` (dereferenced) declares, each with its schema compiled.
fn declared_headers(
    doc: &Value,
    response: &Value,
    components: &Value,
) -> Result<Vec<DeclaredHeader>, String> {
    let Some(headers) = response.get("headers").and_then(Value::as_object) else { return Ok(Vec::new()) };
    headers
        .iter()
        .map(|(name, header)| {
            let header = wpds_document::deref(doc, header);
            let schema = wpds_document::deref(doc, &header["schema"]);
            let numeric = matches!(schema["type"].as_str(), Some("integer" | "number"));
            let validator =
                compile(&header["schema"], components).map_err(|e| format!("header {name}: {e}"))?;
            Ok(DeclaredHeader {
                name: name.to_ascii_lowercase(),
                required: header["required"].as_bool().unwrap_or(false),
                numeric,
                validator,
            })
        })
        .collect()
}

/// Whether `path` (without query) fills the `{parameter}` segments of `template`.
fn matches_template(template: &str, path: &str) -> bool {
    let path = path.split('?').next().unwrap_or_default();
    let mut want = template.split('/');
    let mut have = path.split('/');
    loop {
        match (want.next(), have.next()) {
            (None, None) => return true,
            (Some(w), Some(h)) if w.starts_with('{') && w.ends_with('}') => {
                if h.is_empty() {
                    return false;
                }
            }
            (Some(w), Some(h)) if w == h => {}
            _ => return false,
        }
    }
}
