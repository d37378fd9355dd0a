//! Assistant imports (`replaceTakeoffMappings`).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{ReplaceTakeoffMappingsResponse, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::imports;

/// `replace_takeoff_mappings`: replaces the takeoff mappings of an import in review.
pub async fn replace_takeoff_mappings(
    state: &AppState,
    ctx: RequestContext,
    path: ReplaceTakeoffMappingsPath,
    body: ReplaceTakeoffMappingsRequest,
) -> Result<ReplaceTakeoffMappingsResponse, ApiError> {
    let workspace_id = record_id(&path.workspace_id, "workspace")?;
    let import_id = record_id(&path.import_id, "assistant import")?;
    let change = imports::TakeoffMappingsChange {
        project_id: SentId::parse(body.project_id),
        expected_version: body.expected_version,
        grouping_level: body.grouping_level,
        area_mappings: body.area_mappings,
    };
    let import = state.write(&ctx.budget, imports::replace_takeoff(workspace_id, import_id, change)).await?;
    Ok(ReplaceTakeoffMappingsResponse::Ok(import))
}
