//! Row locks that keep check-then-write sequences race-free on PostgreSQL.
//!
//! On SQLite every write transaction starts with `BEGIN IMMEDIATE` and so already holds the
//! database's only writer lock: the methods do nothing. On PostgreSQL (READ COMMITTED) they
//! take `SELECT … FOR UPDATE` locks, always in ascending id order so two transactions never
//! wait on each other in opposite orders. A second transaction locking the same rows waits
//! until the first commits, then sees its writes.

use crate::error::StoreError;
use crate::schema::{contact_companies, workspaces};
use diesel::prelude::*;

/// Locks taken inside a write transaction (`db_write!`), implemented for both engines.
pub trait RowLocks {
    /// Locks the contact companies `ids`; ids naming no company are ignored.
    fn lock_companies(&mut self, ids: &[i64]) -> Result<(), StoreError>;

    /// Locks workspace `id`, serialising writes whose rules span the whole workspace
    /// (codes unique across its product types and categories).
    fn lock_workspace(&mut self, id: i64) -> Result<(), StoreError>;
}

impl RowLocks for diesel::sqlite::SqliteConnection {
    fn lock_companies(&mut self, _ids: &[i64]) -> Result<(), StoreError> {
        Ok(())
    }

    fn lock_workspace(&mut self, _id: i64) -> Result<(), StoreError> {
        Ok(())
    }
}

impl RowLocks for diesel::pg::PgConnection {
    fn lock_companies(&mut self, ids: &[i64]) -> Result<(), StoreError> {
        contact_companies::table
            .filter(contact_companies::id.eq_any(ids))
            .order(contact_companies::id)
            .select(contact_companies::id)
            .for_update()
            .load::<i64>(self)?;
        Ok(())
    }

    fn lock_workspace(&mut self, id: i64) -> Result<(), StoreError> {
        workspaces::table
            .filter(workspaces::id.eq(id))
            .select(workspaces::id)
            .for_update()
            .load::<i64>(self)?;
        Ok(())
    }
}
