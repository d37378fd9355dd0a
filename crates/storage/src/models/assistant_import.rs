//! The `assistant_imports` table. Sub-objects are JSON text; the issue counts and
//! `publishable` are derived from the takeoff and kept with it.

use crate::schema::assistant_imports;
use diesel::prelude::*;

/// An assistant data import.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = assistant_imports, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct AssistantImportRow {
    /// The import's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// `project_items` or `takeoff`: only takeoff imports have takeoff mappings.
    pub kind: String,
    /// The import's status (`review`, …): only an import in review accepts new mappings.
    pub status: String,
    /// What it publishes into (`project`).
    pub target_kind: String,
    /// The project it publishes into.
    pub target_project_id: i64,
    /// Optimistic-concurrency counter: every accepted write raises it by 1.
    pub version: i64,
    /// How often it was analysed.
    pub analysis_revision: i64,
    /// The assistant conversation, a JSON object.
    pub conversation: String,
    /// The uploaded source document, a JSON object.
    pub document: String,
    /// The analysis progress, a JSON object.
    pub progress: String,
    /// The takeoff (grouping level, source keys, area mappings), a JSON object.
    pub takeoff: String,
    /// A JSON object kept as it is.
    pub source_selection: String,
    /// A JSON object kept as it is.
    pub column_mappings: String,
    /// A JSON object kept as it is.
    pub value_mappings: String,
    /// A JSON object kept as it is.
    pub review_draft: String,
    /// A JSON object kept as it is.
    pub publish_result: String,
    /// A JSON object kept as it is.
    pub source_snapshot: String,
    /// Takeoff mappings naming an area the target project lacks.
    pub blocking_issues: i64,
    /// Source keys left unmapped.
    pub warning_issues: i64,
    /// Whether there is no blocking issue.
    pub publishable: bool,
    /// When it was created (ms since the epoch).
    pub created_at: i64,
    /// When it last changed (ms since the epoch).
    pub updated_at: i64,
}
