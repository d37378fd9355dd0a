//! Who is calling, and may they: the 401 and 403 steps of the pipeline.
//!
//! Operations the document secures need `Authorization: Bearer <access token>` naming a
//! known, unexpired, unrevoked token (401 `unauthenticated` otherwise, with
//! `WWW-Authenticate`). Then the user's rate limit applies (429, see
//! [`crate::rate_limit`]); a request without a usable token, and every refresh,
//! counts against its client address instead (so guessing tokens is limited too). Then the
//! role the operation's own `security` names in the document ([`Access`]): `platform-admin`
//! needs a platform administrator, `workspace-member` a member of the `workspaceId` path
//! parameter's workspace (403 `forbidden`; a workspace that does not exist counts as "not a
//! member"). Nothing here looks at the path's shape.
//!
//! Both lookups go through [`crate::auth_cache`] first, so a busy token costs no
//! database round trip per request. What they and the counters of a shared rate limit
//! read from the database comes out of the request's [`Budget`].

use crate::error::ApiError;
use crate::http::operation::{Access, Operation};
use crate::rate_limit::{Count, Subject};
use crate::state::AppState;
use actix_web::http::header::AUTHORIZATION;
use actix_web::{HttpMessage, HttpRequest};
use wpds_storage::Budget;
use wpds_storage::auth::Caller;

/// Authenticates and authorises `req` for `op`; `None` for an unsecured operation.
/// `check_path` runs between the two, as the contract's precedence has it: 401 (and 429),
/// then 400 for a path parameter that breaks its schema, then 403.
pub async fn check(
    op: &Operation,
    req: &HttpRequest,
    state: &AppState,
    budget: &Budget,
    check_path: impl FnOnce() -> Result<(), ApiError>,
) -> Result<Option<Caller>, ApiError> {
    if !op.secured() {
        limit_address(req, state, budget).await?;
        return Ok(None);
    }
    let caller = match authenticate(req, state, budget).await {
        Ok(caller) => caller,
        Err(unauthenticated) => {
            limit_address(req, state, budget).await?;
            return Err(unauthenticated);
        }
    };
    limit(req, state, budget, Subject::User(caller.user_id)).await?;
    check_path()?;
    match op.access {
        Access::PlatformAdmin if !caller.is_platform_admin => {
            return Err(ApiError::Forbidden("This operation is for platform administrators.".to_owned()));
        }
        Access::WorkspaceMember => {
            // The generator refuses a workspace-member operation without this parameter.
            let workspace = req.match_info().get("workspaceId").unwrap_or_default();
            let denied = || ApiError::Forbidden(format!("You are not a member of workspace {workspace}."));
            let Some(workspace_id) = wpds_storage::ids::parse(workspace) else { return Err(denied()) };
            if !is_member(state, budget, workspace_id, caller.user_id).await? {
                return Err(denied());
            }
        }
        Access::PlatformAdmin | Access::Public => {}
    }
    Ok(Some(caller))
}

/// The caller the request's bearer token names, from the cache when it knows.
async fn authenticate(req: &HttpRequest, state: &AppState, budget: &Budget) -> Result<Caller, ApiError> {
    let token = bearer_token(req)?;
    let cached = state.auth_cache.caller(&token);
    if let Some(metrics) = &state.metrics {
        metrics.auth_cache_lookup(cached.is_some());
    }
    if let Some(caller) = cached {
        return Ok(caller);
    }
    let caller = state
        .read(budget, wpds_storage::auth::authenticate(token.clone()))
        .await?
        .ok_or_else(|| unauthenticated("The access token is unknown, expired or revoked.", true))?;
    state.auth_cache.remember_caller(&token, caller.clone());
    Ok(caller)
}

/// Counts the request against its client address (refresh, and requests without a usable
/// token).
async fn limit_address(req: &HttpRequest, state: &AppState, budget: &Budget) -> Result<(), ApiError> {
    let Some(peer) = req.peer_addr() else {
        return Ok(());
    };
    let address = state.limiter.client_address(peer.ip(), req.headers());
    limit(req, state, budget, Subject::Address(address)).await
}

/// Counts the request against `subject`: 429 beyond the limit. The standing goes into the
/// request's extensions, for the answer's `RateLimit` fields. When the shared counters
/// cannot be reached the request goes through, logged.
async fn limit(
    req: &HttpRequest,
    state: &AppState,
    budget: &Budget,
    subject: Subject,
) -> Result<(), ApiError> {
    let standing = match state.limiter.prepare(&subject) {
        Count::Off => return Ok(()),
        Count::Known(standing) => standing,
        Count::Shared { key, window_start, sweep_before } => {
            let counted =
                state.write(budget, wpds_storage::rate_limits::hit(key, window_start, sweep_before)).await;
            match counted {
                Ok(hits) => state.limiter.standing(&subject, u64::try_from(hits).unwrap_or(0), window_start),
                Err(e) => {
                    log::warn!(
                        "rate limiter: the shared counters cannot be reached ({e:?}); letting the request through"
                    );
                    return Ok(());
                }
            }
        }
    };
    let exceeded = standing.exceeded().then_some(standing.reset);
    if let (Some(_), Some(metrics)) = (exceeded, &state.metrics) {
        metrics.rate_limited(matches!(subject, Subject::User(_)));
    }
    req.extensions_mut().insert(standing);
    match exceeded {
        Some(reset) => Err(ApiError::RateLimited(reset)),
        None => Ok(()),
    }
}

/// Whether `user_id` belongs to `workspace_id`, from the cache when it knows.
async fn is_member(
    state: &AppState,
    budget: &Budget,
    workspace_id: i64,
    user_id: i64,
) -> Result<bool, ApiError> {
    let cached = state.auth_cache.membership(workspace_id, user_id);
    if let Some(metrics) = &state.metrics {
        metrics.auth_cache_lookup(cached.is_some());
    }
    if let Some(member) = cached {
        return Ok(member);
    }
    let member = state.read(budget, wpds_storage::auth::is_member(workspace_id, user_id)).await?;
    state.auth_cache.remember_membership(workspace_id, user_id, member);
    Ok(member)
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
