//! The one way into the database. A repository function describes what it does as a
//! [`Read`] or a [`Write`]; [`Database::read`] and [`Database::write`] run it within the
//! caller's [`Budget`], and decide here, by engine and configuration, which connection
//! serves it:
//!
//! | work | SQLite | PostgreSQL, direct or behind a pooler that keeps prepared statements | PostgreSQL behind a pooler that keeps none |
//! |---|---|---|---|
//! | a read ([`Read::new`]) | a pooled connection | a pooled connection (behind a pooler, in a transaction) | a pooled connection, in a transaction |
//! | a write ([`Write::new`]) | the writer's batch | a pooled connection | a pooled connection, in a transaction |
//! | a batched write ([`Write::batched`]) | the writer's batch: the statement, then the rest | the thread's batch (1), then the rest (3) | the thread's batch (2), then the rest in a transaction (3) |
//! | a batched read ([`Read::batched`]) | a pooled connection | the thread's batch (1) | the thread's batch (2) |
//!
//! 1. [`crate::engine::pg_batcher`]: one statement for the work of many requests, on a
//!    shared, pipelining connection ([`crate::engine::shared_pg`]).
//! 2. The same batch on a pooled connection ([`Database::run_batch_until`]): as it is when
//!    the role's timeouts bound it, else in a transaction.
//! 3. A write's rest runs only when the batch did not settle it, on a pooled connection.
//!
//! A pooled connection's work runs on the blocking threads ([`Database::run_until`] and
//! its kin).
//! What a batch is, on both engines: [`crate::engine::batch`].
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

use crate::engine::batch::{BatchedStatement, statement};
use crate::engine::conn::DbConn;
use crate::engine::db::Database;
use crate::engine::statement::ready;
use crate::error::StoreError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    pub(crate) fn left(&self) -> Duration {
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
/// run in the write transaction it opens itself (`db_write!`).
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
    /// A batched statement over one input (a write's common case, or a read), and the rest
    /// on a connection of its own.
    Batched(Box<dyn BatchedWork<T>>),
}

/// Work whose common case (a read's every case) is a batched statement, and the rest.
trait BatchedWork<T>: Send {
    /// The whole work on one blocking connection: the statement over it alone, then,
    /// when that did not settle it, the rest.
    fn blocking(self: Box<Self>, conn: &mut DbConn) -> Result<T, StoreError>;

    /// On PostgreSQL: the common case in this thread's next batch, then, when that did not
    /// settle it, the rest on a pooled connection; within what is left of `budget`.
    fn batched<'a>(
        self: Box<Self>,
        db: &'a Arc<Database>,
        budget: &'a Budget,
    ) -> Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;
}

/// A [`BatchedWork`] of a batched statement and the blocking function of the rest.
struct Staged<S: BatchedStatement> {
    input: S::Input,
    rest: fn(&mut DbConn, S::Input) -> Result<S::Output, StoreError>,
}

impl<S: BatchedStatement> BatchedWork<S::Output> for Staged<S> {
    fn blocking(self: Box<Self>, conn: &mut DbConn) -> Result<S::Output, StoreError> {
        match ready(S::one(conn.statement(), &self.input))? {
            Some(done) => Ok(done),
            None => (self.rest)(conn, self.input),
        }
    }

    fn batched<'a>(
        self: Box<Self>,
        db: &'a Arc<Database>,
        budget: &'a Budget,
    ) -> Pin<Box<dyn Future<Output = Result<S::Output, StoreError>> + Send + 'a>> {
        Box::pin(async move {
            let Staged { input, rest } = *self;
            let input = match (S::key(&input), db.batcher()) {
                (Some(key), Some(batcher)) => {
                    let pooled = Arc::clone(db);
                    let run = move |deadline, inputs| Arc::clone(&pooled).run_batch::<S>(deadline, inputs);
                    let queued =
                        |deadline| within(deadline, batcher.submit::<S, _, _>(deadline, key, input, run));
                    let answered = budget.spend(queued).await??;
                    // A write refused before its batch ran (its deadline passed) carried none.
                    if S::WRITES && answered.size > 0 {
                        crate::engine::trace::batch_writes(answered.size);
                    }
                    if let Some(answer) = settled(answered.outcome) {
                        return answer;
                    }
                    // The rows (or, for a read, the table) the batch met locked: the rest
                    // waits for them on a pooled connection, within what is left of the
                    // budget.
                    answered.input.ok_or_else(crate::engine::lock_wait::budget_spent)?
                }
                _ => input,
            };
            budget.spend(|deadline| db.on_pool(deadline, move |conn| rest(conn, input))).await
        })
    }
}

impl<T: Send + 'static> Plan<T> {
    /// The whole work on one blocking connection.
    fn blocking(self) -> impl FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static {
        move |conn: &mut DbConn| match self {
            Plan::Blocking(work) => work(conn),
            Plan::Batched(staged) => staged.blocking(conn),
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

    /// A read that is the batched statement `S` over `input` (a read's: `S::WRITES` is
    /// false, and `S::one` settles every input). On SQLite it runs alone on a pooled
    /// connection; on PostgreSQL `input` joins the thread's next batch of `S`
    /// (`engine/pg_batcher.rs`), with the reads of the same statement waiting at the same
    /// moment, and runs alone on a pooled connection only when that batch met a lock held
    /// longer than a batch waits. (`summary`: as for [`Read::new`].)
    pub(crate) fn batched<S: BatchedStatement<Output = T>>(summary: &'static str, input: S::Input) -> Self {
        Read { summary, plan: Plan::Batched(Box::new(Staged::<S> { input, rest: alone::<S> })) }
    }
}

/// A batched read's statement over `input` alone (its [`Read::batched`] rest): `Internal`
/// if it does not settle it, which a read's statement always does.
fn alone<S: BatchedStatement>(conn: &mut DbConn, input: S::Input) -> Result<S::Output, StoreError> {
    ready(S::one(conn.statement(), &input))?
        .ok_or_else(|| StoreError::Internal("a batched read's statement did not settle its read".to_owned()))
}

impl<T: Send + 'static> Write<T> {
    /// A write: `work` opens its transaction with `db_write!` where its statements
    /// must commit together (one autocommit statement, or several that need not, may run as
    /// they are: the rate-limit counters' sweep and hit).
    /// `summary`: as for [`Read::new`].
    pub fn new(
        summary: &'static str,
        work: impl FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    ) -> Self {
        Write { summary, plan: Plan::Blocking(Box::new(work)) }
    }

    /// A write whose common case the batched statement `S` settles (`S::key` gives the
    /// record `input` changes, `None` when it cannot), and whose other cases `rest` answers
    /// in a transaction of its own. On SQLite the writer runs `S` over `input` alone and then,
    /// when needed, `rest`, in one job; on PostgreSQL `input` joins the thread's next batch
    /// of `S` (`engine/pg_batcher.rs`), and `rest` runs only when the batch did not
    /// settle it (or met its row locked longer than a batch waits).
    /// (`summary`: as for [`Read::new`], of the whole.)
    pub(crate) fn batched<S: BatchedStatement<Output = T>>(
        summary: &'static str,
        input: S::Input,
        rest: fn(&mut DbConn, S::Input) -> Result<T, StoreError>,
    ) -> Self {
        Write { summary, plan: Plan::Batched(Box::new(Staged::<S> { input, rest })) }
    }
}

impl Database {
    /// Runs `read` on a pooled connection on this thread, for a one-shot command (`wpds
    /// token issue`) or the start-up (the demo's check for an empty database), where no
    /// request waits and no runtime runs: it waits for a connection as long as the pool's
    /// timeout, and its statements as long as the connection's.
    pub fn read_now<T: Send + 'static>(&self, read: Read<T>) -> Result<T, StoreError> {
        read.plan.blocking()(&mut self.conn()?)
    }

    /// [`Database::read_now`] for a write (on SQLite too on a pooled connection: its
    /// transaction takes the write lock itself).
    pub fn write_now<T: Send + 'static>(&self, write: Write<T>) -> Result<T, StoreError> {
        write.plan.blocking()(&mut self.conn()?)
    }

    /// Runs `read` within what is left of `budget` (see the module documentation for
    /// which connection serves it), in its span (`trace`).
    pub async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        budget: &Budget,
        read: Read<T>,
    ) -> Result<T, StoreError> {
        let batched = self.batcher().is_some() && matches!(read.plan, Plan::Batched(_));
        let connection = if batched { "batch" } else { "pool" };
        let work = async move {
            match read.plan {
                Plan::Batched(staged) if batched => staged.batched(self, budget).await,
                plan => budget.spend(|deadline| self.plan_on_pool(deadline, plan)).await,
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
        let connection = match (&write.plan, self.writer()) {
            (_, Some(_)) => "writer",
            (Plan::Batched(_), None) => "batch",
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
        match plan {
            Plan::Batched(staged) => staged.batched(self, budget).await,
            plan => budget.spend(|deadline| self.plan_on_pool(deadline, plan)).await,
        }
    }

    /// Runs `plan` on a pooled connection on a blocking thread, until `deadline` at most, as
    /// one unit.
    async fn plan_on_pool<T: Send + 'static>(
        self: &Arc<Self>,
        deadline: Instant,
        plan: Plan<T>,
    ) -> Result<T, StoreError> {
        let db = Arc::clone(self);
        self.on_blocking(deadline, move || match plan {
            Plan::Blocking(work) => db.run_until(deadline, work),
            Plan::Batched(staged) => db.run_until(deadline, move |conn| staged.blocking(conn)),
        })
        .await
    }

    /// Runs a batch of `S` over `inputs` until `deadline` at most: on a shared connection of
    /// this thread or, where there are none, a pooled one ([`Database::run_batch_until`]);
    /// gives the inputs back unless the deadline passed on a pooled connection (they are
    /// then on its blocking thread).
    async fn run_batch<S: BatchedStatement>(
        self: Arc<Self>,
        deadline: Instant,
        inputs: Vec<S::Input>,
    ) -> crate::engine::pg_batcher::Ran<S> {
        if let Some(shared) = self.shared() {
            let outcome = within(deadline, shared.run(inputs.as_slice(), statement::<S>)).await;
            return (Some(inputs), outcome.and_then(|outcome| outcome));
        }
        let db = Arc::clone(&self);
        let work = move || {
            let outcome =
                db.run_batch_until(deadline, |conn| ready(statement::<S>(conn.statement(), &inputs)));
            Ok((inputs, outcome))
        };
        match self.on_blocking(deadline, work).await {
            Ok((inputs, outcome)) => (Some(inputs), outcome),
            Err(late) => (None, Err(late)),
        }
    }

    /// Whether the database serves now, as a read (for `/readyz`): a trivial query succeeds
    /// on a connection of the pool and, on SQLite, the writer's last attempt to write
    /// succeeded. When it failed (a read-only file, a full disk, an I/O error), the writer
    /// makes an attempt that changes nothing (on a fresh connection; `Writer::probe`), so
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

/// The answer a batched write's statement ([`Write::batched`]) settled: its result, or its
/// failure; `None` when its rest must run: the statement did not settle it, or met a row
/// locked longer than a batch waits (the rest waits within the budget).
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
