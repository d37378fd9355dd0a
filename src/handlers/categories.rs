//! Category settings (4.7).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
use std::sync::Arc;
use wpds_contract::types::*;
use wpds_storage::categories;

/// Applies a settings patch to a category.
pub async fn patch_category_settings(
    state: &AppState,
    _ctx: RequestContext,
    path: PatchCategorySettingsPath,
    body: PatchCategorySettingsRequest,
) -> Result<Reply<CategorySettingsResult>, ApiError> {
    let workspace_id = record_id(&path.workspace_id, "workspace")?;
    // The body is dropped here, after the write, on the thread that allocated it (a patch
    // of tens of thousands of ops is as many allocations), not on the SQLite writer's.
    let body = Arc::new(body);
    let shared = Arc::clone(&body);
    let result = state
        .write(move |conn| categories::patch_settings(conn, workspace_id, &path.category_id, &shared))
        .await;
    drop(body);
    Ok(Reply::new(result?))
}
