//! Checks a response against the document: the status is one the operation declares, the
//! media type is the declared one, and the body matches the declared schema.
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
                responses.insert(
                    (op.id.clone(), *status),
                    DeclaredResponse { media_type: media_type.clone(), validator },
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
