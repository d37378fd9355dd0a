//! Generates the fixture file's serde types from `openapi/fixture.schema.json` (the format
//! `wpds seed` loads), so that the schema is the one description of the file.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let path = manifest.join("../../openapi/fixture.schema.json");
    println!("cargo::rerun-if-changed={}", path.display());
    // JSON is YAML: the document model's loader reads the schema as it reads the contract.
    let schema = wpds_document::load_document(&path);
    let code = wpds_codegen::types::generate_json_schema(
        &schema,
        "Fixture",
        "openapi/fixture.schema.json",
        "wpds_contract::wire",
    );
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("fixture.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
