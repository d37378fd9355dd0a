//! The hand-written handlers: [`Operations`] implemented by [`Service`], one controller
//! module per resource.
//!
//! The trait (generated from the document by `build.rs`) fixes every handler's name and
//! types. Each method here only hands the typed, validated input to its controller; the
//! controllers stay thin: call one storage function and map the result.

mod admin;
mod auth;
mod catalog;
mod categories;
mod contacts;
mod documents;
mod exports;
mod imports;
mod receipts;
mod time_log;

use crate::error::ApiError;
use crate::operations::*;
use crate::state::AppState;
use wpds_contract::types::*;

/// The service behind the operations.
pub struct Service {
    state: AppState,
}

impl Service {
    /// The service over `state`.
    pub fn new(state: AppState) -> Self {
        Service { state }
    }
}

/// The id a path segment names; a segment that cannot name a record is 404.
pub(crate) fn record_id(segment: &str, what: &str) -> Result<i64, ApiError> {
    wpds_storage::ids::parse(segment).ok_or_else(|| ApiError::NotFound(format!("No {what} {segment} here.")))
}

impl Operations for Service {
    async fn assign_document_type(
        &self,
        ctx: RequestContext,
        path: AssignDocumentTypePath,
        body: AssignDocumentTypeRequest,
    ) -> Result<AssignDocumentTypeResponse, ApiError> {
        documents::assign_document_type(&self.state, ctx, path, body).await
    }

    async fn refresh_token(
        &self,
        ctx: RequestContext,
        body: RefreshTokenRequest,
    ) -> Result<RefreshTokenResponse, ApiError> {
        auth::refresh_token(&self.state, ctx, body).await
    }

    async fn bulk_edit_catalog_families(
        &self,
        ctx: RequestContext,
        path: BulkEditCatalogFamiliesPath,
        body: CatalogBulkEditRequest,
    ) -> Result<BulkEditCatalogFamiliesResponse, ApiError> {
        catalog::bulk_edit_catalog_families(&self.state, ctx, path, body).await
    }

    async fn create_cross_project_report_export(
        &self,
        ctx: RequestContext,
        path: CreateCrossProjectReportExportPath,
        body: CreateExportRequest,
    ) -> Result<CreateCrossProjectReportExportResponse, ApiError> {
        exports::create_cross_project_report_export(&self.state, ctx, path, body).await
    }

    async fn replace_takeoff_mappings(
        &self,
        ctx: RequestContext,
        path: ReplaceTakeoffMappingsPath,
        body: ReplaceTakeoffMappingsRequest,
    ) -> Result<ReplaceTakeoffMappingsResponse, ApiError> {
        imports::replace_takeoff_mappings(&self.state, ctx, path, body).await
    }

    async fn retire_global_company(
        &self,
        ctx: RequestContext,
        path: RetireGlobalCompanyPath,
        body: RetireCompanyRequest,
    ) -> Result<RetireGlobalCompanyResponse, ApiError> {
        admin::retire_global_company(&self.state, ctx, path, body).await
    }

    async fn patch_category_settings(
        &self,
        ctx: RequestContext,
        path: PatchCategorySettingsPath,
        body: PatchCategorySettingsRequest,
    ) -> Result<PatchCategorySettingsResponse, ApiError> {
        categories::patch_category_settings(&self.state, ctx, path, body).await
    }

    async fn create_company_link(
        &self,
        ctx: RequestContext,
        path: CreateCompanyLinkPath,
        body: CreateCompanyLinkRequest,
    ) -> Result<CreateCompanyLinkResponse, ApiError> {
        contacts::create_company_link(&self.state, ctx, path, body).await
    }

    async fn set_own_time_log_cell(
        &self,
        ctx: RequestContext,
        path: SetOwnTimeLogCellPath,
        body: SetTimeLogCellRequest,
    ) -> Result<SetOwnTimeLogCellResponse, ApiError> {
        time_log::set_own_time_log_cell(&self.state, ctx, path, body).await
    }

    async fn reset_assistant_credit_allowance(
        &self,
        ctx: RequestContext,
        path: ResetAssistantCreditAllowancePath,
        body: ResetCreditAllowanceRequest,
    ) -> Result<ResetAssistantCreditAllowanceResponse, ApiError> {
        admin::reset_assistant_credit_allowance(&self.state, ctx, path, body).await
    }

    async fn list_commercial_receipts(
        &self,
        ctx: RequestContext,
        path: ListCommercialReceiptsPath,
        query: ListCommercialReceiptsQuery,
    ) -> Result<ListCommercialReceiptsResponse, ApiError> {
        receipts::list_commercial_receipts(&self.state, ctx, path, query).await
    }
}
