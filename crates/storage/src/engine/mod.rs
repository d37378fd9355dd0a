//! The engine: how work reaches a database of either engine. Its modules are private; the
//! repositories ([`crate::repos`]) and the server reach it only through what this module
//! re-exports, its entry points (public those the server uses, crate-private the rest, some
//! of them public with `test-support` for the tests and the benchmark tools):
//!
//! - [`Database`] (opened from a [`DbConfig`]), which runs a repository's [`Read`] or
//!   [`Write`] within a request's [`Budget`] and decides which connection serves it: a
//!   pooled one on the blocking threads, the SQLite writer's batch ([`Writer`]), or
//!   PostgreSQL's batch of one statement for many requests' writes or reads, on a shared,
//!   pipelining connection (`work.rs` has the table);
//! - the connections work runs on (`DbConn`, `StatementConn` for one statement) and the
//!   macros that compile a repository's diesel code once per engine (`db_run!`, `db_write!`,
//!   `db_statement!`; with the `test-support` feature, `DbConn` and the macros are public
//!   for the tests);
//! - the server's own secrets, provisioned with the migrations (`secret`);
//! - what a batch is on both engines, and the statement a batched write's common case or a
//!   batched read is (`BatchedStatement`);
//! - what the server observes: the batches ([`BatchReport`]), the shared
//!   connections' state ([`SharedState`]), the spans of database calls (`in_child_span`),
//!   a log line that repeats at most every few seconds ([`ThrottledLog`]).
//!
//! A time-log write, file by file (the batched write; every other write is steps 1, 3 and
//! 4 without the statement):
//!
//! 1. `src/handlers/time_log.rs`: the handler makes the write (`CellChange::requested`) and
//!    hands `repos::time_log::set_cell` of it to `AppState::write` with its request's budget.
//! 2. `repos/time_log.rs`, `set_cell`: a [`Write`] of two parts, the common case as a batched
//!    statement (`CurrentCellWrites`: its `key`, and `one` / `many`) and the rest
//!    (`set_cell_on`: every rule, in the contract's order, in one transaction).
//! 3. `work.rs`, [`Database::write`]: on SQLite, both parts as one job of the writer
//!    (`Staged::blocking`: `one`, then the rest if `one` did not settle it); on PostgreSQL
//!    (`Staged::batched`), a write with a `key` joins its thread's lane of that statement.
//! 4. SQLite: `writer.rs` runs the job inside its batch's transaction and answers once the
//!    batch has committed.
//! 5. PostgreSQL: `pg_batcher.rs` takes what the lane holds (`batch.rs`, `take`) and runs it
//!    (`work.rs`, `run_batch`) on a shared connection (`shared_pg.rs`) or, where there are
//!    none, a pooled one (`db.rs`, `run_batch_until`); `batch.rs`'s `statement` runs `one`
//!    for a batch of one (`CurrentWrite`, one `UPDATE`) and `many` for more
//!    (`CurrentWrites`, a call of the function `time_log_current_writes`, in
//!    `migrations/postgres/2026-11-29-000001_time_log_current_writes`).
//! 6. Back in `work.rs`: each write gets its row by its place in the batch; a write the batch
//!    did not settle (a first write, a conflict, an unknown project), or whose row it met
//!    locked, runs the rest on a pooled connection, within what is left of its budget.
//! 7. The handler gets the cell, or a [`crate::StoreError`] that `src/error.rs` maps to its
//!    problem once.
//!
//! Inside: the r2d2 pools and migrations (`db.rs`), connections and transactions
//! (`conn.rs`), the one way in (`work.rs`), what a batch is (`batch.rs`), the SQLite writer
//! thread (`writer.rs`), PostgreSQL's batcher (`pg_batcher.rs`), the shared PostgreSQL
//! connections (`shared_pg.rs`), statements on any connection
//! (`statement.rs`), lock waits within a budget (`lock_wait.rs`), network timeouts
//! (`network.rs`), the role's timeouts behind a pooler that keeps prepared statements
//! (`role_timeouts.rs`), the pool's suspicion after a failure (`suspicion.rs`), throttled logs
//! (`throttled_log.rs`), database spans (`trace.rs`), the server's secrets (`secrets.rs`).

mod batch;
mod conn;
mod db;
mod lock_wait;
mod network;
mod pg_batcher;
mod role_timeouts;
mod secrets;
mod shared_pg;
mod statement;
mod suspicion;
mod throttled_log;
mod trace;
mod work;
mod writer;

pub(crate) use batch::BatchedStatement;
pub use batch::{BatchObserver, BatchReport};
#[cfg(feature = "test-support")]
pub use conn::DbConn;
#[cfg(not(feature = "test-support"))]
pub(crate) use conn::DbConn;
pub use db::{Database, DbConfig, Engine, MigrationStatus, PoolWaitObserver, Pooler, SqliteSynchronous};
#[cfg(feature = "test-support")]
pub use secrets::{CURSOR_SIGNING, read as secret};
#[cfg(not(feature = "test-support"))]
pub(crate) use secrets::{CURSOR_SIGNING, read as secret};
pub use shared_pg::{SharedPg, SharedState};
#[cfg(feature = "test-support")]
pub use statement::{StatementConn, StatementFuture};
#[cfg(not(feature = "test-support"))]
pub(crate) use statement::{StatementConn, StatementFuture};
pub use throttled_log::ThrottledLog;
pub use work::{Budget, Read, Write};
pub use writer::Writer;
#[cfg(not(feature = "test-support"))]
pub(crate) use {conn::db_run, conn::db_write, statement::db_statement};

/// What the engine's macros expand to, so that their callers need not name it (outside this
/// crate, the tests' with the `test-support` feature). Not for direct use.
#[doc(hidden)]
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) mod macro_support {
    pub use super::conn::{DbConn, in_transaction, savepoint};
    pub use super::statement::StatementConn;
    pub use {diesel, diesel_async};
}
