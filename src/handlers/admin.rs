//! Administrative operations (`retireGlobalCompany`, `resetAssistantCreditAllowance`). The
//! pipeline has already checked that the caller is a platform administrator.

use super::{Service, record_id};
use crate::error::ApiError;
use crate::operations::{
    AdministrationApi, RequestContext, ResetAssistantCreditAllowanceResponse, RetireGlobalCompanyResponse,
};
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::repos::{companies, credits};

impl AdministrationApi for Service {
    /// `retire_global_company`: retires a global company once, writing the audit log.
    async fn retire_global_company(
        &self,
        ctx: RequestContext,
        path: RetireGlobalCompanyPath,
        body: RetireCompanyRequest,
    ) -> Result<RetireGlobalCompanyResponse, ApiError> {
        let company_id = record_id(&path.company_id, "global company")?;
        let actor = ctx.caller()?.user_id;
        let company =
            self.state.write(&ctx.budget, companies::retire(company_id, actor, body.reason)).await?;
        Ok(RetireGlobalCompanyResponse::Created(company))
    }

    /// `reset_assistant_credit_allowance`: sets a user's used credits of one cycle to 0.
    async fn reset_assistant_credit_allowance(
        &self,
        ctx: RequestContext,
        path: ResetAssistantCreditAllowancePath,
        body: ResetCreditAllowanceRequest,
    ) -> Result<ResetAssistantCreditAllowanceResponse, ApiError> {
        let reset = credits::NewCreditReset {
            workspace_id: ctx.workspace_id(&path.workspace_id)?,
            user_id: SentId::parse(body.user_id),
            cycle: body.cycle,
            reason: body.reason,
            reset_by: ctx.caller()?.user_id,
        };
        self.state.write(&ctx.budget, credits::reset_allowance(reset)).await?;
        Ok(ResetAssistantCreditAllowanceResponse::Ok(CreditResetResult::new()))
    }
}
