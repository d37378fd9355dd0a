//! Build-time code generation from `openapi/openapi.yaml`.
//!
//! The contract document is the single source of truth. This crate is used only by build
//! scripts: the contract crate's `build.rs` turns the document's schemas into Rust types
//! ([`types::generate`]) and renders the JSON and OpenAPI 3.0.3 forms of the document
//! ([`downgrade::downgrade_to_30`]); the server's `build.rs` turns its operations into an
//! operation table, one trait with one method per `operationId`, and the actix-web route
//! wiring ([`operations::generate`]).
//!
//! Rules:
//! - Generation is deterministic: the same document always gives the same code.
//! - A construct the generator does not understand is a build failure naming the JSON
//!   pointer, never a silently skipped schema.
//! - Constraints Rust types cannot express (patterns, lengths, bounds, formats) are not
//!   encoded here; the runtime validator enforces them from the same document.

pub mod compat;
pub mod downgrade;
pub mod names;
pub mod operations;
pub mod types;

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
