//! The `categories` table.

use crate::schema::categories;
use diesel::prelude::*;

/// A category of a workspace, whose settings a patch changes.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = categories, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct CategoryRow {
    /// The category's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The category's name.
    pub name: String,
    /// Its code, unique among the workspace's categories and product types.
    pub code: Option<String>,
    /// The settings revision, which a patch sends back as `expectedRevision`.
    pub revision: i64,
}
