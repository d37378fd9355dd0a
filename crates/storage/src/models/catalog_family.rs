//! The `catalog_families` table.

use crate::schema::catalog_families;
use diesel::prelude::*;

/// A catalog family of a workspace: the target of catalog bulk edits.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = catalog_families, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct CatalogFamilyRow {
    /// The family's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The parent family, or `None` for a top-level family.
    pub parent_family_id: Option<i64>,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Brand.
    pub brand: String,
    /// Model number.
    pub model_number: String,
    /// Finish.
    pub finish: String,
    /// Material.
    pub material: String,
    /// Lead time.
    pub lead_time: String,
    /// Notes.
    pub notes: String,
    /// The primary item, if any.
    pub primary_item_id: Option<i64>,
    /// The primary item's version (set with `primary_item_id`).
    pub primary_item_version: Option<i64>,
    /// The primary family source, if any.
    pub primary_family_source_id: Option<i64>,
    /// The primary family source's version (set with its id).
    pub primary_family_source_version: Option<i64>,
    /// The primary item source, if any.
    pub primary_item_source_id: Option<i64>,
    /// The primary item source's version (set with its id).
    pub primary_item_source_version: Option<i64>,
    /// Optimistic-concurrency counter: every bulk edit naming the family raises it by 1.
    pub version: i64,
}
