//! Catalog bulk edits (4.3).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::catalog;

/// Sets one text field on up to 500 catalog families of the workspace, all or nothing.
pub async fn bulk_edit_catalog_families(
    state: &AppState,
    _ctx: RequestContext,
    path: BulkEditCatalogFamiliesPath,
    body: CatalogBulkEditRequest,
) -> Result<Reply<CatalogBulkEditResult>, ApiError> {
    let workspace_id = record_id(&path.workspace_id, "workspace")?;
    let result = state.write(move |conn| catalog::bulk_edit(conn, workspace_id, body)).await?;
    Ok(Reply::new(result))
}
