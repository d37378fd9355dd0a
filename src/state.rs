//! What every request can reach: the database, token lifetimes, the rate limiter, the
//! authentication cache, and the bridges that keep diesel work off the async threads (the
//! blocking pool for reads, the SQLite writer thread for writes).

use crate::error::ApiError;
use crate::http::auth_cache::AuthCache;
use crate::http::rate_limit::RateLimiter;
use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
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

tokio::task_local! {
    /// What is left of the current request's time for the database (see [`with_db_budget`]).
    static DB_BUDGET: Cell<Duration>;
}

/// Runs `request` with a budget for the database: every [`AppState::run`] inside it
/// (authentication, membership, the handler's work) waits for connections and locks out
/// of this one budget, so a request whose database is unavailable answers 503 once the
/// budget is spent instead of after one full timeout per step.
pub async fn with_db_budget<F: Future>(budget: Duration, request: F) -> F::Output {
    DB_BUDGET.scope(Cell::new(budget), request).await
}

impl AppState {
    /// Runs `work` (a read; on PostgreSQL any work) with a pooled connection on actix's
    /// blocking thread pool, within what is left of the request's budget for the database
    /// (the whole configured timeout outside [`with_db_budget`]).
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        let outcome = self
            .within_budget(|budget| {
                actix_web::web::block(move || {
                    let (mut conn, shortened) = db.conn_within(budget)?;
                    let result = work(&mut conn);
                    if shortened {
                        // A failure means the connection is broken; the pool discards it.
                        let _ = db.restore_lock_wait(&mut conn);
                    }
                    result
                })
            })
            .await;
        outcome.map_err(|e| ApiError::Internal(format!("blocking pool: {e}")))?.map_err(ApiError::from)
    }

    /// Runs `work`, which writes, within what is left of the request's budget for the
    /// database: on SQLite through the writer thread (batched with the writes queued beside
    /// it, answered after their commit), on PostgreSQL like [`AppState::run`].
    pub async fn write<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    {
        let Some(writer) = self.db.writer() else { return self.run(work).await };
        self.within_budget(|budget| writer.submit(Instant::now() + budget, work))
            .await
            .map_err(ApiError::from)
    }

    /// Starts `attempt` with what is left of the request's budget for the database (the
    /// whole configured timeout outside [`with_db_budget`]) and charges the budget with the
    /// time it took.
    async fn within_budget<Fut: Future>(&self, attempt: impl FnOnce(Duration) -> Fut) -> Fut::Output {
        let budget = DB_BUDGET.try_with(Cell::get).unwrap_or_else(|_| self.db.timeout());
        let started = Instant::now();
        let outcome = attempt(budget).await;
        let _ = DB_BUDGET.try_with(|left| left.set(left.get().saturating_sub(started.elapsed())));
        outcome
    }
}
