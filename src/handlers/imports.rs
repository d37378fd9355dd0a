//! Assistant imports (4.5).

use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;

/// `replace_takeoff_mappings`: not implemented yet.
pub async fn replace_takeoff_mappings(
    _state: &AppState,
    _ctx: RequestContext,
    _path: ReplaceTakeoffMappingsPath,
    _body: ReplaceTakeoffMappingsRequest,
) -> Result<Reply<AssistantImport>, ApiError> {
    Err(ApiError::NotImplemented)
}
