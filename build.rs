//! Checks the hand-written handlers against `openapi/openapi.yaml`.
//!
//! Generates, from the document, the operation table, one trait per tag (one method per
//! `operationId`, typed with the contract crate's generated types; `Operations` is all of
//! them) and the actix-web routes that call them. Each module of `src/handlers/` implements
//! its tag's trait, so an operation without a handler, a handler without an operation, or a
//! handler whose types no longer match the document fails to compile with an error naming
//! the operation.
//!
//! Also embeds the conformance kit (`conformance/`, every file, and the contract's
//! `openapi/schemathesis.toml` published with it) for `src/http/conformance.rs` to serve.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let yaml = manifest.join("openapi/openapi.yaml");
    println!("cargo::rerun-if-changed={}", yaml.display());
    let doc = wpds_document::load_document(&yaml);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("operations.rs");
    std::fs::write(&out, wpds_codegen::operations::generate(&doc))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    embed_conformance_kit(&manifest, &out.with_file_name("conformance_kit.rs"));
}

/// Writes `KIT: &[(name, bytes)]`, sorted by name: every file under `conformance/` by its
/// path there, and the files of the repository published with it, which its index maps to
/// their paths (`publishedFrom`, written by `scripts/conformance`).
fn embed_conformance_kit(manifest: &Path, out: &Path) {
    let kit = manifest.join("conformance");
    println!("cargo::rerun-if-changed={}", kit.display());
    let mut files = Vec::new();
    collect_files(&kit, &kit, &mut files);
    let index = kit.join("index.json");
    let text =
        std::fs::read_to_string(&index).unwrap_or_else(|e| panic!("cannot read {}: {e}", index.display()));
    let index =
        wpds_document::parse_document(&text).unwrap_or_else(|e| panic!("conformance/index.json: {e}"));
    let published = index["publishedFrom"].as_object().expect("conformance/index.json has publishedFrom");
    for (name, path) in published {
        let path = path.as_str().expect("a path in the repository");
        files.push((name.clone(), manifest.join(path)));
    }
    files.sort();
    let mut text =
        String::from("/// The conformance kit's files: (path in the kit, bytes), sorted by path.\n");
    text.push_str("pub static KIT: &[(&str, &[u8])] = &[\n");
    for (name, path) in &files {
        println!("cargo::rerun-if-changed={}", path.display());
        text.push_str(&format!("    ({name:?}, include_bytes!({:?})),\n", path.display().to_string()));
    }
    text.push_str("];\n");
    std::fs::write(out, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

/// Every file under `dir` (directories too are watched, so an added file rebuilds).
fn collect_files(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())).path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            println!("cargo::rerun-if-changed={}", path.display());
            collect_files(root, &path, files);
        } else {
            let name = path.strip_prefix(root).expect("under the kit").to_string_lossy().replace('\\', "/");
            files.push((name, path));
        }
    }
}
