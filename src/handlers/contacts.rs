//! Company links (`createCompanyLink`): the rules live in [`wpds_storage::repos::contacts`].

use super::Service;
use crate::error::ApiError;
use crate::operations::{ContactsApi, CreateCompanyLinkResponse, RequestContext};
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::repos::contacts;

impl ContactsApi for Service {
    /// `create_company_link`: 201 with the new link.
    async fn create_company_link(
        &self,
        ctx: RequestContext,
        path: CreateCompanyLinkPath,
        body: CreateCompanyLinkRequest,
    ) -> Result<CreateCompanyLinkResponse, ApiError> {
        let new = contacts::NewCompanyLink {
            workspace_id: ctx.workspace_id(&path.workspace_id)?,
            main_company_id: SentId::parse(body.main_company_id),
            rep_company_id: SentId::parse(body.rep_company_id),
            main_person_id: body.main_person_id.map(SentId::parse),
            rep_person_id: body.rep_person_id.map(SentId::parse),
        };
        let link = self.state.write(&ctx.budget, contacts::create_link(new)).await?;
        Ok(CreateCompanyLinkResponse::Created(link))
    }
}
