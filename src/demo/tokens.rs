//! The demo's tokens: the set the banner prints as the server starts, and the set
//! `POST /demo/tokens` answers with as JSON, so that a client team's CI, running the image
//! as a service container (`WPDS_DEMO=true`), takes them without reading a log. The route
//! exists only in the demo: anyone who reaches it gets an administrator's token, which is
//! what a demo is for and what a server holding real data must never do.

use crate::error::ApiError;
use crate::http::{endpoint, problem};
use crate::state::AppState;
use actix_web::http::header::{CACHE_CONTROL, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use wpds_storage::repos::auth;

/// The demo's user outside workspace 1 (user 7, a member of workspace 2 only).
pub const OUTSIDER: i64 = 7;

/// A fresh set of the demo's tokens, each of a login of its own; the names are the
/// conformance kit's `run.py` options (`--member-token`, …).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    /// Access token of user 5, a member of workspace 1.
    pub member_token: String,
    /// Access token of user 9, a platform administrator and a member of workspace 1.
    pub admin_token: String,
    /// Access token of user 7, outside workspace 1.
    pub outsider_token: String,
    /// Refresh token of user 5, of a login of its own: spending it twice (a reuse, 401
    /// `invalid_grant`) revokes that login only, never the access tokens beside it.
    pub refresh_token: String,
    /// Seconds the access tokens live (24 hours in the demo).
    pub expires_in: i64,
}

impl Tokens {
    /// Issues a fresh set: four logins, each written as any write is.
    pub async fn issue(state: &AppState) -> Result<Tokens, ApiError> {
        let budget = state.budget();
        let issue = |user| state.write(&budget, auth::issue(user, state.lifetimes));
        let member = issue(super::MEMBER).await?;
        Ok(Tokens {
            admin_token: issue(super::ADMIN).await?.access_token,
            outsider_token: issue(OUTSIDER).await?.access_token,
            refresh_token: issue(super::MEMBER).await?.refresh_token,
            expires_in: member.expires_in,
            member_token: member.access_token,
        })
    }
}

/// Registers `POST /demo/tokens` (other methods answer 405 with `Allow: POST`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(endpoint::post("/demo/tokens", answer));
}

/// 200 with a fresh [`Tokens`], never cached; a failure is the API's problem (503 when the
/// database does not answer in time).
async fn answer(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match Tokens::issue(&state).await {
        Ok(tokens) => {
            let mut response = HttpResponse::Ok().json(tokens);
            response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(error) => problem::respond(&req, error),
    }
}
