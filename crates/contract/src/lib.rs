//! The 1.0.0 API contract, derived from `openapi/openapi.yaml`.
//!
//! This crate owns everything that follows from the document and nothing else:
//! - [`types`]: the Rust types of every schema and of every operation's parameters,
//!   generated at build time (never edited by hand);
//! - [`document`]: the document itself, as the file's exact bytes and as the JSON and
//!   OpenAPI 3.0.3 renditions the build derives from it;
//! - [`validation`]: request validation against the document's own schemas (JSON Schema
//!   2020-12, formats checked), compiled once, and the response check tests rely on;
//! - [`problem`]: the RFC 9457 problem body every error answers with.
//!
//! Rules: no business logic, no I/O beyond the embedded document, and no storage
//! dependency (CI checks that diesel never enters this crate's dependency tree). The
//! document is read at run time through `wpds-document`; the generators (`wpds-codegen`)
//! and the breaking-change checker (`wpds-compat`) are never normal dependencies, only the
//! build script uses the generators (`scripts/check-layering` checks both). A rule the
//! document states is enforced from the document, never re-typed here by hand.

pub mod document;
pub mod problem;
pub mod responses;
pub mod strict_json;
pub mod validation;
pub mod wire;

/// Rust types generated from the document's schemas and operation parameters.
#[expect(
    missing_docs,
    reason = "generated from the document's schemas, whose descriptions are not doc comments"
)]
pub mod types {
    include!(concat!(env!("OUT_DIR"), "/types.rs"));
}
