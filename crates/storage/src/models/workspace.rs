//! The `workspaces` table.

use crate::schema::workspaces;
use diesel::prelude::*;

/// A workspace.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = workspaces, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct WorkspaceRow {
    /// The workspace's id.
    pub id: i64,
    /// The workspace's name.
    pub name: String,
}
