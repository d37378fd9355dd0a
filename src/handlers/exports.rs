//! Cross-project report exports (4.4).
//!
//! `requestId` is an idempotency key per workspace: a replay of an identical request
//! answers the stored 201 body with `Idempotent-Replayed: true`. The rules live in
//! `wpds_storage::exports`.

use super::record_id;
use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use actix_web::http::header::{HeaderName, HeaderValue};
use wpds_contract::types::*;
use wpds_storage::exports;

/// The header marking a replayed answer.
const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// `create_cross_project_report_export`.
pub async fn create_cross_project_report_export(
    state: &AppState,
    ctx: RequestContext,
    path: CreateCrossProjectReportExportPath,
    body: CreateExportRequest,
) -> Result<Reply<ExportRecord>, ApiError> {
    let new = exports::NewExport {
        workspace_id: record_id(&path.workspace_id, "workspace")?,
        user_id: ctx.caller()?.user_id,
        request: body,
    };
    let created = state.write(move |conn| exports::create(conn, new)).await?;
    let mut reply = Reply::new(created.record);
    if created.replayed {
        reply.headers.push((REPLAYED, HeaderValue::from_static("true")));
    }
    Ok(reply)
}
