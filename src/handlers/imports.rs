//! Assistant imports (`replaceTakeoffMappings`).

use super::{Service, record_id};
use crate::error::ApiError;
use crate::operations::{AssistantApi, ReplaceTakeoffMappingsResponse, RequestContext};
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::repos::imports;

impl AssistantApi for Service {
    /// `replace_takeoff_mappings`: replaces the takeoff mappings of an import in review.
    async fn replace_takeoff_mappings(
        &self,
        ctx: RequestContext,
        path: ReplaceTakeoffMappingsPath,
        body: ReplaceTakeoffMappingsRequest,
    ) -> Result<ReplaceTakeoffMappingsResponse, ApiError> {
        let workspace_id = ctx.workspace_id(&path.workspace_id)?;
        let import_id = record_id(&path.import_id, "assistant import")?;
        let change = imports::TakeoffMappingsChange {
            project_id: SentId::parse(body.project_id),
            expected_version: body.expected_version,
            grouping_level: body.grouping_level,
            area_mappings: body.area_mappings,
        };
        let import =
            self.state.write(&ctx.budget, imports::replace_takeoff(workspace_id, import_id, change)).await?;
        Ok(ReplaceTakeoffMappingsResponse::Ok(import))
    }
}
