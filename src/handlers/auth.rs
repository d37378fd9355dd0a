//! Token refresh (`refreshToken`).

use super::Service;
use crate::error::ApiError;
use crate::operations::{AuthApi, RefreshTokenResponse, RequestContext};
use wpds_contract::types::*;
use wpds_storage::repos::auth;

impl AuthApi for Service {
    /// `refresh_token`.
    async fn refresh_token(
        &self,
        ctx: RequestContext,
        body: RefreshTokenRequest,
    ) -> Result<RefreshTokenResponse, ApiError> {
        let lifetimes = self.state.lifetimes;
        let outcome = self.state.write(&ctx.budget, auth::refresh(body.refresh_token, lifetimes)).await?;
        match outcome {
            Ok(pair) => Ok(RefreshTokenResponse::Ok {
                body: TokenPair {
                    access_token: pair.access_token,
                    refresh_token: pair.refresh_token,
                    token_type: TokenPairTokenType::Bearer,
                    expires_in: pair.expires_in,
                    refresh_expires_in: pair.refresh_expires_in,
                },
                // Tokens: no cache may keep the answer (RFC 6749 section 5.1).
                cache_control: "no-store".to_owned(),
                pragma: "no-cache".to_owned(),
            }),
            Err(refusal) => {
                if refusal == auth::RefreshRefusal::Reused {
                    // The login is revoked: no access token of it may be served from the cache.
                    self.state.auth_cache.clear();
                }
                log::info!("request {}: refresh refused: {refusal:?}", ctx.request_id);
                Err(ApiError::InvalidGrant)
            }
        }
    }
}
