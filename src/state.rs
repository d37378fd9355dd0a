//! What every request can reach: the database, token lifetimes, the rate limiter, the
//! authentication cache, and the blocking bridge that keeps diesel work off the async threads.

use crate::error::ApiError;
use crate::http::auth_cache::AuthCache;
use crate::http::rate_limit::RateLimiter;
use std::sync::Arc;
use wpds_storage::auth::TokenLifetimes;
use wpds_storage::{Database, DbConn, StoreError};

/// Shared application state.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub db: Arc<Database>,
    /// Access and refresh token lifetimes.
    pub lifetimes: TokenLifetimes,
    /// The per-token rate limit.
    pub limiter: Arc<RateLimiter>,
    /// Recent answers of the 401 and 403 steps.
    pub auth_cache: Arc<AuthCache>,
}

impl AppState {
    /// Runs `work` with a pooled connection on actix's blocking thread pool.
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        actix_web::web::block(move || {
            let conn = &mut db.conn()?;
            work(conn)
        })
        .await
        .map_err(|e| ApiError::Internal(format!("blocking pool: {e}")))?
        .map_err(ApiError::from)
    }
}
