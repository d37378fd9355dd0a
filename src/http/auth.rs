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
use crate::rate_limit::{Count, Standing, Subject};
use crate::state::AppState;
use actix_web::HttpRequest;
use actix_web::http::header::AUTHORIZATION;
use wpds_storage::Budget;
use wpds_storage::repos::auth::Caller;

/// What the 401, 429 and 403 steps found of a request they let through.
#[derive(Debug)]
pub struct Checked {
    /// The caller; `None` for an unsecured operation.
    pub caller: Option<Caller>,
    /// The standing of the rate limit the request counted against, for the answer's
    /// `RateLimit` fields; `None` when limiting is off.
    pub standing: Option<Standing>,
}

/// A request the 401, 429 and 403 steps (or the path check between them) refused.
#[derive(Debug)]
pub struct Refused {
    /// Why.
    pub error: ApiError,
    /// The standing of the rate limit the request counted against before it was refused,
    /// for the answer's `RateLimit` fields.
    pub standing: Option<Standing>,
}

impl From<ApiError> for Refused {
    fn from(error: ApiError) -> Self {
        Refused { error, standing: None }
    }
}

/// Authenticates and authorises `req` for `op`. `workspace_id` is the id the path's
/// `workspaceId` names (`None`: none, or one that names no record, which is "not a
/// member"). `check_path` runs between the two, as the contract's precedence has it: 401
/// (and 429), then 400 for a path parameter that breaks its schema, then 403.
pub async fn check(
    op: &Operation,
    req: &HttpRequest,
    state: &AppState,
    budget: &Budget,
    workspace_id: Option<i64>,
    check_path: impl FnOnce() -> Result<(), ApiError>,
) -> Result<Checked, Refused> {
    if !op.secured() {
        let standing = limit_address(req, state, budget).await?;
        return Ok(Checked { caller: None, standing });
    }
    let caller = match authenticate(req, state, budget).await {
        Ok(caller) => caller,
        Err(unauthenticated) => {
            let standing = limit_address(req, state, budget).await?;
            return Err(Refused { error: unauthenticated, standing });
        }
    };
    let standing = limit(state, budget, Subject::User(caller.user_id)).await?;
    let refused = |error| Refused { error, standing: standing.clone() };
    check_path().map_err(refused)?;
    match op.access {
        Access::PlatformAdmin if !caller.is_platform_admin => {
            return Err(refused(ApiError::Forbidden(
                "This operation is for platform administrators.".to_owned(),
            )));
        }
        Access::WorkspaceMember => {
            let member = match workspace_id {
                Some(workspace_id) => {
                    is_member(state, budget, workspace_id, caller.user_id).await.map_err(refused)?
                }
                None => false,
            };
            if !member {
                // The generator refuses a workspace-member operation without this parameter.
                let workspace = req.match_info().get("workspaceId").unwrap_or_default();
                return Err(refused(ApiError::Forbidden(format!(
                    "You are not a member of workspace {workspace}."
                ))));
            }
        }
        Access::PlatformAdmin | Access::Public => {}
    }
    Ok(Checked { caller: Some(caller), standing })
}

/// The caller the request's bearer token names, from the cache when it knows.
async fn authenticate(req: &HttpRequest, state: &AppState, budget: &Budget) -> Result<Caller, ApiError> {
    let token = bearer_token(req)?;
    let cached = state.auth_cache.caller(&token);
    state.metrics.auth_cache_lookup(cached.is_some());
    if let Some(caller) = cached {
        return Ok(caller);
    }
    let caller = state
        .read(budget, wpds_storage::repos::auth::authenticate(token.clone()))
        .await?
        .ok_or_else(|| unauthenticated("The access token is unknown, expired or revoked.", true))?;
    state.auth_cache.remember_caller(&token, caller.clone());
    Ok(caller)
}

/// Counts the request against its client address (refresh, and requests without a usable
/// token).
async fn limit_address(
    req: &HttpRequest,
    state: &AppState,
    budget: &Budget,
) -> Result<Option<Standing>, Refused> {
    let Some(peer) = req.peer_addr() else {
        return Ok(None);
    };
    let address = state.limiter.client_address(peer.ip(), req.headers());
    limit(state, budget, Subject::Address(address)).await
}

/// Counts the request against `subject`: its standing (`None` when limiting is off), or
/// 429 beyond the limit. When the shared counters cannot be reached the request goes
/// through, logged.
async fn limit(state: &AppState, budget: &Budget, subject: Subject) -> Result<Option<Standing>, Refused> {
    let standing = match state.limiter.prepare(&subject) {
        Count::Off => return Ok(None),
        Count::Known(standing) => standing,
        Count::Shared { key, window_start, sweep_before } => {
            let counted = state
                .write(budget, wpds_storage::repos::rate_limits::hit(key, window_start, sweep_before))
                .await;
            match counted {
                Ok(hits) => state.limiter.standing(&subject, u64::try_from(hits).unwrap_or(0), window_start),
                Err(e) => {
                    log::warn!(
                        "rate limiter: the shared counters cannot be reached ({e:?}); letting the request through"
                    );
                    return Ok(None);
                }
            }
        }
    };
    if standing.exceeded() {
        state.metrics.rate_limited(matches!(subject, Subject::User(_)));
        return Err(Refused { error: ApiError::RateLimited(standing.reset), standing: Some(standing) });
    }
    Ok(Some(standing))
}

/// Whether `user_id` belongs to `workspace_id`, from the cache when it knows.
async fn is_member(
    state: &AppState,
    budget: &Budget,
    workspace_id: i64,
    user_id: i64,
) -> Result<bool, ApiError> {
    let cached = state.auth_cache.membership(workspace_id, user_id);
    state.metrics.auth_cache_lookup(cached.is_some());
    if let Some(member) = cached {
        return Ok(member);
    }
    let member = state.read(budget, wpds_storage::repos::auth::is_member(workspace_id, user_id)).await?;
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
