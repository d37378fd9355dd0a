//! The handlers are tied to `openapi/openapi.yaml` by the build: each case in
//! `tests/handler_contract/` is a handler that drifted from the document, and must fail to
//! compile with the compiler's error naming the operation (the expected output beside each
//! case, `*.stderr`). All cases compile in one trybuild build.
//!
//! What the build generates from the document (the traits' signatures) is a snapshot in
//! `crates/codegen/tests/signatures.rs`; what the generator refuses (an operation without
//! its own `security`, an unknown role, no tag) is in `crates/codegen/tests/growth.rs`. To
//! accept a changed message: `TRYBUILD=overwrite cargo test --test handler_contract`, then
//! read `git diff`.

#[test]
fn a_handler_that_drifts_from_the_document_does_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/handler_contract/*.rs");
}
