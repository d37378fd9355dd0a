//! Checks the hand-written handlers against `openapi/openapi.yaml`.
//!
//! Generates, from the document, the operation table, one trait per tag (one method per
//! `operationId`, typed with the contract crate's generated types; `Operations` is all of
//! them) and the actix-web routes that call them. Each module of `src/handlers/` implements
//! its tag's trait, so an operation without a handler, a handler without an operation, or a
//! handler whose types no longer match the document fails to compile with an error naming
//! the operation.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let yaml = manifest.join("openapi/openapi.yaml");
    println!("cargo::rerun-if-changed={}", yaml.display());
    let doc = wpds_document::load_document(&yaml);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("operations.rs");
    std::fs::write(&out, wpds_codegen::operations::generate(&doc))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
