//! Project documents and their document types (`assignDocumentType`).
//!
//! A document's `documentTypes` are the workspace's document types whose scope equals the
//! document's scope, sorted numerically; its `typeId` is one of them or null.

use crate::clock::{format_millis, now_millis};
use crate::db_write;
use crate::engine::DbConn;
use crate::engine::Write;
use crate::error::{StoreError, VersionConflict};
use crate::ids::{self, SentId};
use crate::models;
use crate::schema::{document_types, documents};
use crate::stored::decode;
use diesel::prelude::*;
use wpds_contract::types::{Document, DocumentPhase, DocumentScope, DocumentSource, DocumentStatus};

/// A document's new type and the version the client saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentTypeChange {
    /// The type to assign, `None` to clear it.
    pub type_id: Option<SentId>,
    /// The document's version the client saw.
    pub expected_version: i64,
}

impl models::DocumentRow {
    /// The document as the contract shows it, with its `documentTypes`.
    fn into_document(self, document_types: Vec<String>) -> Result<Document, StoreError> {
        let id = self.id;
        let text = |s: String| serde_json::Value::String(s);
        let json = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap_or(serde_json::Value::Null);
        Ok(Document {
            id: ids::show(id),
            project_id: self.project_id.map(ids::show),
            company_id: self.company_id.map(ids::show),
            document_types,
            scope: decode::<DocumentScope>("document", id, "scope", text(self.scope))?,
            type_id: self.type_id.map(ids::show),
            source: decode::<DocumentSource>("document", id, "source", text(self.source))?,
            status: decode::<DocumentStatus>("document", id, "status", text(self.status))?,
            name: self.name,
            notes: self.notes,
            is_confidential: self.is_confidential,
            phases: decode::<Vec<DocumentPhase>>("document", id, "phases", json(&self.phases))?,
            item_ids: decode::<Vec<String>>("document", id, "itemIds", json(&self.item_ids))?,
            external_url: self.external_url,
            original_filename: self.original_filename,
            mime_type: self.mime_type,
            size_bytes: self.size_bytes,
            created_by: self.created_by.map(ids::show),
            created_at: format_millis(self.created_at),
            updated_at: format_millis(self.updated_at),
            version: self.version,
        })
    }
}

/// Sets (or clears) the type of document `document_id` of project `project_id` in
/// `workspace_id`.
///
/// Rules, in order: not found unless the document is in the path's project of the
/// workspace; 422 `type_not_applicable` for a type that is not one of its
/// `documentTypes`; `version_conflict` for a stale `expected_version`.
pub fn assign_type(
    workspace_id: i64,
    project_id: i64,
    document_id: i64,
    change: DocumentTypeChange,
) -> Write<Document> {
    Write::new("SELECT documents document_types UPDATE documents", move |conn| {
        assign_type_on(conn, workspace_id, project_id, document_id, change)
    })
}

/// [`assign_type`] on `conn`.
fn assign_type_on(
    conn: &mut DbConn,
    workspace_id: i64,
    project_id: i64,
    document_id: i64,
    change: DocumentTypeChange,
) -> Result<Document, StoreError> {
    let DocumentTypeChange { type_id, expected_version } = change;
    let not_found = || StoreError::NotFound(format!("document {document_id} in project {project_id}"));
    db_write!(conn => {
        let row: models::DocumentRow = documents::table
            .filter(documents::id.eq(document_id))
            .filter(documents::workspace_id.eq(workspace_id))
            .filter(documents::project_id.eq(project_id))
            .select(models::DocumentRow::as_select())
            .first(conn)
            .optional()?
            .ok_or_else(not_found)?;
        let mut applicable: Vec<i64> = document_types::table
            .filter(document_types::workspace_id.eq(workspace_id))
            .filter(document_types::scope.eq(&row.scope))
            .select(document_types::id)
            .load(conn)?;
        applicable.sort_unstable();
        let type_ids: Vec<String> = applicable.iter().copied().map(ids::show).collect();
        let new_type = match &type_id {
            None => None,
            Some(sent) => match sent.record().filter(|id| applicable.contains(id)) {
                Some(id) => Some(id),
                None => {
                    return Err(StoreError::rule(
                        "type_not_applicable",
                        "/typeId",
                        format!("type {sent} is not one of the document's documentTypes"),
                    ));
                }
            },
        };
        let updated: Option<models::DocumentRow> = diesel::update(
            documents::table.filter(documents::id.eq(document_id)).filter(documents::version.eq(expected_version)),
        )
        .set((
            documents::type_id.eq(new_type),
            documents::version.eq(documents::version + 1),
            documents::updated_at.eq(now_millis()),
        ))
        .returning(models::DocumentRow::as_returning())
        .get_result(conn)
        .optional()?;
        match updated {
            Some(row) => row.into_document(type_ids),
            None => {
                // Read it again: on PostgreSQL another writer may have committed since.
                let row: models::DocumentRow = documents::table
                    .filter(documents::id.eq(document_id))
                    .select(models::DocumentRow::as_select())
                    .first(conn)?;
                let current_version = row.version;
                let current = row.into_document(type_ids)?;
                Err(StoreError::VersionConflict(Box::new(VersionConflict {
                    detail: format!("The document is at version {current_version}, not {expected_version}."),
                    current_version: Some(current_version),
                    current_revision: None,
                    current: Some(serde_json::to_value(&current).map_err(|e| StoreError::Internal(e.to_string()))?),
                    conflicts: None,
                })))
            }
        }
    })
}
