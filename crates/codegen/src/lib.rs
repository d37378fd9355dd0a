//! Build-time code generation from `openapi/openapi.yaml`.
//!
//! The contract document is the single source of truth; the build scripts load it with
//! `wpds_document::load_document` and this crate reads it through that model
//! (`wpds_document::operations::collect`, `deref`). This crate is used only by build
//! scripts: the contract crate's `build.rs` turns the document's schemas into Rust types
//! ([`types::generate`]) and its problem-code catalogue into the `ProblemCode` enum
//! ([`problems::generate`]), and renders the JSON and OpenAPI 3.0.3 forms of the document
//! ([`downgrade::downgrade_to_30`]); the server's `build.rs` turns its operations into an
//! operation table, one trait with one method per `operationId`, and the actix-web route
//! wiring ([`operations::generate`]).
//!
//! Rules:
//! - Only build scripts depend on this crate: it is never a normal dependency of the
//!   contract crate or of the server, so the binary does not carry the generators
//!   (`scripts/check-layering` checks this). What the runtime needs of the document lives
//!   in `wpds-document`.
//! - Generation is deterministic: the same document always gives the same code.
//! - A construct the generator does not understand is a build failure naming the JSON
//!   pointer, never a silently skipped schema.
//! - Constraints Rust types cannot express (patterns, lengths, bounds, formats) are not
//!   encoded here; the runtime validator enforces them from the same document.

pub mod downgrade;
pub mod names;
pub mod operations;
pub mod problems;
pub mod types;
