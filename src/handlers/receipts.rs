//! Commercial sync receipts (4.11).

use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;

/// `list_commercial_receipts`: not implemented yet.
pub async fn list_commercial_receipts(
    _state: &AppState,
    _ctx: RequestContext,
    _path: ListCommercialReceiptsPath,
    _query: ListCommercialReceiptsQuery,
) -> Result<Reply<CommercialReceiptPage>, ApiError> {
    Err(ApiError::NotImplemented)
}
