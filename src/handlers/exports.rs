//! Cross-project report exports (`createCrossProjectReportExport`).
//!
//! `requestId` is an idempotency key per workspace: a replay of an identical request
//! answers the stored 201 body with `Idempotent-Replayed: true`. The rules live in
//! `wpds_storage::repos::exports`.

use super::Service;
use crate::error::ApiError;
use crate::operations::{CreateCrossProjectReportExportResponse, ReportsApi, RequestContext};
use wpds_contract::types::*;
use wpds_storage::repos::exports;

impl ReportsApi for Service {
    /// `create_cross_project_report_export`.
    async fn create_cross_project_report_export(
        &self,
        ctx: RequestContext,
        path: CreateCrossProjectReportExportPath,
        body: CreateExportRequest,
    ) -> Result<CreateCrossProjectReportExportResponse, ApiError> {
        let new = exports::NewExport {
            workspace_id: ctx.workspace_id(&path.workspace_id)?,
            user_id: ctx.caller()?.user_id,
            request_id: body.request_id,
            name: body.name,
            configuration: body.configuration,
        };
        let created = self.state.write(&ctx.budget, exports::create(new)).await?;
        Ok(CreateCrossProjectReportExportResponse::Created {
            body: created.record,
            // Absent on a first answer, as the document says: only a replay carries it.
            idempotent_replayed: created.replayed.then(|| "true".to_owned()),
        })
    }
}
