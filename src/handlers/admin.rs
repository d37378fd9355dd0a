//! Administrative operations (4.6, 4.10).

use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use wpds_contract::types::*;

/// `retire_global_company`: not implemented yet.
pub async fn retire_global_company(
    _state: &AppState,
    _ctx: RequestContext,
    _path: RetireGlobalCompanyPath,
    _body: RetireCompanyRequest,
) -> Result<Reply<GlobalCompany>, ApiError> {
    Err(ApiError::NotImplemented)
}

/// `reset_assistant_credit_allowance`: not implemented yet.
pub async fn reset_assistant_credit_allowance(
    _state: &AppState,
    _ctx: RequestContext,
    _path: ResetAssistantCreditAllowancePath,
    _body: ResetCreditAllowanceRequest,
) -> Result<Reply<CreditResetResult>, ApiError> {
    Err(ApiError::NotImplemented)
}
