//! The contract document, embedded at build time.

use serde_json::Value;
use std::sync::OnceLock;

/// `openapi/openapi.yaml`, byte for byte: served as `/openapi.yaml`.
pub const YAML: &str = include_str!("../../../openapi/openapi.yaml");

/// The same document as JSON (OpenAPI 3.1.0), converted by the build.
pub const JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

/// The OpenAPI 3.0.3 rendition derived by the build, for generators that do not read 3.1.
pub const JSON_30: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi-3.0.json"));

/// The parsed 3.1 document, parsed once.
pub fn parsed() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(JSON).expect("the build wrote valid JSON"))
}
