//! Administrative operations (`retireGlobalCompany`, `resetAssistantCreditAllowance`). The
//! pipeline has already checked that the caller is a platform administrator.

use super::record_id;
use crate::error::ApiError;
use crate::operations::{RequestContext, ResetAssistantCreditAllowanceResponse, RetireGlobalCompanyResponse};
use crate::state::AppState;
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::{companies, credits};

/// `retire_global_company`: retires a global company once, writing the audit log.
pub async fn retire_global_company(
    state: &AppState,
    ctx: RequestContext,
    path: RetireGlobalCompanyPath,
    body: RetireCompanyRequest,
) -> Result<RetireGlobalCompanyResponse, ApiError> {
    let company_id = record_id(&path.company_id, "global company")?;
    let actor = ctx.caller()?.user_id;
    let company = state.write(&ctx.budget, companies::retire(company_id, actor, body.reason)).await?;
    Ok(RetireGlobalCompanyResponse::Created(company))
}

/// `reset_assistant_credit_allowance`: sets a user's used credits of one cycle to 0.
pub async fn reset_assistant_credit_allowance(
    state: &AppState,
    ctx: RequestContext,
    path: ResetAssistantCreditAllowancePath,
    body: ResetCreditAllowanceRequest,
) -> Result<ResetAssistantCreditAllowanceResponse, ApiError> {
    let reset = credits::NewCreditReset {
        workspace_id: record_id(&path.workspace_id, "workspace")?,
        user_id: SentId::parse(body.user_id),
        cycle: body.cycle,
        reason: body.reason,
        reset_by: ctx.caller()?.user_id,
    };
    state.write(&ctx.budget, credits::reset_allowance(reset)).await?;
    Ok(ResetAssistantCreditAllowanceResponse::Ok(CreditResetResult::new()))
}
