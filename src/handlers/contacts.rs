//! Company links (4.8).

use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;

/// `create_company_link`: not implemented yet.
pub async fn create_company_link(
    _state: &AppState,
    _ctx: RequestContext,
    _path: CreateCompanyLinkPath,
    _body: CreateCompanyLinkRequest,
) -> Result<Reply<CompanyLink>, ApiError> {
    Err(ApiError::NotImplemented)
}
