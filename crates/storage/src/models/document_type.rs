//! The `document_types` table.

use crate::schema::document_types;
use diesel::prelude::*;

/// A document type of a workspace, applying to the documents of one scope.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = document_types, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct DocumentTypeRow {
    /// The type's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The type's name.
    pub name: String,
    /// The scope of the documents it applies to (`project`, `project_item`, `contact_company`).
    pub scope: String,
}
