//! Who is calling, and may they: the 401 and 403 steps of the pipeline.
//!
//! Operations the document secures need `Authorization: Bearer <access token>` naming a
//! known, unexpired, unrevoked token (401 `unauthenticated` otherwise, with
//! `WWW-Authenticate`). Then the token's rate limit applies (429, see
//! [`crate::http::rate_limit`]). Then `/admin/api/…` needs a platform administrator, and
//! `/v1/workspaces/{workspaceId}/…` a member of that workspace (403 `forbidden`; a
//! workspace that does not exist counts as "not a member").

use crate::error::ApiError;
use crate::operations::Operation;
use crate::state::AppState;
use actix_web::HttpRequest;
use actix_web::http::header::AUTHORIZATION;
use wpds_storage::auth::{self, Caller};

/// Authenticates and authorises `req` for `op`; `None` for an unsecured operation.
pub async fn check(op: &Operation, req: &HttpRequest, state: &AppState) -> Result<Option<Caller>, ApiError> {
    if !op.secured {
        return Ok(None);
    }
    let token = bearer_token(req)?;
    let lookup = token.clone();
    let caller = state
        .run(move |conn| auth::authenticate(conn, &lookup))
        .await?
        .ok_or_else(|| unauthenticated("The access token is unknown, expired or revoked.", true))?;
    state.limiter.take(&token).map_err(ApiError::RateLimited)?;
    if op.path.starts_with("/admin/api/") {
        if !caller.is_platform_admin {
            return Err(ApiError::Forbidden("This operation is for platform administrators.".to_owned()));
        }
    } else if let Some(workspace) = req.match_info().get("workspaceId") {
        let denied = || ApiError::Forbidden(format!("You are not a member of workspace {workspace}."));
        let Some(workspace_id) = wpds_storage::ids::parse(workspace) else { return Err(denied()) };
        let user_id = caller.user_id;
        if !state.run(move |conn| auth::is_member(conn, workspace_id, user_id)).await? {
            return Err(denied());
        }
    }
    Ok(Some(caller))
}

/// The token of an `Authorization: Bearer …` header.
fn bearer_token(req: &HttpRequest) -> Result<String, ApiError> {
    let Some(value) = req.headers().get(AUTHORIZATION) else {
        return Err(unauthenticated("This operation needs Authorization: Bearer <access token>.", false));
    };
    let value =
        value.to_str().map_err(|_| unauthenticated("The Authorization header is malformed.", true))?;
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.contains(' ') {
        return Err(unauthenticated("The Authorization header must be Bearer <access token>.", true));
    }
    Ok(token.to_owned())
}

fn unauthenticated(detail: &str, token_sent: bool) -> ApiError {
    ApiError::Unauthenticated { detail: detail.to_owned(), token_sent }
}
