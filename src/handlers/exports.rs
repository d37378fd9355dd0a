//! Cross-project report exports (`createCrossProjectReportExport`).
//!
//! `requestId` is an idempotency key per workspace: a replay of an identical request
//! answers the stored 201 body with `Idempotent-Replayed: true`. The rules live in
//! `wpds_storage::exports`.

use super::record_id;
use crate::error::ApiError;
use crate::operations::{CreateCrossProjectReportExportResponse, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::exports;

/// `create_cross_project_report_export`.
pub async fn create_cross_project_report_export(
    state: &AppState,
    ctx: RequestContext,
    path: CreateCrossProjectReportExportPath,
    body: CreateExportRequest,
) -> Result<CreateCrossProjectReportExportResponse, ApiError> {
    let new = exports::NewExport {
        workspace_id: record_id(&path.workspace_id, "workspace")?,
        user_id: ctx.caller()?.user_id,
        request_id: body.request_id,
        name: body.name,
        configuration: body.configuration,
    };
    let created = state.write(&ctx.budget, exports::create(new)).await?;
    Ok(CreateCrossProjectReportExportResponse::Created {
        body: created.record,
        // Absent on a first answer, as the document says: only a replay carries it.
        idempotent_replayed: created.replayed.then(|| "true".to_owned()),
    })
}
