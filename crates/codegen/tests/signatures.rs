//! The handlers' signatures as the contract gives them: the traits `operations::generate`
//! makes of `openapi/openapi.yaml`, one per tag, kept as a snapshot
//! (`tests/snapshots/signatures__handler_traits.snap`).
//!
//! A change of the document that changes what a handler takes or returns changes this
//! snapshot, so the review sees it; that a handler which no longer matches its trait does
//! not compile is shown by the server's `tests/handler_contract.rs`. To accept a change:
//! `INSTA_UPDATE=always cargo test -p wpds-codegen --test signatures`, then read `git diff`.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

use wpds_codegen::operations;

#[test]
fn the_document_gives_each_handler_its_signature() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi/openapi.yaml");
    let code = operations::generate(&wpds_document::load_document(&root));
    let start = code.find("#[doc = \"The operations tagged").expect("the first tag's trait");
    let end = code[start..].find("impl<S: ").map(|at| start + at).expect("the blanket impl");
    let end = end + code[end..].find('\n').expect("its line");
    insta::assert_snapshot!("handler_traits", &code[start..end]);
}
