//! What every request can reach: the database, token lifetimes, the rate limiter, the
//! authentication cache, and the bridges that keep diesel work off the async threads (the
//! blocking pool for reads, the SQLite writer thread for writes, and on PostgreSQL the
//! shared connections that single statements pipeline on, awaited without a thread).

use crate::auth_cache::AuthCache;
use crate::error::ApiError;
use crate::rate_limit::RateLimiter;
use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wpds_storage::auth::TokenLifetimes;
use wpds_storage::statement::{StatementConn, StatementFuture, ready};
use wpds_storage::{Database, DbConn, StoreError};

/// One statement's work ([`wpds_storage::statement`]) over its input: a repository's
/// statement function, boxed (`|conn, input| Box::pin(repo::function(conn, input))`).
pub type StatementFn<I, T> = for<'c> fn(StatementConn<'c>, &'c I) -> StatementFuture<'c, T>;

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
    /// The Prometheus metrics, when they are served (`WPDS_METRICS_BIND`).
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
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

/// The error of a request whose database deadline passed while its work was queued or
/// running.
fn deadline_passed() -> StoreError {
    StoreError::Unavailable("the request's deadline passed while the database was busy or silent".to_owned())
}

impl AppState {
    /// Runs `work` (a read; on PostgreSQL any work) with a pooled connection on actix's
    /// blocking thread pool, within what is left of the request's budget for the database
    /// (the whole configured timeout outside [`with_db_budget`]).
    ///
    /// The deadline is the server's own: the request answers 503 `unavailable` when it
    /// passes, even while the call is stuck on a silent network (no database timeout
    /// arrives through a black hole). Work still queued at its deadline never starts; a
    /// connection whose work failed in the database, or finished after the request gave up,
    /// is closed rather than pooled ([`Database::release`]).
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        let engine = db.engine();
        let metrics = self.metrics.clone();
        self.within_budget(|budget| async move {
            let deadline = Instant::now() + budget;
            let call = actix_web::web::block(move || {
                let waited = |wait: Duration| {
                    if let Some(metrics) = &metrics {
                        metrics.pool_wait.observe(wait.as_secs_f64());
                    }
                };
                db.run_until(deadline, waited, work)
            });
            let call = crate::telemetry::in_span(crate::telemetry::database(engine, false), call);
            match tokio::time::timeout_at(deadline.into(), call).await {
                Err(_) => Err(ApiError::from(deadline_passed())),
                Ok(Err(blocking)) => Err(ApiError::Internal(format!("blocking pool: {blocking}"))),
                Ok(Ok(result)) => result.map_err(ApiError::from),
            }
        })
        .await
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
        self.within_budget(|budget| async move {
            let deadline = Instant::now() + budget;
            // The writer refuses a job whose deadline has passed; this keeps the deadline
            // for a job queued behind a batch that stalls (a slow disk).
            let link = crate::telemetry::current_link();
            let submitted = writer.submit_traced(deadline, link, work);
            let engine = self.db.engine();
            let traced = crate::telemetry::in_span(crate::telemetry::database(engine, true), submitted);
            match tokio::time::timeout_at(deadline.into(), traced).await {
                Err(_) => Err(deadline_passed()),
                Ok(result) => result,
            }
        })
        .await
        .map_err(ApiError::from)
    }

    /// Runs `work`, one statement that reads (or writes on its own, in autocommit), over
    /// `input`: on PostgreSQL awaited on a shared connection of this worker thread,
    /// pipelined with other requests' statements, within what is left of the request's
    /// budget (503 `unavailable` when it passes, as [`AppState::run`]); elsewhere like
    /// [`AppState::run`].
    pub async fn statement<I, T>(&self, input: I, work: StatementFn<I, T>) -> Result<T, ApiError>
    where
        I: Send + Sync + 'static,
        T: Send + 'static,
    {
        match self.db.shared() {
            Some(_) => self.on_shared(&input, work).await.map_err(ApiError::from),
            None => self.run(move |conn| ready(work(conn.statement(), &input))).await,
        }
    }

    /// Runs a write whose common case is the one statement `first` (which answers `None`
    /// when it does not apply) and whose other cases `rest` answers in a transaction: on
    /// SQLite both in one job of the writer thread; on PostgreSQL `first` on a shared
    /// connection ([`AppState::statement`]), then, only when needed (it did not apply, or
    /// its row was locked longer than a shared connection waits), `rest` like
    /// [`AppState::run`]. One budget for both.
    pub async fn write_first<I, T, R>(
        &self,
        input: I,
        first: StatementFn<I, Option<T>>,
        rest: R,
    ) -> Result<T, ApiError>
    where
        I: Send + Sync + 'static,
        T: Send + 'static,
        R: FnOnce(&mut DbConn, I) -> Result<T, StoreError> + Send + 'static,
    {
        if self.db.shared().is_none() {
            return self
                .write(move |conn| match ready(first(conn.statement(), &input))? {
                    Some(done) => Ok(done),
                    None => rest(conn, input),
                })
                .await;
        }
        match self.on_shared(&input, first).await {
            Ok(Some(done)) => return Ok(done),
            Ok(None) => {}
            // The row is locked: `rest` waits for it on the blocking pool, within what is
            // left of the budget, instead of holding up the shared connection.
            Err(busy) if busy.is_lock_wait() => {}
            Err(failed) => return Err(failed.into()),
        }
        // Boxed: the blocking pool's future, taken only by the uncommon cases, would
        // otherwise enlarge (and be copied with) every request's future.
        Box::pin(self.write(move |conn| rest(conn, input))).await
    }

    /// Runs `work` over `input` on a shared PostgreSQL connection within what is left of
    /// the request's budget. At the deadline the statement is dropped, which takes its
    /// connection out of use ([`wpds_storage::shared_pg`]).
    async fn on_shared<I, T>(&self, input: &I, work: StatementFn<I, T>) -> Result<T, StoreError> {
        let Some(shared) = self.db.shared() else {
            return Err(StoreError::Internal("no shared connections on this engine".to_owned()));
        };
        let engine = self.db.engine();
        self.within_budget(|budget| async move {
            let deadline = Instant::now() + budget;
            let call =
                crate::telemetry::in_span(crate::telemetry::database(engine, false), shared.run(input, work));
            match tokio::time::timeout_at(deadline.into(), call).await {
                Err(_) => Err(deadline_passed()),
                Ok(result) => result,
            }
        })
        .await
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
