//! Rate-limit counters kept in the database, so that every server instance sharing it
//! counts the same requests (PostgreSQL deployments; a single SQLite instance counts in
//! memory and never comes here).
//!
//! One row per key and fixed window: each request adds one hit in one statement and reads
//! the window's total back, so two instances together admit the limit, not twice it.

use crate::db_run;
use crate::engine::DbConn;
use crate::engine::Write;
use crate::error::StoreError;
use crate::schema::rate_limit_windows;
use diesel::prelude::*;
use diesel::upsert::excluded;

/// Adds a hit for `key` in the window starting at `window_start` (seconds since the Unix
/// epoch) and returns the window's hits so far, this one included; first, when
/// `forget_before` is given, deletes the counters of windows that started before it.
pub fn hit(key: String, window_start: i64, forget_before: Option<i64>) -> Write<i64> {
    Write::new("INSERT rate_limit_windows", move |conn| {
        if let Some(before) = forget_before {
            forget_before_on(conn, before)?;
        }
        hit_on(conn, &key, window_start)
    })
}

/// One hit on `conn` (see [`hit`]).
fn hit_on(conn: &mut DbConn, key: &str, window_start: i64) -> Result<i64, StoreError> {
    Ok(db_run!(conn => diesel::insert_into(rate_limit_windows::table)
        .values((
            rate_limit_windows::key.eq(key),
            rate_limit_windows::window_start.eq(window_start),
            rate_limit_windows::hits.eq(1_i64),
        ))
        .on_conflict((rate_limit_windows::key, rate_limit_windows::window_start))
        .do_update()
        .set(rate_limit_windows::hits.eq(rate_limit_windows::hits + excluded(rate_limit_windows::hits)))
        .returning(rate_limit_windows::hits)
        .get_result(conn))?)
}

/// Deletes the counters of windows that started before `window_start`.
fn forget_before_on(conn: &mut DbConn, window_start: i64) -> Result<usize, StoreError> {
    Ok(db_run!(conn => diesel::delete(
        rate_limit_windows::table.filter(rate_limit_windows::window_start.lt(window_start))
    )
    .execute(conn))?)
}
