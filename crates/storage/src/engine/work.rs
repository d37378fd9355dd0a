//! The one way into the database. A repository function describes what it does as a
//! [`Read`] or a [`Write`]; [`Database::read`] and [`Database::write`] run it within the
//! caller's [`Budget`], and decide here, by engine and configuration, which connection
//! serves it:
//!
//! | work | SQLite | PostgreSQL, or behind a pooler that keeps prepared statements | PostgreSQL behind a transaction pooler that keeps none |
//! |---|---|---|---|
//! | a read ([`Read::new`]) | a pooled connection, on the blocking threads | a pooled connection (behind a pooler, in one transaction, [`Database::run_until`]) | a pooled connection, in one transaction |
//! | a read of one statement ([`Read::statement`]) | a pooled connection | a shared, pipelining connection ([`crate::engine::shared_pg`]) | a pooled connection: as it is when the role's timeouts bound it, else in a transaction ([`Database::run_statement_until`]) |
//! | a write ([`Write::new`]) | the writer thread, batched ([`crate::engine::writer`]) | a pooled connection | a pooled connection, in one transaction |
//! | a write whose common case is one statement ([`Write::first_then`]) | the writer, both parts in one job | the statement on a shared connection, the rest (when needed) on a pooled one | the statement on a pooled connection as a read of one statement, the rest (when needed) in a transaction |
//!
//! Callers never see which: they hand over the work and a budget, and get its result.
//!
//! The [`Budget`] is one request's time for the database. Each call waits for a connection,
//! the writer's queue and locks only as long as is left of it, and spends what it took, so a
//! request of several calls (authentication, membership, the operation's own work) answers
//! `Unavailable` once the budget is spent, not after one full timeout per call. A call whose
//! deadline passes answers `Unavailable` at its deadline even while the database is silent
//! (no timeout of the database's own arrives through a black hole); work still on a blocking
//! thread then finishes on its own, and its connection is closed rather than pooled
//! ([`Database::release`]).

use crate::engine::conn::DbConn;
use crate::engine::db::Database;
use crate::engine::shared_pg::SharedPg;
use crate::engine::statement::{StatementConn, StatementFuture, ready};
use crate::error::StoreError;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A statement function over its input: `|conn, input| Box::pin(function(conn, input))`, for
/// a repository `async fn` that runs one statement (`statement`).
pub type StatementFn<I, T> = for<'c> fn(StatementConn<'c>, &'c I) -> StatementFuture<'c, T>;

/// One request's time for the database, spent by each call by the time it took.
#[derive(Debug)]
pub struct Budget {
    /// Nanoseconds left.
    left: AtomicU64,
}

impl Budget {
    /// A budget of `total`.
    pub fn new(total: Duration) -> Self {
        Budget { left: AtomicU64::new(u64::try_from(total.as_nanos()).unwrap_or(u64::MAX)) }
    }

    /// What is left.
    pub fn left(&self) -> Duration {
        Duration::from_nanos(self.left.load(Ordering::Relaxed))
    }

    /// Runs `call` with the deadline of what is left, and spends the time it took.
    async fn spend<F: Future>(&self, call: impl FnOnce(Instant) -> F) -> F::Output {
        let started = Instant::now();
        let outcome = call(started + self.left()).await;
        let spent = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // One request's calls come one after the other: a load and a store suffice.
        self.left.store(self.left.load(Ordering::Relaxed).saturating_sub(spent), Ordering::Relaxed);
        outcome
    }
}

/// Work that reads, built by a repository function.
pub struct Read<T> {
    /// What it does, as its span names it ([`crate::engine::trace`]).
    summary: &'static str,
    plan: Plan<T>,
}

/// Work that writes, built by a repository function. Statements that must commit together
/// run in the write transaction it opens itself ([`crate::db_write!`]).
pub struct Write<T> {
    /// What it does, as its span names it ([`crate::engine::trace`]).
    summary: &'static str,
    plan: Plan<T>,
}

/// Work on a blocking connection of its own.
type Blocking<T> = Box<dyn FnOnce(&mut DbConn) -> Result<T, StoreError> + Send>;

/// How the work can run.
enum Plan<T> {
    /// Statements on a connection of its own.
    Blocking(Blocking<T>),
    /// One autocommit statement, which any connection can run.
    Statement(Box<dyn OneStatement<T>>),
    /// A common case that is one statement, and the rest on a connection of its own.
    FirstThen(Box<dyn FirstThen<T>>),
}

/// A statement function bound to its input.
trait OneStatement<T>: Send + Sync {
    /// The statement's future on `conn`.
    fn on<'c>(&'c self, conn: StatementConn<'c>) -> StatementFuture<'c, T>;
}

/// A write's common case as one statement, and the rest.
trait FirstThen<T>: Send + Sync {
    /// The common case's statement on `conn`: `None` when it does not apply.
    fn first<'c>(&'c self, conn: StatementConn<'c>) -> StatementFuture<'c, Option<T>>;
    /// Every other case, on a connection of its own.
    fn rest(self: Box<Self>, conn: &mut DbConn) -> Result<T, StoreError>;
}

/// A statement function and its input.
struct Bound<I, T> {
    input: I,
    run: StatementFn<I, T>,
}

impl<I: Send + Sync, T> OneStatement<T> for Bound<I, T> {
    fn on<'c>(&'c self, conn: StatementConn<'c>) -> StatementFuture<'c, T> {
        (self.run)(conn, &self.input)
    }
}

/// A [`FirstThen`] of a statement function and a blocking function over one input.
struct Staged<I, T> {
    input: I,
    first: StatementFn<I, Option<T>>,
    rest: fn(&mut DbConn, I) -> Result<T, StoreError>,
}

impl<I: Send + Sync, T> FirstThen<T> for Staged<I, T> {
    fn first<'c>(&'c self, conn: StatementConn<'c>) -> StatementFuture<'c, Option<T>> {
        (self.first)(conn, &self.input)
    }

    fn rest(self: Box<Self>, conn: &mut DbConn) -> Result<T, StoreError> {
        (self.rest)(conn, self.input)
    }
}

impl<T: Send + 'static> Plan<T> {
    /// The whole work on one blocking connection.
    fn blocking(self) -> impl FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static {
        move |conn: &mut DbConn| match self {
            Plan::Blocking(work) => work(conn),
            Plan::Statement(statement) => ready(statement.on(conn.statement())),
            Plan::FirstThen(staged) => match ready(staged.first(conn.statement()))? {
                Some(done) => Ok(done),
                None => staged.rest(conn),
            },
        }
    }
}

impl<T: Send + 'static> Read<T> {
    /// A read of one or more statements on a connection of its own. `summary` says what
    /// it does, as `db.query.summary` (`SELECT sync_receipts`): each statement's verb and
    /// table, in order, low in cardinality (never a value).
    pub fn new(
        summary: &'static str,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    ) -> Self {
        Read { summary, plan: Plan::Blocking(Box::new(work)) }
    }

    /// A read that is the one statement `run` over `input` (`summary`: as for [`Read::new`]).
    pub fn statement<I: Send + Sync + 'static>(
        summary: &'static str,
        input: I,
        run: StatementFn<I, T>,
    ) -> Self {
        Read { summary, plan: Plan::Statement(Box::new(Bound { input, run })) }
    }
}

impl<T: Send + 'static> Write<T> {
    /// A write: `work` opens its transaction with [`crate::db_write!`] where its statements
    /// must commit together (one autocommit statement, or several that need not, may run as
    /// they are: the rate-limit counters' sweep and hit).
    /// `summary`: as for [`Read::new`].
    pub fn new(
        summary: &'static str,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    ) -> Self {
        Write { summary, plan: Plan::Blocking(Box::new(work)) }
    }

    /// A write whose common case is the one statement `first` over `input` (`None` when it
    /// does not apply), and whose other cases `rest` answers in a transaction of its own. On
    /// SQLite both run in one job of the writer; on PostgreSQL `first` runs on a shared
    /// connection, and `rest` only when `first` did not apply or its row was locked longer
    /// than a shared connection waits.
    /// (`summary`: as for [`Read::new`], of the whole.)
    pub fn first_then<I: Send + Sync + 'static>(
        summary: &'static str,
        input: I,
        first: StatementFn<I, Option<T>>,
        rest: fn(&mut DbConn, I) -> Result<T, StoreError>,
    ) -> Self {
        Write { summary, plan: Plan::FirstThen(Box::new(Staged { input, first, rest })) }
    }
}

impl Database {
    /// Runs `read` within what is left of `budget` (see the module documentation for
    /// which connection serves it), in its span (`trace`).
    pub async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        budget: &Budget,
        read: Read<T>,
    ) -> Result<T, StoreError> {
        let shared = self.shared().filter(|_| matches!(read.plan, Plan::Statement(_)));
        let connection = if shared.is_some() { "shared" } else { "pool" };
        let work = async move {
            match (read.plan, shared) {
                (Plan::Statement(statement), Some(shared)) => {
                    budget
                        .spend(|deadline| on_shared(shared, deadline, &statement, |conn, s| s.on(conn)))
                        .await
                }
                (plan, _) => budget.spend(|deadline| self.plan_on_pool(deadline, plan)).await,
            }
        };
        self.traced(read.summary, connection, work).await
    }

    /// Runs `write` within what is left of `budget` (see the module documentation for
    /// which connection serves it), in its span (`trace`). On SQLite the answer
    /// comes once the write's batch has committed, and the span says how many writes that
    /// commit carried.
    pub async fn write<T: Send + 'static>(
        self: &Arc<Self>,
        budget: &Budget,
        write: Write<T>,
    ) -> Result<T, StoreError> {
        let connection = match (&write.plan, self.writer(), self.shared()) {
            (_, Some(_), _) => "writer",
            (Plan::FirstThen(_), None, Some(_)) => "shared",
            _ => "pool",
        };
        self.traced(write.summary, connection, self.write_plan(budget, write.plan)).await
    }

    /// `work` in a database span (when the request's span is sampled).
    async fn traced<T>(
        &self,
        summary: &'static str,
        connection: &'static str,
        work: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let attributes = || self.span_attributes().of(summary, connection);
        crate::engine::trace::in_child_span(summary, attributes, crate::engine::trace::failure, work).await
    }

    /// Runs a write's `plan` within what is left of `budget`.
    async fn write_plan<T: Send + 'static>(
        self: &Arc<Self>,
        budget: &Budget,
        plan: Plan<T>,
    ) -> Result<T, StoreError> {
        if let Some(writer) = self.writer() {
            let job = plan.blocking();
            let queued =
                |deadline| async move { within(deadline, writer.submit_counted(deadline, job)).await? };
            let (value, writes) = budget.spend(queued).await?;
            crate::engine::trace::batch_writes(writes);
            return Ok(value);
        }
        match (plan, self.shared()) {
            (Plan::FirstThen(staged), Some(shared)) => {
                let first =
                    budget.spend(|deadline| on_shared(shared, deadline, &staged, |conn, s| s.first(conn)));
                // The row locked: `rest` waits for it on a pooled connection, within what is
                // left of the budget, instead of holding up the shared connection.
                if let Some(answer) = settled(first.await) {
                    return answer;
                }
                // Boxed: the blocking call's future, taken only by the uncommon cases, would
                // otherwise enlarge (and be copied with) every request's future.
                Box::pin(budget.spend(|deadline| self.on_pool(deadline, move |conn| staged.rest(conn)))).await
            }
            (plan, _) => budget.spend(|deadline| self.plan_on_pool(deadline, plan)).await,
        }
    }

    /// Runs `plan` on pooled connections on a blocking thread, until `deadline` at most: a
    /// statement, and a write's first statement, as one ([`Database::run_statement_until`]:
    /// behind a transaction pooler whose role bounds statements, without a transaction of
    /// its own), and a write's rest, when the first did not apply or met a row locked for
    /// longer than the role's lock wait, as a unit of its own; any other work as one unit.
    async fn plan_on_pool<T: Send + 'static>(
        self: &Arc<Self>,
        deadline: Instant,
        plan: Plan<T>,
    ) -> Result<T, StoreError> {
        let db = Arc::clone(self);
        self.on_blocking(deadline, move || match plan {
            Plan::Blocking(work) => db.run_until(deadline, work),
            Plan::Statement(statement) => {
                db.run_statement_until(deadline, |conn| ready(statement.on(conn.statement())))
            }
            Plan::FirstThen(staged) => {
                let first = db.run_statement_until(deadline, |conn| ready(staged.first(conn.statement())));
                settled(first).unwrap_or_else(|| db.run_until(deadline, move |conn| staged.rest(conn)))
            }
        })
        .await
    }

    /// Whether the database serves now, as a read (for `/readyz`): a trivial query succeeds
    /// on a connection of the pool and, on SQLite, the writer's last attempt to write
    /// succeeded. When it failed (a read-only file, a full disk, an I/O error), the writer
    /// makes an attempt that changes nothing (on a fresh connection; [`crate::engine::writer::Writer::probe`]), so
    /// readiness returns by itself once the fault is lifted, even when no request writes,
    /// as when a balancer sends none to an unready server.
    pub fn ping(self: &Arc<Self>) -> Read<()> {
        let db = Arc::clone(self);
        Read::new("SELECT", move |conn| db.ping_on(conn))
    }

    /// Runs `work` on a pooled connection on a blocking thread, until `deadline` at most.
    async fn on_pool<T: Send + 'static>(
        self: &Arc<Self>,
        deadline: Instant,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = Arc::clone(self);
        self.on_blocking(deadline, move || db.run_until(deadline, work)).await
    }

    /// Runs `call` on a blocking thread, until `deadline` at most (it then finishes on its
    /// own, and its connections are closed rather than pooled, [`Database::release`]).
    async fn on_blocking<T: Send + 'static>(
        &self,
        deadline: Instant,
        call: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let call = tokio::task::spawn_blocking(call);
        match within(deadline, call).await {
            Ok(Ok(result)) => result,
            Ok(Err(blocking)) => Err(StoreError::Internal(format!("the blocking thread failed: {blocking}"))),
            Err(late) => Err(late),
        }
    }
}

/// Runs `work` over `input` on a shared PostgreSQL connection until `deadline` at most. At
/// the deadline the statement is dropped, which takes its connection out of use
/// ([`crate::engine::shared_pg`]).
async fn on_shared<I, T>(
    shared: &SharedPg,
    deadline: Instant,
    input: &I,
    work: StatementFn<I, T>,
) -> Result<T, StoreError> {
    within(deadline, shared.run(input, work)).await?
}

/// The answer a write's first statement ([`Write::first_then`]) settled: its result, or its
/// failure; `None` when its rest must run: the first did not apply, or its row was locked
/// longer than the first's lock wait (the rest waits within the budget).
fn settled<T>(first: Result<Option<T>, StoreError>) -> Option<Result<T, StoreError>> {
    match first {
        Ok(Some(done)) => Some(Ok(done)),
        Ok(None) => None,
        Err(busy) if busy.is_lock_wait() => None,
        Err(failed) => Some(Err(failed)),
    }
}

/// `call`'s outcome, or `Unavailable` once `deadline` passes.
async fn within<T>(deadline: Instant, call: impl Future<Output = T>) -> Result<T, StoreError> {
    tokio::time::timeout_at(deadline.into(), call).await.map_err(|_| {
        StoreError::Unavailable(
            "the request's deadline passed while the database was busy or silent".to_owned(),
        )
    })
}
