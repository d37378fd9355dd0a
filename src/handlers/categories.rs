//! Category settings (`patchCategorySettings`).

use super::{Service, record_id};
use crate::error::ApiError;
use crate::operations::{CategoriesApi, PatchCategorySettingsResponse, RequestContext};
use std::sync::Arc;
use wpds_contract::types::*;
use wpds_storage::ids::SentId;
use wpds_storage::repos::categories;

impl CategoriesApi for Service {
    /// Applies a settings patch to a category.
    async fn patch_category_settings(
        &self,
        ctx: RequestContext,
        path: PatchCategorySettingsPath,
        body: PatchCategorySettingsRequest,
    ) -> Result<PatchCategorySettingsResponse, ApiError> {
        let workspace_id = ctx.workspace_id(&path.workspace_id)?;
        let category_id = record_id(&path.category_id, "category")?;
        let change = categories::CategorySettingsChange {
            expected_revision: body.expected_revision,
            ops: body.ops.unwrap_or_default().into_iter().map(activation).collect(),
            product_type_codes: body
                .product_type_code_ops
                .unwrap_or_default()
                .into_iter()
                .map(|op| categories::CodeChange { id: SentId::parse(op.product_type_id), code: op.code })
                .collect(),
            category_codes: body
                .category_code_ops
                .unwrap_or_default()
                .into_iter()
                .map(|op| categories::CodeChange { id: SentId::parse(op.category_id), code: op.code })
                .collect(),
        };
        // The change is dropped here, after the write, on the thread that allocated it (a
        // patch of tens of thousands of ops is as many allocations), not on the SQLite writer's.
        let change = Arc::new(change);
        let shared = Arc::clone(&change);
        let result = self
            .state
            .write(&ctx.budget, categories::patch_settings(workspace_id, category_id, shared))
            .await;
        drop(change);
        Ok(PatchCategorySettingsResponse::Ok(result?))
    }
}

/// One item-column op of the request, its ids parsed.
fn activation(op: ItemColumnOp) -> categories::ColumnActivationChange {
    categories::ColumnActivationChange {
        product_type_id: SentId::parse(op.product_type_id),
        item_column_id: SentId::parse(op.item_column_id),
        is_active: op.is_active,
    }
}
