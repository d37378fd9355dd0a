//! Generates the contract's Rust types, its problem-code enum and its JSON renditions from `openapi/openapi.yaml`.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let yaml = manifest.join("../../openapi/openapi.yaml");
    println!("cargo::rerun-if-changed={}", yaml.display());
    let doc = wpds_document::load_document(&yaml);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    write(out.join("types.rs"), wpds_codegen::types::generate(&doc, "crate::wire"));
    write(out.join("problem_codes.rs"), wpds_codegen::problems::generate(&doc));
    write(out.join("openapi.json"), pretty(&doc));
    write(out.join("openapi-3.0.json"), pretty(&wpds_codegen::downgrade::downgrade_to_30(&doc)));
}

fn pretty(doc: &serde_json::Value) -> String {
    serde_json::to_string_pretty(doc).expect("a JSON value always serialises") + "\n"
}

fn write(path: PathBuf, text: String) {
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
