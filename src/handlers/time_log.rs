//! The caller's own time log (`setOwnTimeLogCell`).

use super::Service;
use crate::error::ApiError;
use crate::operations::{RequestContext, SetOwnTimeLogCellResponse, TimeLogApi};
use wpds_contract::types::*;
use wpds_storage::repos::time_log;

impl TimeLogApi for Service {
    /// `set_own_time_log_cell`.
    async fn set_own_time_log_cell(
        &self,
        ctx: RequestContext,
        path: SetOwnTimeLogCellPath,
        body: SetTimeLogCellRequest,
    ) -> Result<SetOwnTimeLogCellResponse, ApiError> {
        let workspace_id = ctx.workspace_id(&path.workspace_id)?;
        let write = time_log::CellChange::requested(workspace_id, ctx.caller()?.user_id, body);
        let entry = self.state.write(&ctx.budget, time_log::set_cell(write)).await?;
        Ok(SetOwnTimeLogCellResponse::Ok(TimeLogCellResult { entry }))
    }
}
