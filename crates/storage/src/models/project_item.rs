//! The `project_items` table.

use crate::schema::project_items;
use diesel::prelude::*;

/// A catalog family used in a project: it decides a bulk edit's `affectedProjectIds`.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = project_items, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ProjectItemRow {
    /// The item's id.
    pub id: i64,
    /// The project it is used in.
    pub project_id: i64,
    /// The catalog family it uses.
    pub family_id: i64,
    /// The item's name.
    pub name: String,
}
