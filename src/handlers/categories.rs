//! Category settings (4.7).

use super::record_id;
use crate::error::ApiError;
use crate::operations::{Reply, RequestContext};
use crate::state::AppState;
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
    let result = state
        .write(move |conn| categories::patch_settings(conn, workspace_id, &path.category_id, body))
        .await?;
    Ok(Reply::new(result))
}
