//! Work that is one statement in its own implicit transaction (autocommit): written once,
//! run on any connection — a blocking one of either engine, or one of the shared,
//! pipelining PostgreSQL connections ([`crate::engine::shared_pg`]).
//!
//! Such a repository function is an `async fn` taking a [`StatementConn`] and running its
//! one statement through `db_statement!`, which compiles the statement once per
//! kind of connection. On a blocking connection the function never waits for anything but
//! the database call itself, so [`ready`] runs it to completion on the calling thread
//! (inside `db_run!` or `db_write!` work, say). On a shared connection it
//! is awaited: the statement is sent while other requests' statements are in flight on the
//! same connection, and no thread sleeps while the database works.
//!
//! Only single statements belong here: a shared connection is never in a transaction, so
//! work of several statements that must see one state, or write together, stays on a
//! blocking connection (`db_write!`).

use crate::engine::conn::DbConn;
use crate::error::StoreError;
use diesel::pg::PgConnection;
use diesel::sqlite::SqliteConnection;
use diesel_async::AsyncPgConnection;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A connection one autocommit statement can run on.
pub enum StatementConn<'a> {
    /// A blocking SQLite connection.
    Sqlite(&'a mut SqliteConnection),
    /// A blocking PostgreSQL connection.
    Postgres(&'a mut PgConnection),
    /// A shared PostgreSQL connection: other requests' statements pipeline beside this one.
    Shared(&'a AsyncPgConnection),
}

/// The boxed future of a statement function, as the server hands it to a connection.
pub type StatementFuture<'c, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'c>>;

impl DbConn {
    /// This blocking connection, for a statement function.
    pub fn statement(&mut self) -> StatementConn<'_> {
        match self {
            DbConn::Sqlite(pooled) => StatementConn::Sqlite(&mut *pooled),
            DbConn::Postgres(pooled) => StatementConn::Postgres(&mut *pooled),
        }
    }
}

/// Runs `$query` (an expression building a diesel query, evaluated once in the arm of the
/// connection in use) with `RunQueryDsl::$method` (`::<$row>` when given) on `$conn` (a
/// [`StatementConn`]); awaited on a shared connection. Use inside an `async fn`.
#[cfg_attr(feature = "test-support", macro_export)]
macro_rules! db_statement {
    ($conn:expr, $query:expr, $method:ident $(::<$row:ty>)?) => {
        match $conn {
            $crate::engine::macro_support::StatementConn::Sqlite(conn) => {
                $crate::engine::macro_support::diesel::RunQueryDsl::$method$(::<$row>)?($query, conn)
            }
            $crate::engine::macro_support::StatementConn::Postgres(conn) => {
                $crate::engine::macro_support::diesel::RunQueryDsl::$method$(::<$row>)?($query, conn)
            }
            $crate::engine::macro_support::StatementConn::Shared(conn) => {
                $crate::engine::macro_support::diesel_async::RunQueryDsl::$method$(::<$row>)?($query, &mut &*conn).await
            }
        }
    };
}
#[cfg(not(feature = "test-support"))]
pub(crate) use db_statement;

/// Runs a statement function's future on a blocking connection to its end, on this thread.
/// Such a future never waits on anything but its (blocking) database call, so it is done
/// at its first poll; one that is not is a defect, reported as `Internal`, never a hang.
pub fn ready<T>(work: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    let mut work = std::pin::pin!(work);
    match work.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => Err(StoreError::Internal(
            "a statement on a blocking connection waited for something else".to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_answers_a_finished_future_and_refuses_one_that_waits() {
        assert_eq!(ready(async { Ok::<_, StoreError>(7) }).ok(), Some(7));
        let waits = std::future::pending::<Result<(), StoreError>>();
        assert!(matches!(ready(waits), Err(StoreError::Internal(_))));
    }
}
