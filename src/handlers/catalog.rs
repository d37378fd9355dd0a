//! Catalog bulk edits (`bulkEditCatalogFamilies`).

use super::Service;
use crate::error::ApiError;
use crate::operations::{BulkEditCatalogFamiliesResponse, CatalogApi, RequestContext};
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::repos::catalog;

impl CatalogApi for Service {
    /// Sets one text field on up to 500 catalog families of the workspace, all or nothing.
    async fn bulk_edit_catalog_families(
        &self,
        ctx: RequestContext,
        path: BulkEditCatalogFamiliesPath,
        body: CatalogBulkEditRequest,
    ) -> Result<BulkEditCatalogFamiliesResponse, ApiError> {
        let workspace_id = ctx.workspace_id(&path.workspace_id)?;
        let change = catalog::FamilyFieldChange {
            targets: body.targets.into_iter().map(target).collect(),
            field_key: body.field_key,
            value: body.value,
        };
        let result = self.state.write(&ctx.budget, catalog::bulk_edit(workspace_id, change)).await?;
        Ok(BulkEditCatalogFamiliesResponse::Ok(result))
    }
}

/// One target of the request, its ids parsed.
fn target(target: CatalogBulkEditTarget) -> catalog::FamilyTarget {
    catalog::FamilyTarget {
        family_id: SentId::parse(target.family_id),
        family_version: target.family_version,
        primary_item_id: target.primary_item_id.map(SentId::parse),
        primary_item_version: target.primary_item_version,
        primary_family_source_id: target.primary_family_source_id.map(SentId::parse),
        primary_family_source_version: target.primary_family_source_version,
        primary_item_source_id: target.primary_item_source_id.map(SentId::parse),
        primary_item_source_version: target.primary_item_source_version,
    }
}
