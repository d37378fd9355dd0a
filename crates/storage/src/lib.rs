//! diesel repositories over SQLite and PostgreSQL for every record the operations touch.
//!
//! Two parts:
//! - [`repos`], the repositories: one module per aggregate of the specification (time log,
//!   catalog, categories, …). SQL lives there and nowhere else; callers get contract types
//!   or plain values, never diesel types.
//! - [`engine`], the plumbing: pools, the SQLite writer thread, the shared PostgreSQL
//!   connections, transactions, lock waits, budgets, database spans, migrations. Its
//!   modules are private: the repositories, and the server, reach it only through the
//!   entry points [`engine`] re-exports.
//!
//! Beside them, the vocabulary both speak: the tables (`schema`, one row struct per
//! table in `models/`, named `…Row`), the errors ([`error`]), ids ([`ids`]) and times
//! ([`clock`]); the fixture loader ([`seed`]); and the defects test builds can seed on purpose
//! for the soak's checker ([`defects`]).
//!
//! Rules:
//! - One code path, two engines: [`engine::Database`] holds a pool of either engine and the
//!   `db_run!` / `db_write!` macros compile each repository body once per engine
//!   (the vaultwarden pattern), so both keep `ON CONFLICT`, `RETURNING` and their own
//!   error messages. Each engine has its own migration tree.
//! - One way in: a repository function callers use returns its work as a [`Read`] or a
//!   [`Write`], which [`Database::read`] / [`Database::write`] run within the caller's
//!   [`Budget`]. Which connection serves it (pooled, the SQLite writer, a shared PostgreSQL
//!   connection) is decided in the engine alone, by engine and configuration; callers never
//!   hold a connection. There, too, each call gets its span of the request's trace, named by
//!   the summary the repository function gives its work.
//! - Work that is one autocommit statement is an `async fn` over an
//!   `engine::StatementConn` (`db_statement!`): the same function runs on a blocking
//!   connection of either engine and, on PostgreSQL, on the shared, pipelining
//!   connections. Work of several statements stays blocking.
//! - On SQLite the server's writes run on one writer thread, in batches that commit once;
//!   on PostgreSQL a write whose common case is one statement (`engine::BatchedStatement`,
//!   the time-log write) has that case run with the writes waiting with it as one statement
//!   over arrays. Either way a write is answered only after its batch committed
//!   (`engine/batch.rs` says what a batch is on both engines).
//! - Every versioned write checks the expected version and writes in one statement or
//!   one transaction (SQLite: `BEGIN IMMEDIATE`), so two writers can never both succeed
//!   with the same expected version.
//! - Failures are [`error::StoreError`]; an unreachable database is `Unavailable`, never a
//!   panic. They say what happened in storage's own terms ([`error::Refusal`], never the
//!   contract's problem codes, which `scripts/check-layering` checks); the server maps each
//!   to its problem once. Ids are 64-bit integers served as decimal strings; an id that does not parse
//!   names no record.
//! - Timestamps are milliseconds since the Unix epoch (both engines keep them exactly).
//! - The production API is [`Read`] / [`Write`], the repositories that return them, and the
//!   engine's entry points. What only tests and the benchmark tools reach — the tables
//!   (`schema`), a raw pooled connection (`Database::conn`, `DbConn`), the engine's macros
//!   and the repository helpers that read what an operation wrote — is public only with the
//!   `test-support` feature, which `scripts/check-layering` keeps out of the server's build.
//!   Without it, every public item is one the server uses: `scripts/check-layering` reads
//!   rustdoc's JSON of the server's build of this crate and fails on a public item the server
//!   never names (nor names in what it uses). Anything else is `pub(crate)`.

pub mod clock;
pub mod defects;
pub mod engine;
pub mod error;
pub mod ids;
pub(crate) mod models;
pub mod repos;
#[cfg(feature = "test-support")]
pub mod schema;
#[cfg(not(feature = "test-support"))]
pub(crate) mod schema;
pub mod seed;
mod stored;

#[cfg(feature = "test-support")]
pub use engine::DbConn;
pub use engine::{
    Budget, Database, DbConfig, Engine, MigrationStatus, Pooler, Read, SqliteSynchronous, Write,
};
#[cfg(not(feature = "test-support"))]
pub(crate) use engine::{db_run, db_statement, db_write};
pub use error::StoreError;
