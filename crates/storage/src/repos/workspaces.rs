//! Workspaces as a whole.

use crate::db_run;
use crate::engine::Read;
use crate::schema::workspaces;
use diesel::prelude::*;

/// How many workspaces the database holds (0 for a fresh database).
pub fn count() -> Read<i64> {
    Read::new("SELECT workspaces", |conn| Ok(db_run!(conn => workspaces::table.count().get_result(conn))?))
}
