//! The `product_types` table.

use crate::schema::product_types;
use diesel::prelude::*;

/// A product type of a category.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = product_types, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ProductTypeRow {
    /// The product type's id.
    pub id: i64,
    /// The workspace of its category.
    pub workspace_id: i64,
    /// The category it belongs to.
    pub category_id: i64,
    /// The product type's name.
    pub name: String,
    /// Its code, unique among the workspace's categories and product types.
    pub code: Option<String>,
}
