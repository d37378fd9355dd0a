//! The `product_type_columns` table, keyed by (product type, item column).

use crate::schema::product_type_columns;
use diesel::prelude::*;

/// Whether an item column is active for a product type; a pair without a row is inactive.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = product_type_columns, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ProductTypeColumnRow {
    /// The product type.
    pub product_type_id: i64,
    /// The item column.
    pub item_column_id: i64,
    /// Whether the column is active for the product type.
    pub is_active: bool,
}
