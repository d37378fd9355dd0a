//! What every request can reach: the database, token lifetimes, the rate limiter and the
//! authentication cache.
//!
//! The database is reached one way: [`AppState::read`] and [`AppState::write`] hand a
//! repository's [`Read`] or [`Write`] to storage with the request's [`Budget`]; storage
//! decides which connection serves it ([`wpds_storage::engine`]) and makes the call's span
//! of the request's trace (its `in_child_span`).

use crate::auth_cache::AuthCache;
use crate::error::ApiError;
use crate::rate_limit::RateLimiter;
use std::sync::Arc;
use wpds_storage::repos::auth::TokenLifetimes;
use wpds_storage::{Budget, Database, Read, Write};

/// Shared application state.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub db: Arc<Database>,
    /// Access and refresh token lifetimes.
    pub lifetimes: TokenLifetimes,
    /// The rate limits (per user, per client address).
    pub limiter: Arc<RateLimiter>,
    /// Recent answers of the 401 and 403 steps.
    pub auth_cache: Arc<AuthCache>,
    /// Set once the server was told to stop: it is draining, and readiness answers 503 so
    /// load balancers take it out while it still serves (see [`crate::server::stop_on_signal`]).
    pub draining: Arc<std::sync::atomic::AtomicBool>,
    /// The Prometheus metrics (recording nothing unless `WPDS_METRICS_BIND` serves them).
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl AppState {
    /// Runs `read` within what is left of `budget`.
    pub async fn read<T: Send + 'static>(&self, budget: &Budget, read: Read<T>) -> Result<T, ApiError> {
        Ok(self.db.read(budget, read).await?)
    }

    /// Runs `write` within what is left of `budget` (on SQLite, answered once its batch of
    /// the writer committed).
    pub async fn write<T: Send + 'static>(&self, budget: &Budget, write: Write<T>) -> Result<T, ApiError> {
        Ok(self.db.write(budget, write).await?)
    }

    /// A budget for one request: the configured database timeout.
    pub fn budget(&self) -> Budget {
        Budget::new(self.db.timeout())
    }
}
