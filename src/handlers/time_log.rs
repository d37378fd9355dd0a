//! The caller's own time log (`setOwnTimeLogCell`).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{RequestContext, SetOwnTimeLogCellResponse};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::time_log;

/// `set_own_time_log_cell`.
pub async fn set_own_time_log_cell(
    state: &AppState,
    ctx: RequestContext,
    path: SetOwnTimeLogCellPath,
    body: SetTimeLogCellRequest,
) -> Result<SetOwnTimeLogCellResponse, ApiError> {
    let write = time_log::CellChange {
        workspace_id: record_id(&path.workspace_id, "workspace")?,
        user_id: ctx.caller()?.user_id,
        project_id: SentId::parse(body.project_id),
        date: body.date,
        phase: body.phase.map_or("general", TimeLogPhase::as_str).to_owned(),
        hours: body.hours,
        expected_version: body.expected_version,
        note: body.note.unwrap_or_default(),
        billable: body.billable.unwrap_or(true),
    };
    let entry = state
        .write_first(
            write,
            |conn, write| Box::pin(time_log::set_current_cell(conn, write)),
            time_log::set_cell,
        )
        .await?;
    Ok(SetOwnTimeLogCellResponse::Ok(TimeLogCellResult { entry }))
}
