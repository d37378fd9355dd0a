//! The PostgreSQL batcher: the work of one statement from the requests waiting at the same
//! moment, as one statement over arrays in autocommit — parsed, planned, executed and
//! committed once for all of them ([`crate::engine::batch`] says what a batch is on both
//! engines). It carries the hot write's common case, and the reads of one statement that
//! every request makes when the authentication cache does not know the answer.
//!
//! Why: on PostgreSQL each statement alone costs the database its protocol round, its
//! executor's start and, for a write, its commit (and, behind a pooler that keeps no
//! prepared statement, its parsing and planning); that cost per statement is the ceiling of
//! every instance sharing the database. One statement carrying many requests' work costs
//! the database little more than its executor's work on each row.
//!
//! Below, "a write" stands for any work the batcher carries: a read differs only in that
//! reads of one key may share a batch ([`crate::engine::BatchedStatement::WRITES`]), and in
//! how its batches are reported.
//!
//! How:
//! - Each worker thread has, per batched statement, a lane: a queue, and at most one batch
//!   in flight. A write (or read) joins its thread's queue; when no batch is in flight it starts the
//!   lane's driver, a task on the same thread, which takes whatever is queued
//!   ([`crate::engine::batch::take`]), runs it, answers each write, and takes the next batch
//!   at once, until the queue is empty. Nothing waits to fill a batch: a write alone is
//!   sent as soon as the thread runs the driver. A queue holds at most the writes of the
//!   thread's requests in flight (each request waits for its own), which the server's cap
//!   on connections per worker bounds; a batch carries at most
//!   [`crate::engine::MAX_BATCH`].
//! - The statement runs where a single statement runs (the write hands the batcher how,
//!   [`crate::engine::work`]): on one of the thread's shared, pipelining connections
//!   ([`crate::engine::shared_pg`]), or, where there are none (behind a pooler that keeps no
//!   prepared statement), on a pooled connection
//!   ([`crate::Database::run_batch_until`]), as an unnamed statement parsed once per batch.
//!   The batcher itself knows only lanes, queues and answers. Its lock wait is [`crate::engine::shared_pg::LOCK_WAIT`] at most (the role's, behind a pooler that keeps
//!   prepared statements), so a row held elsewhere holds the batch up briefly, and then each
//!   of its writes waits for it on its own, within its request's budget.
//! - A batch's deadline is the latest of its writes'; each write's request still waits only
//!   until its own ([`crate::engine::work`]), and answers `Unavailable` then, while its write
//!   may still commit.
//! - The driver answers every write it took, whatever happens: with its row, with the
//!   batch's error, or (its deadline passed) `Unavailable`. Dropped unfinished (a panic, the
//!   runtime shutting down), it lets the next write start a new driver; the writes it held
//!   get no answer, which their requests report as a failure of the server.

use crate::engine::batch::{BatchObserver, BatchReport, BatchedStatement, Queued, failed, take};
use crate::error::StoreError;
use futures_channel::oneshot;
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// The batcher of one [`Database`] on PostgreSQL: its lanes, one per thread and batched
/// statement.
pub(crate) struct PgBatcher {
    /// Tells this database's lanes apart from another's on the same thread (tests run
    /// several servers in one process).
    id: u64,
    /// Hears of each committed batch ([`crate::Database::observe_batches`]).
    observer: Arc<OnceLock<BatchObserver>>,
}

/// What the batcher answers a write.
pub(crate) struct Answered<S: BatchedStatement> {
    /// The write's input, for its own transaction when the batch did not settle it; `None`
    /// when the batch's deadline passed before it answered (every write of it has given up).
    pub input: Option<S::Input>,
    /// How many its batch carried (this one included).
    pub size: usize,
    /// The statement's answer for this write (`None`: not settled), or the batch's error.
    pub outcome: Result<Option<S::Output>, StoreError>,
}

/// One thread's queue for one batched statement.
struct Lane<S: BatchedStatement> {
    state: Mutex<LaneState<S>>,
}

struct LaneState<S: BatchedStatement> {
    queue: VecDeque<Member<S>>,
    /// Whether the lane's driver runs (a batch is in flight, or about to be taken).
    driving: bool,
}

/// A queued write.
struct Member<S: BatchedStatement> {
    key: S::Key,
    input: S::Input,
    deadline: Instant,
    reply: oneshot::Sender<Answered<S>>,
}

impl<S: BatchedStatement> Queued for Member<S> {
    type Key = S::Key;

    fn key(&self) -> Option<&S::Key> {
        // Reads of one key share a batch; writes of one record never do.
        S::WRITES.then_some(&self.key)
    }

    fn deadline(&self) -> Instant {
        self.deadline
    }

    fn abandoned(&self) -> bool {
        self.reply.is_canceled()
    }

    fn refuse(self, error: StoreError) {
        let _ = self.reply.send(Answered { input: Some(self.input), size: 0, outcome: Err(error) });
    }
}

/// A thread's lanes: (batcher, statement) → `Arc<Lane<S>>`.
type Lanes = Vec<(u64, TypeId, Arc<dyn Any + Send + Sync>)>;

thread_local! {
    static LANES: RefCell<Lanes> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl PgBatcher {
    /// A batcher with no lane yet.
    pub(crate) fn new() -> Self {
        PgBatcher { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), observer: Arc::new(OnceLock::new()) }
    }

    /// Has `observer` hear of every batch that commits from now on, once its writes are
    /// answered (on the thread that ran it: keep it cheap). Only the first is kept.
    pub(crate) fn observe(&self, observer: BatchObserver) {
        let _ = self.observer.set(observer);
    }

    /// Queues `input` (whose record is `key`) in this thread's lane for `S`, starting the
    /// lane's driver on this thread's runtime if it is not running, with `run` to run its
    /// batches (the statement over a batch's inputs until the deadline given: the inputs
    /// back, unless they could not be had back, and the statement's answer for each);
    /// answers once the write's batch has run. `Internal` when called outside a runtime, or
    /// when the batch ended without answering (its driver panicked).
    pub(crate) fn submit<S, R, F>(
        &self,
        deadline: Instant,
        key: S::Key,
        input: S::Input,
        run: R,
    ) -> impl Future<Output = Result<Answered<S>, StoreError>> + Send + 'static
    where
        S: BatchedStatement,
        R: Fn(Instant, Vec<S::Input>) -> F + Send + 'static,
        F: Future<Output = Ran<S>> + Send + 'static,
    {
        let lane = self.lane::<S>();
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut state = lock(&lane.state);
            state.queue.push_back(Member { key, input, deadline, reply });
            !std::mem::replace(&mut state.driving, true)
        };
        let runtime = tokio::runtime::Handle::try_current();
        if start {
            match &runtime {
                Ok(runtime) => {
                    runtime.spawn(drive(lane, run, Arc::clone(&self.observer)));
                }
                Err(_) => lock(&lane.state).driving = false,
            }
        }
        async move {
            runtime.map_err(|e| StoreError::Internal(format!("a batched write outside a runtime: {e}")))?;
            answer.await.map_err(|_| {
                StoreError::Internal(
                    "the batch ended without answering a write: its driver panicked".to_owned(),
                )
            })
        }
    }

    /// This thread's lane for `S`.
    fn lane<S: BatchedStatement>(&self) -> Arc<Lane<S>> {
        LANES.with(|lanes| {
            let mut lanes = lanes.borrow_mut();
            let statement = TypeId::of::<S>();
            let found = lanes.iter().find(|(id, of, _)| *id == self.id && *of == statement);
            if let Some(lane) = found.and_then(|(_, _, lane)| Arc::clone(lane).downcast::<Lane<S>>().ok()) {
                return lane;
            }
            let lane = Arc::new(Lane::<S> {
                state: Mutex::new(LaneState { queue: VecDeque::new(), driving: false }),
            });
            lanes.push((self.id, statement, Arc::clone(&lane) as Arc<dyn Any + Send + Sync>));
            lane
        })
    }
}

/// What running a batch gives back: its inputs (`None` when they could not be had back: its
/// deadline passed while they were on a blocking thread), and the statement's answer for
/// each, or the batch's error.
pub(crate) type Ran<S> = (
    Option<Vec<<S as BatchedStatement>::Input>>,
    Result<Vec<Option<<S as BatchedStatement>::Output>>, StoreError>,
);

/// The lane's driver: batch after batch until the queue is empty, each run by `run`.
async fn drive<S, R, F>(lane: Arc<Lane<S>>, run: R, observer: Arc<OnceLock<BatchObserver>>)
where
    S: BatchedStatement,
    R: Fn(Instant, Vec<S::Input>) -> F,
    F: Future<Output = Ran<S>>,
{
    let mut driving = Driving { lane: &lane, done: false };
    loop {
        let mut batch = {
            let mut state = lock(&lane.state);
            let batch = take(&mut state.queue);
            if batch.is_empty() {
                state.driving = false;
                driving.done = true;
                return;
            }
            batch
        };
        batch.sort_by(|a, b| a.key.cmp(&b.key));
        let deadline = batch.iter().map(|write| write.deadline).max().unwrap_or_else(Instant::now);
        let (inputs, replies): (Vec<S::Input>, Vec<_>) =
            batch.into_iter().map(|write| (write.input, write.reply)).unzip();
        let writes = inputs.len();
        let (inputs, outcome) = run(deadline, inputs).await;
        let committed = outcome.is_ok();
        answer(replies, inputs, writes, outcome);
        if committed && let Some(observe) = observer.get() {
            let (writes, reads) = if S::WRITES { (writes, 0) } else { (0, writes) };
            observe(BatchReport { writes, reads });
        }
    }
}

/// Clears the lane's `driving` when its driver is dropped unfinished, so the next write
/// starts another.
struct Driving<'a, S: BatchedStatement> {
    lane: &'a Lane<S>,
    done: bool,
}

impl<S: BatchedStatement> Drop for Driving<'_, S> {
    fn drop(&mut self) {
        if !self.done {
            lock(&self.lane.state).driving = false;
        }
    }
}

/// Answers each write of a batch of `writes` from `outcome`, in order.
fn answer<S: BatchedStatement>(
    replies: Vec<oneshot::Sender<Answered<S>>>,
    inputs: Option<Vec<S::Input>>,
    writes: usize,
    outcome: Result<Vec<Option<S::Output>>, StoreError>,
) {
    let outcome = match outcome {
        Ok(rows) if rows.len() == writes => Ok(rows),
        Ok(rows) => Err(StoreError::Internal(format!(
            "a batched statement answered {} writes of {writes}",
            rows.len()
        ))),
        Err(error) => Err(error),
    };
    let mut inputs = inputs.map(Vec::into_iter);
    match outcome {
        Ok(rows) => {
            for (reply, row) in replies.into_iter().zip(rows) {
                let input = inputs.as_mut().and_then(Iterator::next);
                let _ = reply.send(Answered { input, size: writes, outcome: Ok(row) });
            }
        }
        Err(error) => {
            for reply in replies {
                let input = inputs.as_mut().and_then(Iterator::next);
                let _ = reply.send(Answered { input, size: writes, outcome: Err(failed(&error)) });
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
