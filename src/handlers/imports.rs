//! Assistant imports (4.5).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::imports;

/// `replace_takeoff_mappings`: replaces the takeoff mappings of an import in review.
pub async fn replace_takeoff_mappings(
    state: &AppState,
    _ctx: RequestContext,
    path: ReplaceTakeoffMappingsPath,
    body: ReplaceTakeoffMappingsRequest,
) -> Result<Reply<AssistantImport>, ApiError> {
    let workspace_id = record_id(&path.workspace_id, "workspace")?;
    let import_id = record_id(&path.import_id, "assistant import")?;
    let import =
        state.write(move |conn| imports::replace_takeoff(conn, workspace_id, import_id, body)).await?;
    Ok(Reply::new(import))
}
