//! The `item_columns` table.

use crate::schema::item_columns;
use diesel::prelude::*;

/// An item column of a workspace, which category settings activate per product type.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = item_columns, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ItemColumnRow {
    /// The column's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The column's name.
    pub name: String,
}
