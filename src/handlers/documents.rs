//! Documents and their types (`assignDocumentType`).

use super::Service;
use crate::error::ApiError;
use crate::operations::{AssignDocumentTypeResponse, DocumentsApi, RequestContext};
use wpds_contract::types::*;
use wpds_storage::ids::{self, SentId};
use wpds_storage::repos::documents;

impl DocumentsApi for Service {
    /// Assigns (or clears) a document's type.
    async fn assign_document_type(
        &self,
        ctx: RequestContext,
        path: AssignDocumentTypePath,
        body: AssignDocumentTypeRequest,
    ) -> Result<AssignDocumentTypeResponse, ApiError> {
        let workspace_id = ctx.workspace_id(&path.workspace_id)?;
        let (Some(project_id), Some(document_id)) =
            (ids::parse(&path.project_id), ids::parse(&path.document_id))
        else {
            // The same answer as for a document that is not in the project.
            return Err(ApiError::NotFound(format!(
                "No document {} in project {} here.",
                path.document_id, path.project_id
            )));
        };
        let change = documents::DocumentTypeChange {
            type_id: body.type_id.map(SentId::parse),
            expected_version: body.expected_version,
        };
        let document = self
            .state
            .write(&ctx.budget, documents::assign_type(workspace_id, project_id, document_id, change))
            .await?;
        Ok(AssignDocumentTypeResponse::Ok(document))
    }
}
