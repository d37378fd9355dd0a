//! A request's time budget for the database as lock waits: how long a connection's
//! statements may wait for a lock, shortened to what is left of the request's budget.
//! Used by the pool ([`crate::engine::db`]) and the SQLite writer ([`crate::engine::writer`]).

use crate::engine::conn::DbConn;
use crate::error::StoreError;
use diesel::connection::SimpleConnection;
use std::time::Duration;

/// How far a request's lock wait may overrun its budget before the connection's lock wait
/// is shortened for it. Without it every request would shorten (a checkout always takes
/// some time) and pay two extra statements.
pub const LOCK_WAIT_SLACK: Duration = Duration::from_millis(50);

/// Whether what is `left` of a budget is short enough, against the configured `timeout`,
/// to set it as a connection's lock wait. When it is close to the configured wait,
/// changing it would cost two statements (set, restore) for a few milliseconds of
/// precision.
pub(crate) fn shortens(left: Duration, timeout: Duration) -> bool {
    left + LOCK_WAIT_SLACK < timeout
}

/// The error of work whose request has no time left for the database.
pub(crate) fn budget_spent() -> StoreError {
    StoreError::Unavailable("the request's time for the database is spent".to_owned())
}

/// Sets how long a statement of `conn` waits for a lock before failing (at least 1 ms:
/// 0 would mean "forever" on PostgreSQL).
pub(crate) fn set_lock_wait(conn: &mut DbConn, wait: Duration) -> Result<(), StoreError> {
    let millis = wait.as_millis().max(1);
    match conn {
        DbConn::Sqlite(c) => c.batch_execute(&format!("PRAGMA busy_timeout = {millis}")),
        DbConn::Postgres(c) => c.batch_execute(&format!("SET lock_timeout = {millis}")),
    }
    .map_err(StoreError::from)
}
