//! The `documents` table. Lists are JSON text; timestamps milliseconds since the epoch.

use crate::schema::documents;
use diesel::prelude::*;

/// A project document.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = documents, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct DocumentRow {
    /// The document's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The project, or `None` for a document outside any project.
    pub project_id: Option<i64>,
    /// The company a `contact_company` document belongs to.
    pub company_id: Option<i64>,
    /// The scope (`project`, `project_item`, `contact_company`): which document types apply.
    pub scope: String,
    /// The assigned document type, if any.
    pub type_id: Option<i64>,
    /// `file` or `link`.
    pub source: String,
    /// `pending` or `ready`.
    pub status: String,
    /// The document's name.
    pub name: String,
    /// Free-form notes.
    pub notes: String,
    /// Whether the document is confidential.
    pub is_confidential: bool,
    /// The design phases, a JSON list of their wire values.
    pub phases: String,
    /// The project items it is attached to, a JSON list of id strings.
    pub item_ids: String,
    /// The target of a `link` document.
    pub external_url: Option<String>,
    /// The uploaded file's name.
    pub original_filename: Option<String>,
    /// The uploaded file's media type.
    pub mime_type: Option<String>,
    /// The uploaded file's size.
    pub size_bytes: Option<i64>,
    /// The user who created it, if known.
    pub created_by: Option<i64>,
    /// When it was created (ms since the epoch).
    pub created_at: i64,
    /// When it last changed (ms since the epoch).
    pub updated_at: i64,
    /// Optimistic-concurrency counter: starts at 1, every accepted write raises it by 1.
    pub version: i64,
}
