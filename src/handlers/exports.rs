//! Cross-project report exports (4.4).

use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;

/// `create_cross_project_report_export`: not implemented yet.
pub async fn create_cross_project_report_export(
    _state: &AppState,
    _ctx: RequestContext,
    _path: CreateCrossProjectReportExportPath,
    _body: CreateExportRequest,
) -> Result<Reply<ExportRecord>, ApiError> {
    Err(ApiError::NotImplemented)
}
