//! A database connection of either engine, and how work runs on it: `db_run!`
//! binds the concrete connection, `db_write!` wraps work in a write transaction,
//! or in a savepoint when the connection it is given is in a transaction already (a batch
//! of the SQLite writer, [`crate::engine::writer`]; a unit of work behind a transaction pooler,
//! [`crate::engine::db::Database::run_until`]).
//!
//! This module sits below both the pool ([`crate::engine::db`]) and the writer: it knows neither.

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, PooledConnection};
use diesel::sqlite::SqliteConnection;

/// A pooled connection of either engine; use it through `db_run!` or
/// `db_write!`.
pub enum DbConn {
    /// SQLite.
    Sqlite(PooledConnection<ConnectionManager<SqliteConnection>>),
    /// PostgreSQL.
    Postgres(PooledConnection<ConnectionManager<PgConnection>>),
}

/// Runs `$body` with `$conn` (a `&mut DbConn`) rebound to the concrete connection of the
/// engine in use. The body is compiled once per engine.
#[cfg_attr(feature = "test-support", macro_export)]
macro_rules! db_run {
    ($conn:ident => $body:expr) => {
        match $conn {
            $crate::engine::macro_support::DbConn::Sqlite($conn) => {
                let $conn: &mut ::diesel::sqlite::SqliteConnection = &mut *$conn;
                $body
            }
            $crate::engine::macro_support::DbConn::Postgres($conn) => {
                let $conn: &mut ::diesel::pg::PgConnection = &mut *$conn;
                $body
            }
        }
    };
}
#[cfg(not(feature = "test-support"))]
pub(crate) use db_run;

/// Runs `$body` in a write transaction (`BEGIN IMMEDIATE` on SQLite, so the writer lock is
/// taken up front and waits `busy_timeout` instead of failing half-way). On a connection
/// that is in a transaction already it is a savepoint of it: on SQLite that is a batch of
/// the `writer`, which holds the lock already.
/// `$body` returns `Result<_, StoreError>`; an `Err` rolls back.
#[cfg_attr(feature = "test-support", macro_export)]
macro_rules! db_write {
    ($conn:ident => $body:expr) => {
        match $conn {
            $crate::engine::macro_support::DbConn::Sqlite(pooled) => {
                let concrete: &mut ::diesel::sqlite::SqliteConnection = &mut *pooled;
                if $crate::engine::macro_support::in_transaction(concrete) {
                    $crate::engine::macro_support::savepoint(
                        concrete,
                        |$conn: &mut ::diesel::sqlite::SqliteConnection| $body,
                    )
                } else {
                    concrete.immediate_transaction(|$conn: &mut ::diesel::sqlite::SqliteConnection| $body)
                }
            }
            $crate::engine::macro_support::DbConn::Postgres(pooled) => {
                let concrete: &mut ::diesel::pg::PgConnection = &mut *pooled;
                concrete.transaction(|$conn: &mut ::diesel::pg::PgConnection| $body)
            }
        }
    };
}
#[cfg(not(feature = "test-support"))]
pub(crate) use db_write;

/// Whether `conn` is in a transaction (as diesel keeps count; one in error counts too): then
/// `db_write!` opens a savepoint instead of `BEGIN IMMEDIATE`.
#[doc(hidden)]
pub fn in_transaction(conn: &mut SqliteConnection) -> bool {
    !matches!(AnsiTransactionManager::transaction_manager_status_mut(conn).transaction_depth(), Ok(None))
}

/// Runs `body` in a savepoint of the open batch (for `db_write!`); an `Err` rolls
/// the savepoint back. On a full disk or an I/O error SQLite rolls the whole transaction
/// back by itself, so the savepoint is gone too: then the body's error (the cause) is the
/// answer, where diesel's own `transaction` would answer with the failed rollback, and the
/// batch ends with it (see `Batcher::batch` in [`crate::engine::writer`]).
#[doc(hidden)]
pub fn savepoint<T, E>(
    conn: &mut SqliteConnection,
    body: impl FnOnce(&mut SqliteConnection) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<diesel::result::Error>,
{
    AnsiTransactionManager::begin_transaction(conn)?;
    match body(conn) {
        Ok(value) => {
            AnsiTransactionManager::commit_transaction(conn)?;
            Ok(value)
        }
        Err(error) => match AnsiTransactionManager::rollback_transaction(conn) {
            Ok(()) => Err(error),
            Err(_) if !transaction_open(conn) => Err(error),
            Err(rollback) => Err(rollback.into()),
        },
    }
}

/// Whether diesel sees a transaction open on `conn` (it notices when SQLite ended one by
/// itself). `is_broken` is exactly that for a pool: an open or failed transaction.
pub(crate) fn transaction_open(conn: &mut SqliteConnection) -> bool {
    diesel::r2d2::R2D2Connection::is_broken(conn)
}
