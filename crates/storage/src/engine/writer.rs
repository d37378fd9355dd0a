//! The SQLite writer: one thread that runs the serving process's writes, in batches
//! (what a batch is, on both engines: [`crate::engine::batch`]).
//!
//! SQLite admits one writer at a time, so handing each write to whichever pooled
//! connection is free only makes the writes queue on the database's lock, and each one
//! pays two thread hand-offs (async worker → blocking pool → async worker) for a statement
//! that takes microseconds. The writer instead owns one connection on its own thread and
//! takes jobs from a queue:
//!
//! - It waits for the first job, opens `BEGIN IMMEDIATE`, runs that job and every job that
//!   is already queued (at most [`MAX_BATCH`]), then commits once and only then answers
//!   each of them. Under load the queue is never empty, so the thread never sleeps and one
//!   commit serves many writes (group commit); an idle server runs one job per transaction.
//! - A job's own transaction (`db_write!`) becomes a savepoint inside the batch,
//!   so a job that fails rolls back exactly what it would have rolled back on its own; a
//!   statement a job runs outside `db_write!` is atomic by itself, as in autocommit mode.
//!   Every answer waits for the batch's `COMMIT`: a write is acknowledged only once it is
//!   in the database, and when the commit fails every job of the batch gets its error.
//! - Each job carries the deadline of its request's budget for the database. A job whose
//!   deadline has passed is refused (`Unavailable`) without running; the lock wait of
//!   `BEGIN IMMEDIATE` is cut to what is left of the first job's budget.
//! - A job that fails in the database (`Unavailable` or `Internal`) ends its batch, so no
//!   later job runs on a transaction the engine may have rolled back. A job that panics
//!   rolls its whole batch back (every job of it answers `Internal`).
//! - After any failure in the database (the connection not opening, `BEGIN IMMEDIATE`, a
//!   job, `COMMIT`) or a panic, the connection is discarded and the next batch opens a
//!   fresh one. A connection opened while the file was read-only stays read-only for its
//!   life, and one that met a full disk or an I/O error may hold state that no longer
//!   matches the file: reopening is what lets writes succeed again once the fault is
//!   lifted, without a restart. Such faults (SQLite's READONLY, FULL, IOERR and CANTOPEN
//!   families) answer `Unavailable`, so the client sees 503 with `Retry-After`.
//! - [`Writer::is_healthy`] says whether the writer's last attempt to write succeeded:
//!   false from a batch that failed for the database's sake (not for a job's own rule or a
//!   late job) until one commits. [`Writer::probe`] makes an attempt that changes
//!   nothing, for readiness checks when no request writes.
//!
//! Reads do not come here: in WAL mode they run beside the writer on the pool.
//!
//! For the server's metrics, [`Writer::queue_depth`] tells how many writes wait, and a
//! function given to [`Writer::observe_batches`] hears of every committed batch
//! ([`BatchReport`]: its size), right after the batch's writes are answered, so that it
//! adds nothing to their latency. For traces, [`Writer::submit_counted`] answers a write
//! with the number of writes its commit carried.

use crate::engine::batch::{BatchObserver, BatchReport, MAX_BATCH, admit, failed};
use crate::engine::conn::{DbConn, transaction_open};
use crate::engine::lock_wait::{set_lock_wait, shortens};
use crate::error::StoreError;
use diesel::RunQueryDsl;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sqlite::SqliteConnection;
use futures_channel::oneshot;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, mpsc};
use std::task::{Context, Poll, Wake};
use std::thread::{JoinHandle, Thread, ThreadId};
use std::time::{Duration, Instant};

/// The writer's pool of (at most) one connection; built again to discard that connection.
pub(crate) type WriterPool = Pool<ConnectionManager<SqliteConnection>>;

/// `PRAGMA user_version`'s row.
#[derive(diesel::QueryableByName)]
struct UserVersion {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    user_version: i64,
}

/// The handle of the writer thread; dropping it lets the queued jobs finish and joins
/// the thread.
pub struct Writer {
    jobs: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    thread_id: ThreadId,
    healthy: Arc<AtomicBool>,
    queued: Arc<AtomicUsize>,
    observer: Arc<OnceLock<BatchObserver>>,
}

impl Writer {
    /// Starts the writer; `open` builds its pool of one connection (again after each
    /// fault, which discards the old pool and its connection); `lock_wait` is that
    /// connection's configured `busy_timeout`.
    pub(crate) fn start(
        open: Box<dyn Fn() -> WriterPool + Send>,
        lock_wait: Duration,
    ) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel();
        let healthy = Arc::new(AtomicBool::new(true));
        let queued = Arc::new(AtomicUsize::new(0));
        let observer = Arc::new(OnceLock::new());
        let pool = open();
        let batcher = Batcher {
            open,
            pool,
            lock_wait,
            conn: None,
            queue,
            healthy: Arc::clone(&healthy),
            queued: Arc::clone(&queued),
            observer: Arc::clone(&observer),
        };
        let thread = std::thread::Builder::new()
            .name("wpds-sqlite-writer".to_owned())
            .spawn(move || batcher.serve())
            .map_err(|e| StoreError::Internal(format!("cannot start the SQLite writer thread: {e}")))?;
        let thread_id = thread.thread().id();
        Ok(Writer { jobs: Some(jobs), thread: Some(thread), thread_id, healthy, queued, observer })
    }

    /// How many writes are queued and not yet taken into a batch.
    pub fn queue_depth(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Has `observer` hear of every batch that commits from now on, once its writes are
    /// answered (on the writer thread, before the next batch begins). Only the first
    /// observer given is kept.
    pub fn observe_batches(&self, observer: BatchObserver) {
        let _ = self.observer.set(observer);
    }

    /// Whether the writer's last attempt to write succeeded (true before the first): false
    /// once a batch failed for the database's sake (it could not open its connection, begin
    /// or commit, or a job met a database that was unavailable), until a batch commits.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// An attempt to write that changes nothing, in a batch like any write (on the writer's
    /// connection, reopened if the last batch failed): it sets the file's `user_version`
    /// header field (unused by the service) to the value it has, which writes a page and
    /// commits it. `BEGIN IMMEDIATE` alone would not do: in WAL mode it succeeds on a
    /// read-only file, and an empty commit writes no byte, so it would not meet a full
    /// disk either. Blocks the calling thread until its batch is done or refused at
    /// `deadline`; its outcome counts for [`Writer::is_healthy`] like any batch's.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn probe(&self, deadline: Instant) -> Result<(), StoreError> {
        wait(self.submit(deadline, |conn| {
            let DbConn::Sqlite(sqlite) = conn else {
                return Err(StoreError::Internal("the SQLite writer was given another engine".to_owned()));
            };
            let version =
                diesel::sql_query("PRAGMA user_version").get_result::<UserVersion>(&mut **sqlite)?;
            sqlite.batch_execute(&format!("PRAGMA user_version = {}", version.user_version))?;
            Ok(())
        }))
    }

    /// Queues `work` and answers with its result once its batch has committed.
    /// `Unavailable` when `deadline` passes before the work starts or before the database's
    /// lock comes.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn submit<T, F>(
        &self,
        deadline: Instant,
        work: F,
    ) -> impl Future<Output = Result<T, StoreError>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    {
        let counted = self.submit_counted(deadline, work);
        async move { counted.await.map(|(value, _)| value) }
    }

    /// [`Writer::submit`], answering the result with how many writes its batch committed
    /// (this one included): what a trace of the write says of the commit it waited for.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) fn submit_counted<T, F>(
        &self,
        deadline: Instant,
        work: F,
    ) -> impl Future<Output = Result<(T, usize), StoreError>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Pending { deadline, work, reply });
        self.queued.fetch_add(1, Ordering::Relaxed);
        let queued = self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if !queued {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
        async move {
            if !queued {
                return Err(StoreError::Unavailable("the SQLite writer has stopped".to_owned()));
            }
            answer.await.unwrap_or_else(|_| {
                Err(StoreError::Internal(
                    "the SQLite writer dropped a job unanswered: its work panicked".to_owned(),
                ))
            })
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.jobs.take());
        // A job holding the last handle would be dropped on the writer thread itself.
        if std::thread::current().id() != self.thread_id
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

/// A queued write.
trait Job: Send {
    /// When the request's budget for the database ends.
    fn deadline(&self) -> Instant;
    /// Runs the work inside the open batch; its result waits for the commit.
    fn run(self: Box<Self>, conn: &mut DbConn) -> Box<dyn Ran>;
    /// Answers `error` without running the work.
    fn refuse(self: Box<Self>, error: StoreError);
}

/// A write that has run and waits for its batch's commit.
trait Ran: Send {
    /// The work's error, when it failed in the database itself (the batch ends after it).
    fn failed_in_database(&self) -> Option<&StoreError>;
    /// Answers the result with the batch's size, or the commit's error when the batch did
    /// not commit.
    fn answer(self: Box<Self>, committed: Result<usize, &StoreError>);
}

/// Where a write's result goes: with its batch's size, once the batch committed.
type Reply<T> = oneshot::Sender<Result<(T, usize), StoreError>>;

struct Pending<T, F> {
    deadline: Instant,
    work: F,
    reply: Reply<T>,
}

struct Done<T> {
    result: Result<T, StoreError>,
    reply: Reply<T>,
}

impl<T, F> Job for Pending<T, F>
where
    T: Send + 'static,
    F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
{
    fn deadline(&self) -> Instant {
        self.deadline
    }

    fn run(self: Box<Self>, conn: &mut DbConn) -> Box<dyn Ran> {
        let Pending { work, reply, .. } = *self;
        Box::new(Done { result: work(conn), reply })
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        // The request may have gone; nobody is left to tell.
        let _ = self.reply.send(Err(error));
    }
}

impl<T: Send> Ran for Done<T> {
    fn failed_in_database(&self) -> Option<&StoreError> {
        match &self.result {
            Err(error @ (StoreError::Unavailable(_) | StoreError::Internal(_))) => Some(error),
            _ => None,
        }
    }

    fn answer(self: Box<Self>, committed: Result<usize, &StoreError>) {
        let result = match committed {
            Ok(writes) => self.result.map(|value| (value, writes)),
            Err(error) => Err(failed(error)),
        };
        let _ = self.reply.send(result);
    }
}

/// The writer thread's state.
struct Batcher {
    open: Box<dyn Fn() -> WriterPool + Send>,
    pool: WriterPool,
    lock_wait: Duration,
    conn: Option<DbConn>,
    queue: mpsc::Receiver<Box<dyn Job>>,
    healthy: Arc<AtomicBool>,
    queued: Arc<AtomicUsize>,
    observer: Arc<OnceLock<BatchObserver>>,
}

impl Batcher {
    /// The next queued job without waiting, counted out of the queue.
    fn take_queued(&self) -> Option<Box<dyn Job>> {
        let job = self.queue.try_recv().ok()?;
        self.queued.fetch_sub(1, Ordering::Relaxed);
        Some(job)
    }

    /// Serves batches until every [`Writer`] handle is gone and the queue is empty.
    fn serve(mut self) {
        while let Ok(first) = self.queue.recv() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.batch(first);
        }
    }

    /// One transaction: `first`, then whatever is queued, then the commit and the answers.
    fn batch(&mut self, first: Box<dyn Job>) {
        if let Err(late) = admit(first.deadline()) {
            return first.refuse(late);
        }
        let left = first.deadline().saturating_duration_since(Instant::now());
        let mut conn = match self.conn.take() {
            Some(conn) => conn,
            None => match self.pool.get_timeout(left) {
                Ok(conn) => DbConn::Sqlite(conn),
                Err(e) => {
                    let error = StoreError::from(e);
                    self.failed(None, Some(&error));
                    return first.refuse(error);
                }
            },
        };
        if let Err(e) = self.begin(&mut conn, left) {
            self.failed(Some(conn), Some(&e));
            return first.refuse(e);
        }
        let mut ran: Vec<Box<dyn Ran>> = Vec::new();
        let mut fault = None;
        let mut vanished = false;
        let this = &*self;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut next = Some(first);
            while let Some(job) = next.take() {
                if let Err(late) = admit(job.deadline()) {
                    job.refuse(late);
                } else {
                    let done = job.run(&mut conn);
                    fault = done.failed_in_database().cloned();
                    ran.push(done);
                    vanished = !batch_open(&mut conn);
                    if fault.is_some() || vanished {
                        break;
                    }
                }
                if ran.len() < MAX_BATCH {
                    next = this.take_queued();
                }
            }
        }));
        let panicked = outcome.is_err();
        let committed = if panicked {
            Err(StoreError::Internal("a write panicked; its batch was rolled back".to_owned()))
        } else if vanished {
            // SQLite rolled the batch back by itself (a full disk, an I/O error): nothing
            // to commit, and every job of the batch answers with the cause.
            Err(fault.clone().unwrap_or_else(|| {
                StoreError::Unavailable("SQLite rolled the batch's transaction back".to_owned())
            }))
        } else {
            commit(&mut conn)
        };
        let mut report = None;
        match (&committed, fault) {
            (Err(e), _) => {
                log::error!("SQLite writer: batch of {} not committed: {e}", ran.len());
                // Dropped inside its transaction, the connection is closed, which rolls the
                // batch back. A panic is a defect of the code, not a fault of the database.
                self.failed(Some(conn), (!panicked).then_some(e));
            }
            (Ok(()), Some(fault)) => self.failed(Some(conn), Some(&fault)),
            (Ok(()), None) => {
                self.conn = Some(conn);
                self.succeeded();
                report =
                    self.observer.get().map(|observe| (observe, BatchReport { writes: ran.len(), reads: 0 }));
            }
        }
        // The observer hears of a committed batch after its writes are answered: what it
        // does (metrics) is then off the path of every write waiting for this batch, and
        // of the next batch.
        let writes = ran.len();
        for done in ran {
            done.answer(committed.as_ref().map(|()| writes));
        }
        if let Some((observe, report)) = report {
            observe(report);
        }
    }

    /// After a failure in the database (`cause`; `None` for a panic): discards `conn` and
    /// the pool that made it, so the next batch opens a fresh connection. An `Unavailable`
    /// database makes the writer unhealthy.
    fn failed(&mut self, conn: Option<DbConn>, cause: Option<&StoreError>) {
        // Back in the old pool, which is dropped right after: its connection is closed.
        drop(conn);
        self.pool = (self.open)();
        if let Some(error @ StoreError::Unavailable(_)) = cause
            && self.healthy.swap(false, Ordering::AcqRel)
        {
            log::warn!("SQLite writer: {error}; writes answer 503 until one commits on a fresh connection");
        }
    }

    /// After a commit: the writer is healthy.
    fn succeeded(&self) {
        if !self.healthy.swap(true, Ordering::AcqRel) {
            log::info!("SQLite writer: writes commit again");
        }
    }

    /// `BEGIN IMMEDIATE`, waiting for the lock at most `left` (the first job's budget).
    fn begin(&self, conn: &mut DbConn, left: Duration) -> Result<(), StoreError> {
        let shorten = shortens(left, self.lock_wait);
        if shorten {
            set_lock_wait(conn, left)?;
        }
        let DbConn::Sqlite(sqlite) = &mut *conn else {
            return Err(StoreError::Internal("the SQLite writer was given another engine".to_owned()));
        };
        let began = AnsiTransactionManager::begin_transaction_sql(&mut **sqlite, "BEGIN IMMEDIATE");
        if shorten {
            // Inside the batch the lock is held: nothing else waits for it.
            set_lock_wait(conn, self.lock_wait)?;
        }
        Ok(began?)
    }
}

/// Polls `future` to its end on the calling thread, which sleeps while it is pending.
fn wait<T>(future: impl Future<Output = T>) -> T {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

/// Whether the batch's transaction is still open on `conn`.
fn batch_open(conn: &mut DbConn) -> bool {
    match conn {
        DbConn::Sqlite(conn) => transaction_open(conn),
        DbConn::Postgres(_) => false,
    }
}

/// Commits the batch's transaction.
fn commit(conn: &mut DbConn) -> Result<(), StoreError> {
    match conn {
        DbConn::Sqlite(conn) => {
            let conn: &mut SqliteConnection = conn;
            Ok(<AnsiTransactionManager as TransactionManager<SqliteConnection>>::commit_transaction(conn)?)
        }
        DbConn::Postgres(_) => {
            Err(StoreError::Internal("the SQLite writer was given another engine".to_owned()))
        }
    }
}
