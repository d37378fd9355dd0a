//! Catalog bulk edits (4.3).

use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;

/// `bulk_edit_catalog_families`: not implemented yet.
pub async fn bulk_edit_catalog_families(
    _state: &AppState,
    _ctx: RequestContext,
    _path: BulkEditCatalogFamiliesPath,
    _body: CatalogBulkEditRequest,
) -> Result<Reply<CatalogBulkEditResult>, ApiError> {
    Err(ApiError::NotImplemented)
}
