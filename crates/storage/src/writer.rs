//! The SQLite writer: one thread that runs the serving process's writes, in batches.
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
//! - A job's own transaction ([`crate::db_write!`]) becomes a savepoint inside the batch,
//!   so a job that fails rolls back exactly what it would have rolled back on its own; a
//!   statement a job runs outside `db_write!` is atomic by itself, as in autocommit mode.
//!   Every answer waits for the batch's `COMMIT`: a write is acknowledged only once it is
//!   in the database, and when the commit fails every job of the batch gets its error.
//! - Each job carries the deadline of its request's budget for the database. A job whose
//!   deadline has passed is refused (`Unavailable`) without running; the lock wait of
//!   `BEGIN IMMEDIATE` is cut to what is left of the first job's budget.
//! - A job that fails in the database (`Unavailable` or `Internal`) ends its batch, so no
//!   later job runs on a transaction the engine may have rolled back. A job that panics
//!   rolls its whole batch back (every job of it answers `Internal`) and the connection is
//!   discarded; the thread goes on with a fresh one.
//!
//! Reads do not come here: in WAL mode they run beside the writer on the pool.

use crate::db::{DbConn, budget_spent, set_lock_wait, shortens};
use crate::error::StoreError;
use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sqlite::SqliteConnection;
use futures_channel::oneshot;
use std::cell::Cell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// The most jobs one transaction of the writer holds: enough to serve every connection of
/// a busy server in one commit, few enough that a batch holds the lock for well under a
/// millisecond of statements.
pub const MAX_BATCH: usize = 128;

thread_local! {
    static IN_BATCH: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is running a job of the writer's open batch (then
/// [`crate::db_write!`] opens a savepoint instead of `BEGIN IMMEDIATE`).
#[doc(hidden)]
pub fn in_batch() -> bool {
    IN_BATCH.with(Cell::get)
}

/// The handle of the writer thread; dropping it lets the queued jobs finish and joins
/// the thread.
pub struct Writer {
    jobs: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    thread_id: ThreadId,
}

impl Writer {
    /// Starts the writer on a pool of one connection; `lock_wait` is that connection's
    /// configured `busy_timeout`.
    pub(crate) fn start(
        pool: Pool<ConnectionManager<SqliteConnection>>,
        lock_wait: Duration,
    ) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel();
        let batcher = Batcher { pool, lock_wait, conn: None, queue };
        let thread = std::thread::Builder::new()
            .name("wpds-sqlite-writer".to_owned())
            .spawn(move || batcher.serve())
            .map_err(|e| StoreError::Internal(format!("cannot start the SQLite writer thread: {e}")))?;
        let thread_id = thread.thread().id();
        Ok(Writer { jobs: Some(jobs), thread: Some(thread), thread_id })
    }

    /// Queues `work` and answers with its result once its batch has committed.
    /// `Unavailable` when `deadline` passes before the work starts or before the database's
    /// lock comes.
    pub fn submit<T, F>(
        &self,
        deadline: Instant,
        work: F,
    ) -> impl Future<Output = Result<T, StoreError>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Pending { deadline, work, reply });
        let queued = self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
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
    /// Whether the work failed in the database itself (the batch ends after it).
    fn failed_in_database(&self) -> bool;
    /// Answers the result, or the commit's error when the batch did not commit.
    fn answer(self: Box<Self>, committed: Result<(), &StoreError>);
}

struct Pending<T, F> {
    deadline: Instant,
    work: F,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

struct Done<T> {
    result: Result<T, StoreError>,
    reply: oneshot::Sender<Result<T, StoreError>>,
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
    fn failed_in_database(&self) -> bool {
        matches!(self.result, Err(StoreError::Unavailable(_) | StoreError::Internal(_)))
    }

    fn answer(self: Box<Self>, committed: Result<(), &StoreError>) {
        let result = match committed {
            Ok(()) => self.result,
            Err(error) => Err(error.clone()),
        };
        let _ = self.reply.send(result);
    }
}

/// The writer thread's state.
struct Batcher {
    pool: Pool<ConnectionManager<SqliteConnection>>,
    lock_wait: Duration,
    conn: Option<DbConn>,
    queue: mpsc::Receiver<Box<dyn Job>>,
}

impl Batcher {
    /// Serves batches until every [`Writer`] handle is gone and the queue is empty.
    fn serve(mut self) {
        while let Ok(first) = self.queue.recv() {
            self.batch(first);
        }
    }

    /// One transaction: `first`, then whatever is queued, then the commit and the answers.
    fn batch(&mut self, first: Box<dyn Job>) {
        let left = first.deadline().saturating_duration_since(Instant::now());
        if left.is_zero() {
            return first.refuse(budget_spent());
        }
        let mut conn = match self.conn.take() {
            Some(conn) => conn,
            None => match self.pool.get_timeout(left) {
                Ok(conn) => DbConn::Sqlite(conn),
                Err(e) => return first.refuse(e.into()),
            },
        };
        if let Err(e) = self.begin(&mut conn, left) {
            // The connection is dropped: the pool discards it if a transaction is open.
            return first.refuse(e);
        }
        let mut ran: Vec<Box<dyn Ran>> = Vec::new();
        let queue = &self.queue;
        IN_BATCH.with(|flag| flag.set(true));
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut next = Some(first);
            while let Some(job) = next.take() {
                if job.deadline() <= Instant::now() {
                    job.refuse(budget_spent());
                } else {
                    let done = job.run(&mut conn);
                    let stop = done.failed_in_database();
                    ran.push(done);
                    if stop {
                        break;
                    }
                }
                if ran.len() < MAX_BATCH {
                    next = queue.try_recv().ok();
                }
            }
        }));
        IN_BATCH.with(|flag| flag.set(false));
        let committed = match outcome {
            Ok(()) => commit(&mut conn),
            Err(_) => Err(StoreError::Internal("a write panicked; its batch was rolled back".to_owned())),
        };
        match &committed {
            // Dropped inside its transaction, the connection is discarded by the pool and
            // closing it rolls the batch back.
            Err(e) => log::error!("SQLite writer: batch of {} not committed: {e}", ran.len()),
            Ok(()) => self.conn = Some(conn),
        }
        for done in ran {
            done.answer(committed.as_ref().map(|_| ()));
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
