//! Workspaces as a whole.

use crate::db_run;
use crate::engine::DbConn;
use crate::error::StoreError;
use crate::schema::workspaces;
use diesel::prelude::*;

/// How many workspaces the database holds (0 for a fresh database).
pub fn count(conn: &mut DbConn) -> Result<i64, StoreError> {
    Ok(db_run!(conn => workspaces::table.count().get_result(conn))?)
}
