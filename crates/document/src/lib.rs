//! The contract document model: `openapi/openapi.yaml` read into a JSON value, its local
//! references followed, and its operations collected into [`operations::OperationInfo`].
//!
//! Both sides of the contract read the document through this crate: the generators of
//! `wpds-codegen` and the breaking-change checker of `wpds-compat` at build and check time,
//! and the contract crate's request validation at run time. It is therefore linked into the
//! server binary, and stays small.
//!
//! Rules:
//! - A model of the document, nothing else: no code generation, no OpenAPI 3.0 rendition,
//!   no compatibility rules, no validation, no I/O beyond [`load_document`] reading a file.
//! - It depends on no other crate of this workspace; the others depend on it
//!   (`scripts/check-layering` checks this).
//! - A document the model cannot represent (a dangling `$ref`, an operation without an
//!   `operationId`, ...) is a panic naming the place: the contract is broken, and the build
//!   or the start-up must stop.
//! - Everything is read in document order (serde_json's `preserve_order`), so whatever is
//!   derived from the model is deterministic.

pub mod operations;

use serde_json::Value;
use std::path::Path;

/// Reads and parses the contract document (YAML) into a JSON value.
///
/// Panics with the file name and the parser's message when the file is unreadable or not
/// valid YAML: a build script cannot continue without the contract.
pub fn load_document(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse_document(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses the YAML text of a contract document into a JSON value.
pub fn parse_document(text: &str) -> Result<Value, String> {
    yaml_serde::from_str::<Value>(text).map_err(|e| format!("invalid YAML: {e}"))
}

/// Resolves a local reference such as `#/components/schemas/Document` in `doc`.
///
/// Panics with the reference when it does not resolve: a dangling `$ref` is a broken
/// contract.
pub fn resolve<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("only local references are supported: {reference}"));
    doc.pointer(pointer).unwrap_or_else(|| panic!("dangling reference {reference}"))
}

/// Follows `$ref` chains until a non-reference object is reached.
pub fn deref<'a>(doc: &'a Value, mut value: &'a Value) -> &'a Value {
    while let Some(reference) = value.get("$ref").and_then(Value::as_str) {
        value = resolve(doc, reference);
    }
    value
}

/// The component name a schema reference points at (`#/components/schemas/X` gives `X`).
pub fn ref_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}
