//! What a batch is, on both engines: work that waited at the same moment, done together, so
//! that one commit (and, on PostgreSQL, one statement) serves many requests.
//!
//! Each engine has its batcher: on SQLite the writer thread ([`crate::engine::writer`]),
//! which runs any write; on PostgreSQL the batcher of one statement's work
//! ([`crate::engine::pg_batcher`]), which runs, as one statement over arrays
//! ([`BatchedStatement`]), the hot write's common case (leaving every other case to the
//! write's own transaction) and the reads of one statement that every request makes when
//! the authentication cache does not know the answer (the token's caller, the membership).
//! Both answer the same questions the same way:
//!
//! | question | SQLite writer | PostgreSQL batcher |
//! |---|---|---|
//! | when is a batch taken? | when its connection comes free: the first job queued, then each job queued behind it, one at a time while the batch runs, until none is left (never after a timer or a window) | per worker thread and statement, when the lane's batch in flight (at most one) has answered: whatever is queued then, at once ([`take`]) |
//! | how large? | at most [`MAX_BATCH`] writes | the same, writes or reads |
//! | a batch of one? | one job in its own transaction | the statement for one alone, as before work was batched ([`statement`]) |
//! | which work may share it? | any write: each runs as a savepoint of the batch's transaction, in the order they came | a write's: those of one statement whose records differ (a second write of a record waits for the next batch, so a record's writes apply in the order they came); a read's: any of one statement, a key asked twice answered to each ([`BatchedStatement::WRITES`]) |
//! | work whose deadline has passed? | not run: refused `Unavailable` at its turn ([`admit`]) | the same |
//! | work whose request has given up? | run all the same: the writer does not look (its answer goes unread) | dropped unrun ([`take`]) |
//! | when is it answered? | once its batch has committed: no write is acknowledged before | the same (the statement runs in autocommit: its rows come back once it has committed) |
//! | a request whose deadline passes while its batch runs? | answered `Unavailable` at its deadline; its write may still commit | the same |
//! | a batch that fails? | every write of it answers the batch's error, what it would have got alone in a transaction that failed so ([`failed`]) | the same, for writes and reads; a batch that waited too long for a lock (`is_lock_wait`) sends each of its members to its own connection, as one alone whose statement met the lock |
//! | work the batch does not settle? | — (every write runs whole) | a write's own transaction (conflict, first write, unknown project, out-of-range value), with today's answers; a read's statement settles every read |
//! | what do the metrics count? | writes per batch | writes per batch of writes, reads per batch of reads ([`BatchReport`]) |

use crate::engine::lock_wait::budget_spent;
use crate::engine::statement::{StatementConn, StatementFuture};
use crate::error::StoreError;
use std::collections::VecDeque;
use std::time::Instant;

/// The most writes one batch carries: enough to serve every connection of a busy server in
/// one commit, few enough that a batch holds its locks for well under a millisecond of
/// statements.
pub(crate) const MAX_BATCH: usize = 128;

/// The session setting that has PostgreSQL keep one plan for a prepared statement: set on
/// every connection whose session is the server's (not behind a transaction pooler, where
/// the role's settings hold, `docs/operations.md`).
///
/// Why: PostgreSQL plans a prepared statement for its parameters' values five times, then
/// keeps its generic plan only if that looks no dearer than those. The statement over arrays
/// is estimated for the arrays' real length when planned for its values, and for 10 rows
/// when generic, so for batches of fewer writes the generic plan looked dearer and every
/// batch was planned again (a third of a one-write batch's time on the database, measured
/// with pgbench). The plan is the same for every length (a nested loop over the arrays, an
/// index lookup per write), and the other statements are lookups by key, whose generic plan
/// PostgreSQL kept anyway.
pub(crate) const GENERIC_PLANS: &str = "SET plan_cache_mode = force_generic_plan";

/// A committed batch, as an observer of batches hears of it
/// ([`crate::Database::observe_batches`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchReport {
    /// The writes it committed (none in a batch of reads).
    pub writes: usize,
    /// The reads it answered (PostgreSQL's batched reads; none in a batch of writes).
    pub reads: usize,
}

/// Hears of each committed batch, on the thread that ran it (keep it cheap).
pub type BatchObserver = Box<dyn Fn(BatchReport) + Send + Sync>;

/// Work of one statement that carries many requests' inputs at once (on PostgreSQL, one
/// statement over arrays: parsed, planned, executed and committed once for the batch), with
/// the same statement for one input where writes are batched otherwise (SQLite's writer)
/// or reads are not batched (SQLite). A write's common case runs through
/// [`crate::Write::batched`], a read through [`crate::Read::batched`].
pub trait BatchedStatement: Send + Sync + 'static {
    /// Whether the statement writes. A write's inputs of one key never share a batch (a
    /// record's writes apply in the order they came) and its batches are reported as
    /// writes; a read's inputs of one key may (each is answered), and its batches are
    /// reported as reads ([`BatchReport`]).
    const WRITES: bool;
    /// One request's input.
    type Input: Send + Sync + 'static;
    /// The record an input changes or asks for. A batch's inputs are sent in key order (so
    /// two batches of writes meeting on their records lock them in the same order).
    type Key: Ord + Send + 'static;
    /// What the statement answers for an input it settled.
    type Output: Send + 'static;

    /// The record `input` changes or asks for, or `None` when the statement cannot settle
    /// it (the rest answers at once: a write's own transaction).
    fn key(input: &Self::Input) -> Option<Self::Key>;

    /// The one statement over `inputs` (in key order; distinct keys when it writes), in
    /// autocommit: for each input, in order, its answer, or `None` where the statement did
    /// not settle it.
    fn many<'c>(
        conn: StatementConn<'c>,
        inputs: &'c [Self::Input],
    ) -> StatementFuture<'c, Vec<Option<Self::Output>>>;

    /// The statement over `input` alone, in autocommit or inside another batch (SQLite's
    /// writer's transaction): its answer, or `None` where it did not settle it. A batch of
    /// one runs it (`batch::statement`), so it must settle what `many` settles; a read's
    /// settles every input.
    fn one<'c>(conn: StatementConn<'c>, input: &'c Self::Input) -> StatementFuture<'c, Option<Self::Output>>;
}

/// The statement of a batch of `inputs` (in key order): for one input, the statement for
/// one ([`BatchedStatement::one`]), exactly what one alone ran before work was batched (a
/// client alone meets no other cost, and PostgreSQL plans the statement over arrays only
/// for batches that carry several inputs); else the statement over arrays
/// ([`BatchedStatement::many`]).
pub(crate) fn statement<'c, S: BatchedStatement>(
    conn: StatementConn<'c>,
    inputs: &'c [S::Input],
) -> StatementFuture<'c, Vec<Option<S::Output>>> {
    match inputs {
        [alone] => Box::pin(async move { Ok(vec![S::one(conn, alone).await?]) }),
        _ => S::many(conn, inputs),
    }
}

/// Whether a queued write may still run: `Err` (what it answers, `Unavailable`) once its
/// deadline has passed.
pub(crate) fn admit(deadline: Instant) -> Result<(), StoreError> {
    if deadline <= Instant::now() { Err(budget_spent()) } else { Ok(()) }
}

/// What each write of a batch that failed with `error` answers: the error itself (the
/// batch's statements rolled back; a failure whose outcome is not known, as a connection
/// lost during the commit, is `Unavailable`, which leaves it open, as for a write alone).
pub(crate) fn failed(error: &StoreError) -> StoreError {
    error.clone()
}

/// A queued write (or read), as [`take`] sees it.
pub(crate) trait Queued {
    /// Its record, when work of one record may not share a batch (a write's).
    type Key: Ord;
    /// Its record.
    fn key(&self) -> Option<&Self::Key>;
    /// Its deadline.
    fn deadline(&self) -> Instant;
    /// Whether its request has given up (nobody waits for its answer).
    fn abandoned(&self) -> bool;
    /// Answers `error` without running it.
    fn refuse(self, error: StoreError);
}

/// The next batch from `queue`: what is queued now, in the order it came, at most
/// [`MAX_BATCH`], skipping a write whose request has given up (dropped unrun) or whose
/// deadline has passed (refused, [`admit`]) and leaving a write whose record is already in
/// the batch queued, in its place, for the next one (work without a record, as reads, is
/// never held back). Empty when nothing is left to run.
pub(crate) fn take<Q: Queued>(queue: &mut VecDeque<Q>) -> Vec<Q> {
    let mut batch: Vec<Q> = Vec::new();
    let mut later = VecDeque::new();
    while let Some(write) = queue.pop_front() {
        if batch.len() == MAX_BATCH {
            later.push_back(write);
            later.extend(queue.drain(..));
            break;
        }
        if write.abandoned() {
            continue;
        }
        if let Err(late) = admit(write.deadline()) {
            write.refuse(late);
            continue;
        }
        let taken = write.key().is_some_and(|key| batch.iter().any(|other| other.key() == Some(key)));
        if taken {
            later.push_back(write);
        } else {
            batch.push(write);
        }
    }
    *queue = later;
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[derive(Debug)]
    struct Write {
        key: u32,
        deadline: Instant,
        abandoned: bool,
        /// Whether work of its key may not share a batch (a write's; a read's may).
        exclusive: bool,
    }

    impl Queued for Write {
        type Key = u32;
        fn key(&self) -> Option<&u32> {
            self.exclusive.then_some(&self.key)
        }
        fn deadline(&self) -> Instant {
            self.deadline
        }
        fn abandoned(&self) -> bool {
            self.abandoned
        }
        fn refuse(self, error: StoreError) {
            assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
        }
    }

    fn write(key: u32) -> Write {
        Write { key, deadline: Instant::now() + Duration::from_secs(60), abandoned: false, exclusive: true }
    }

    fn keys(writes: &[Write]) -> Vec<u32> {
        writes.iter().map(|w| w.key).collect()
    }

    #[test]
    fn a_batch_takes_what_is_queued_in_order_and_leaves_a_second_write_of_a_record_for_the_next() {
        let mut queue: VecDeque<Write> = [1, 2, 1, 3, 2, 1].into_iter().map(write).collect();
        assert_eq!(keys(&take(&mut queue)), [1, 2, 3]);
        assert_eq!(keys(queue.make_contiguous()), [1, 2, 1]);
        assert_eq!(keys(&take(&mut queue)), [1, 2]);
        assert_eq!(keys(&take(&mut queue)), [1]);
        assert!(take(&mut queue).is_empty());
    }

    #[test]
    fn reads_of_one_key_share_a_batch() {
        let read = |key| Write { exclusive: false, ..write(key) };
        let mut queue: VecDeque<Write> = [1, 2, 1, 1].into_iter().map(read).collect();
        assert_eq!(keys(&take(&mut queue)), [1, 2, 1, 1]);
        assert!(queue.is_empty());
    }

    #[test]
    fn a_batch_holds_at_most_max_batch_writes_and_the_rest_keep_their_order() {
        let mut queue: VecDeque<Write> = (0..MAX_BATCH as u32 + 5).map(write).collect();
        assert_eq!(take(&mut queue).len(), MAX_BATCH);
        assert_eq!(
            keys(queue.make_contiguous()),
            (MAX_BATCH as u32..MAX_BATCH as u32 + 5).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_write_given_up_or_past_its_deadline_is_not_taken() {
        let mut queue: VecDeque<Write> = [1, 2, 3].into_iter().map(write).collect();
        queue[0].abandoned = true;
        queue[1].deadline = Instant::now();
        assert_eq!(keys(&take(&mut queue)), [3]);
        assert!(queue.is_empty());
    }
}
