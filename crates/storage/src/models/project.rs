//! The `projects` table.

use crate::schema::projects;
use diesel::prelude::*;

/// A project of a workspace.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = projects, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ProjectRow {
    /// The project's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The project's name.
    pub name: String,
}
