//! PostgreSQL bounds every statement of a pooled connection by the configured database
//! timeout, so a statement that runs long cannot hold its connection and its locks past
//! any request's budget. Runs when `TEST_DATABASE_URL` names a PostgreSQL server (SQLite
//! has no statement timeout: its one writer is bounded by the jobs' deadlines).

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use diesel::RunQueryDsl;
use std::time::{Duration, Instant};
use support::require_postgres;
use wpds_storage::{Database, DbConfig, DbConn, StoreError};

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn a_statement_running_past_the_database_timeout_is_cancelled_as_unavailable() {
    // Arrange: a timeout of 300 ms (no tables are needed: the server's own database will do).
    let url = require_postgres();
    let timeout = Duration::from_millis(300);
    let config = DbConfig { url, pool_size: 1, timeout, ..DbConfig::default() };
    let db = Database::connect(&config).expect("PostgreSQL is reachable");
    let DbConn::Postgres(mut conn) = db.conn().expect("a connection") else {
        unreachable!("a PostgreSQL URL")
    };

    // Act: a statement that would run for 10 s.
    let started = Instant::now();
    let result = diesel::sql_query("SELECT pg_sleep(10)").execute(&mut *conn).map_err(StoreError::from);
    let took = started.elapsed();

    // Assert
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    assert!(took >= timeout && took < Duration::from_secs(2), "cancelled after {took:?}");
}
