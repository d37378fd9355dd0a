//! The caller's own time log (`setOwnTimeLogCell`).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{RequestContext, SetOwnTimeLogCellResponse};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::time_log;

/// `set_own_time_log_cell`.
pub async fn set_own_time_log_cell(
    state: &AppState,
    ctx: RequestContext,
    path: SetOwnTimeLogCellPath,
    body: SetTimeLogCellRequest,
) -> Result<SetOwnTimeLogCellResponse, ApiError> {
    let workspace_id = record_id(&path.workspace_id, "workspace")?;
    let write = time_log::CellChange::requested(workspace_id, ctx.caller()?.user_id, body);
    let entry = state.write(&ctx.budget, time_log::set_cell(write)).await?;
    Ok(SetOwnTimeLogCellResponse::Ok(TimeLogCellResult { entry }))
}
