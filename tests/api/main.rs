//! Black-box tests of the running server: each test starts the real application on a
//! random port and talks HTTP to it. Every response any test receives is checked against
//! the document (declared status, media type and schema) by `support`.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

/// The server binary's allocator (`src/main.rs`), so that the server started in this
/// process costs what the binary costs: with the system allocator, requests of a few
/// megabytes paid for fresh pages each time, and timings (`categories.rs`) measured that.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod admin;
mod auth;
mod backup;
mod catalog;
mod categories;
mod cli;
mod compression;
mod contacts;
mod cors;
#[path = "../common/database.rs"]
mod database;
mod demo;
mod documents;
mod exports;
mod failure_statuses;
mod hostile_input;
mod http_errors;
mod imports;
mod migration_step;
mod precedence;
mod problem_snapshots;
mod process;
mod published_document;
mod receipts;
mod request_validation;
mod support;
mod time_log;
mod token_revoke;
