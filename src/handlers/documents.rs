//! Documents and their types (4.1).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::documents;

/// Assigns (or clears) a document's type.
pub async fn assign_document_type(
    state: &AppState,
    _ctx: RequestContext,
    path: AssignDocumentTypePath,
    body: AssignDocumentTypeRequest,
) -> Result<Reply<Document>, ApiError> {
    let workspace_id = record_id(&path.workspace_id, "workspace")?;
    let document = state
        .write(move |conn| {
            documents::assign_type(
                conn,
                workspace_id,
                &path.project_id,
                &path.document_id,
                body.type_id,
                body.expected_version,
            )
        })
        .await?;
    Ok(Reply::new(document))
}
