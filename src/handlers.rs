//! The hand-written handlers: one method of [`Operations`] per operation of the contract.
//!
//! Each handler is thin: it receives input already validated against the document and
//! typed by the generated types, calls one domain or storage function and maps the result.
//! Until storage lands every operation answers 501 `not_implemented`.

use crate::error::ApiError;
use crate::operations::{Operations, Reply, RequestContext};
use wpds_contract::types::*;

/// The service behind the operations.
#[derive(Debug, Default)]
pub struct Service {}

impl Service {
    /// A service with no storage behind it yet.
    pub fn new() -> Self {
        Service {}
    }
}

impl Operations for Service {
    async fn assign_document_type(
        &self,
        _ctx: RequestContext,
        _path: AssignDocumentTypePath,
        _body: AssignDocumentTypeRequest,
    ) -> Result<Reply<Document>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn refresh_token(
        &self,
        _ctx: RequestContext,
        _body: RefreshTokenRequest,
    ) -> Result<Reply<TokenPair>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn bulk_edit_catalog_families(
        &self,
        _ctx: RequestContext,
        _path: BulkEditCatalogFamiliesPath,
        _body: CatalogBulkEditRequest,
    ) -> Result<Reply<CatalogBulkEditResult>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn create_cross_project_report_export(
        &self,
        _ctx: RequestContext,
        _path: CreateCrossProjectReportExportPath,
        _body: CreateExportRequest,
    ) -> Result<Reply<ExportRecord>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn replace_takeoff_mappings(
        &self,
        _ctx: RequestContext,
        _path: ReplaceTakeoffMappingsPath,
        _body: ReplaceTakeoffMappingsRequest,
    ) -> Result<Reply<AssistantImport>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn retire_global_company(
        &self,
        _ctx: RequestContext,
        _path: RetireGlobalCompanyPath,
        _body: RetireCompanyRequest,
    ) -> Result<Reply<GlobalCompany>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn patch_category_settings(
        &self,
        _ctx: RequestContext,
        _path: PatchCategorySettingsPath,
        _body: PatchCategorySettingsRequest,
    ) -> Result<Reply<CategorySettingsResult>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn create_company_link(
        &self,
        _ctx: RequestContext,
        _path: CreateCompanyLinkPath,
        _body: CreateCompanyLinkRequest,
    ) -> Result<Reply<CompanyLink>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn set_own_time_log_cell(
        &self,
        _ctx: RequestContext,
        _path: SetOwnTimeLogCellPath,
        _body: SetTimeLogCellRequest,
    ) -> Result<Reply<TimeLogCellResult>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn reset_assistant_credit_allowance(
        &self,
        _ctx: RequestContext,
        _path: ResetAssistantCreditAllowancePath,
        _body: ResetCreditAllowanceRequest,
    ) -> Result<Reply<CreditResetResult>, ApiError> {
        Err(ApiError::NotImplemented)
    }

    async fn list_commercial_receipts(
        &self,
        _ctx: RequestContext,
        _path: ListCommercialReceiptsPath,
        _query: ListCommercialReceiptsQuery,
    ) -> Result<Reply<CommercialReceiptPage>, ApiError> {
        Err(ApiError::NotImplemented)
    }
}
