//! Commercial sync receipts (`listCommercialReceipts`): the listing and its cursors live in
//! [`wpds_storage::repos::receipts`]; a cursor this server did not issue for the listing is 400.

use super::{Service, record_id};
use crate::error::ApiError;
use crate::operations::{ListCommercialReceiptsResponse, RequestContext, SyncUpdatesApi};
use wpds_contract::types::*;
use wpds_storage::repos::receipts;

/// The page size when the request names none.
const DEFAULT_LIMIT: i64 = 25;

impl SyncUpdatesApi for Service {
    /// `list_commercial_receipts`: 200 with one page.
    async fn list_commercial_receipts(
        &self,
        ctx: RequestContext,
        path: ListCommercialReceiptsPath,
        query: ListCommercialReceiptsQuery,
    ) -> Result<ListCommercialReceiptsResponse, ApiError> {
        let listing = receipts::Listing {
            workspace_id: ctx.workspace_id(&path.workspace_id)?,
            project_id: record_id(&path.project_id, "project")?,
            outcome: query.outcome.map(|o| o.as_str().to_owned()),
            limit: query.limit.unwrap_or(DEFAULT_LIMIT),
            cursor: query.cursor,
        };
        let page = self.state.read(&ctx.budget, receipts::list(listing)).await?.map_err(
            |receipts::ForeignCursor| {
                ApiError::Validation(
                    vec![ProblemError::new(
                        ProblemErrorIn::Query,
                        "cursor",
                        "format",
                        "not a cursor this server issued for this listing",
                    )]
                    .into(),
                )
            },
        )?;
        Ok(ListCommercialReceiptsResponse::Ok(page))
    }
}
