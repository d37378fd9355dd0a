//! diesel repositories over SQLite and PostgreSQL for every record the operations touch.
//!
//! Rules:
//! - SQL lives here and nowhere else; callers get contract types or plain values, never
//!   diesel types.
//! - One code path, two engines: [`db::Database`] holds a pool of either engine and the
//!   [`db_run!`] / [`db_write!`] macros compile each repository body once per engine
//!   (the vaultwarden pattern), so both keep `ON CONFLICT`, `RETURNING` and their own
//!   error messages. Each engine has its own migration tree.
//! - One way in: a repository function callers use returns its work as a [`Read`] or a
//!   [`Write`], which [`Database::read`] / [`Database::write`] run within the caller's
//!   [`Budget`]. Which connection serves it (pooled, the SQLite writer, a shared PostgreSQL
//!   connection) is decided in [`work`] alone, by engine and configuration; callers never
//!   hold a connection. There, too, each call gets its span of the request's trace
//!   ([`trace`]), named by the summary the repository function gives its work.
//! - Work that is one autocommit statement is an `async fn` over a
//!   [`statement::StatementConn`] ([`db_statement!`]): the same function runs on a
//!   blocking connection of either engine and, on PostgreSQL, on the shared, pipelining
//!   connections ([`shared_pg`]). Work of several statements stays blocking.
//! - On SQLite the server's writes run on one writer thread, in batches that commit once
//!   ([`writer`]); a write is answered only after its batch committed.
//! - Every versioned write checks the expected version and writes in one statement or
//!   one transaction (SQLite: `BEGIN IMMEDIATE`), so two writers can never both succeed
//!   with the same expected version.
//! - Failures are [`error::StoreError`]; an unreachable database is `Unavailable`, never a
//!   panic. They say what happened in storage's own terms ([`error::Refusal`], never the
//!   contract's problem codes, which `scripts/check-layering` checks); the server maps each
//!   to its problem once. Ids are 64-bit integers served as decimal strings; an id that does not parse
//!   names no record.
//! - Timestamps are milliseconds since the Unix epoch (both engines keep them exactly).

pub mod auth;
pub mod catalog;
pub mod categories;
pub mod clock;
pub mod companies;
pub mod conn;
pub mod contacts;
pub mod credits;
pub mod db;
pub mod documents;
pub mod error;
pub mod exports;
pub mod ids;
pub mod imports;
pub mod lock_wait;
pub mod locks;
pub(crate) mod models;
pub mod network;
pub mod rate_limits;
pub mod receipts;
pub mod schema;
pub mod secrets;
pub mod seed;
pub mod shared_pg;
pub mod statement;
mod stored;
mod suspicion;
pub mod takeoff;
pub mod throttled_log;
pub mod time_log;
pub mod trace;
pub mod work;
pub mod workspaces;
pub mod writer;

pub use db::{Database, DbConfig, DbConn, Engine, Pooler, SqliteSynchronous};
pub use error::StoreError;
pub use work::{Budget, Read, Write};
