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
//!
//! trybuild checks the dependency graph in its own target directory (`target/tests/trybuild`)
//! with its own flags, and adds `--diagnostic-width=140` to the cases' build only: cargo
//! fingerprints the flags, so every dependency was checked twice, 317 s of a cold run on two
//! cores. The test gives both of trybuild's builds the cases' flags through
//! `CARGO_ENCODED_RUSTFLAGS`, which cargo prefers to the `--config` trybuild passes, and the
//! dependencies are checked once: 170 s.

/// trybuild's flags for the cases' build (its `rustflags.rs` and `cargo.rs`, 1.0.122), given to
/// its dependency build too.
const TRYBUILD_RUSTFLAGS: [&str; 6] =
    ["--cfg", "trybuild", "--verbose", "-A", "dead_code", "--diagnostic-width=140"];

#[test]
fn a_handler_that_drifts_from_the_document_does_not_compile() {
    // SAFETY: this binary's only test sets the variable before trybuild starts any process
    // or thread; nothing reads the environment concurrently.
    unsafe { std::env::set_var("CARGO_ENCODED_RUSTFLAGS", TRYBUILD_RUSTFLAGS.join("\x1f")) };
    trybuild::TestCases::new().compile_fail("tests/handler_contract/*.rs");
}
