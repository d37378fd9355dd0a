//! The SQLite writer thread against a real SQLite file per test: what one batch holds,
//! when its answers come, and what a failing, late or panicking job does to its batch.
//!
//! Each test holds the writer inside a first job (a gate) while it queues the others, so
//! that they are certain to share that job's batch.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use std::future::Future;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wpds_storage::engine::Writer;
use wpds_storage::{Database, DbConfig, DbConn, SqliteSynchronous, StoreError, db_run, db_write};

/// A SQLite file (and its WAL) that disappears with the test, with a `scratch` table.
struct Scratch {
    db: Database,
    path: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        support::remove_sqlite_files(&self.path);
    }
}

impl Scratch {
    fn new() -> Self {
        Self::with(SqliteSynchronous::default())
    }

    fn with(sqlite_synchronous: SqliteSynchronous) -> Self {
        Self::configured(sqlite_synchronous, Duration::from_millis(1500))
    }

    /// A scratch database whose connections wait for locks at most `timeout`.
    fn configured(sqlite_synchronous: SqliteSynchronous, timeout: Duration) -> Self {
        let path = std::env::temp_dir().join(format!("wpds-writer-test-{:016x}.db", rand::random::<u64>()));
        let config = DbConfig {
            url: format!("sqlite://{}", path.display()),
            pool_size: 2,
            timeout,
            sqlite_synchronous,
            ..DbConfig::default()
        };
        let db = Database::open(&config).expect("open SQLite");
        let conn = &mut db.conn().expect("a connection");
        db_run!(conn => diesel::sql_query("CREATE TABLE scratch (name TEXT PRIMARY KEY)").execute(conn))
            .expect("create the scratch table");
        Scratch { db, path }
    }

    fn writer(&self) -> &Writer {
        self.db.writer().expect("SQLite has a writer")
    }

    /// The committed names, read on a connection of its own.
    fn committed(&self) -> Vec<String> {
        names(&mut self.outside())
    }

    /// A connection outside the writer and the pool.
    fn outside(&self) -> SqliteConnection {
        SqliteConnection::establish(self.path.to_str().expect("a UTF-8 path")).expect("open SQLite")
    }
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Synchronous {
    #[diesel(sql_type = BigInt)]
    synchronous: i64,
}

/// `PRAGMA synchronous` of the connection `conn`.
fn synchronous(conn: &mut DbConn) -> Result<i64, StoreError> {
    Ok(db_run!(conn => diesel::sql_query("PRAGMA synchronous").get_result::<Synchronous>(conn))?.synchronous)
}

fn names(conn: &mut SqliteConnection) -> Vec<String> {
    diesel::sql_query("SELECT name FROM scratch ORDER BY name")
        .load::<Name>(conn)
        .expect("read the scratch table")
        .into_iter()
        .map(|row| row.name)
        .collect()
}

/// Inserts `name` in a transaction of its own (`db_write!`: a savepoint inside a batch).
fn insert(conn: &mut DbConn, name: &str) -> Result<(), StoreError> {
    insert_then(conn, name, Ok(()))
}

/// Inserts `name` and ends the transaction with `outcome` (an `Err` rolls it back).
fn insert_then(conn: &mut DbConn, name: &str, outcome: Result<(), StoreError>) -> Result<(), StoreError> {
    let sql = format!("INSERT INTO scratch (name) VALUES ('{name}')");
    db_write!(conn => {
        diesel::sql_query(&sql).execute(conn)?;
        outcome
    })
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().expect("a runtime").block_on(future)
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

/// Queues a job that waits for the returned gate, then inserts `name`; returns once the
/// writer is running it, so that every job queued before the gate opens joins its batch.
fn gate_job(
    writer: &Writer,
    name: &'static str,
) -> (impl Future<Output = Result<(), StoreError>> + use<>, mpsc::Sender<()>) {
    let (started_tx, started) = mpsc::channel();
    let (gate, gate_rx) = mpsc::channel::<()>();
    let answer = writer.submit(soon(), move |conn| {
        started_tx.send(()).expect("the test listens");
        gate_rx.recv().expect("the test opens the gate");
        insert(conn, name)
    });
    started.recv().expect("the gate job runs");
    (answer, gate)
}

#[test]
fn jobs_queued_together_share_one_transaction_and_are_answered_after_its_commit() {
    // Arrange: the writer is inside job "a"; "b" and "c" queue behind it.
    let scratch = Scratch::new();
    let writer = scratch.writer();
    let (a, gate) = gate_job(writer, "a");
    let b = writer.submit(soon(), |conn| insert(conn, "b"));
    let path = scratch.path.clone();
    let c = writer.submit(soon(), move |conn| {
        insert(conn, "c")?;
        // What this job's connection sees against what a connection outside sees.
        let inside: i64 = db_run!(conn => diesel::sql_query("SELECT count(*) AS n FROM scratch").get_result::<Count>(conn))?.n;
        let outside = names(&mut SqliteConnection::establish(path.to_str().expect("UTF-8")).expect("open")).len();
        Ok((inside, outside))
    });

    // Act
    gate.send(()).expect("job a waits");
    let b = block_on(b);
    let seen_after_b = scratch.committed();
    let a = block_on(a);
    let (inside, outside) = block_on(c).expect("job c succeeds");

    // Assert: one open transaction held a, b and c; b's answer came after the commit.
    assert_eq!((a, b), (Ok(()), Ok(())));
    assert_eq!(inside, 3, "job c sees a, b and itself in the batch's transaction");
    assert_eq!(outside, 0, "nothing of the batch is visible outside before its commit");
    assert_eq!(seen_after_b, ["a", "b", "c"], "b is answered only once the batch committed");
}

#[test]
fn a_job_that_fails_rolls_back_only_its_own_writes_in_the_batch() {
    // Arrange
    let scratch = Scratch::new();
    let writer = scratch.writer();
    let (a, gate) = gate_job(writer, "a");
    let refused = writer.submit(soon(), |conn| {
        insert_then(conn, "refused", Err(StoreError::rule("some_rule", "/name", "refused after writing")))
    });
    let d = writer.submit(soon(), |conn| insert(conn, "d"));

    // Act
    gate.send(()).expect("job a waits");
    let (a, refused, d) = (block_on(a), block_on(refused), block_on(d));

    // Assert
    assert_eq!(a, Ok(()));
    assert!(
        matches!(refused, Err(StoreError::Rule(ref rules)) if rules[0].code == "some_rule"),
        "{refused:?}"
    );
    assert_eq!(d, Ok(()));
    assert_eq!(scratch.committed(), ["a", "d"]);
}

#[test]
fn a_job_past_its_deadline_is_refused_without_running() {
    // Arrange: job "late" must start within 20 ms, but the writer is held for longer.
    let scratch = Scratch::new();
    let writer = scratch.writer();
    let (a, gate) = gate_job(writer, "a");
    let late = writer.submit(Instant::now() + Duration::from_millis(20), |conn| insert(conn, "late"));

    // Act
    std::thread::sleep(Duration::from_millis(60));
    gate.send(()).expect("job a waits");
    let (a, late) = (block_on(a), block_on(late));

    // Assert
    assert_eq!(a, Ok(()));
    assert!(matches!(late, Err(StoreError::Unavailable(_))), "{late:?}");
    assert_eq!(scratch.committed(), ["a"]);
}

#[test]
fn a_panicking_job_rolls_back_its_batch_and_the_writer_goes_on() {
    // Arrange
    let scratch = Scratch::new();
    let writer = scratch.writer();
    let (a, gate) = gate_job(writer, "a");
    let panics = writer.submit(soon(), |conn| -> Result<(), StoreError> {
        insert(conn, "p")?;
        panic!("a defect in a write");
    });

    // Act
    gate.send(()).expect("job a waits");
    let (a, panics) = (block_on(a), block_on(panics));
    let after = block_on(writer.submit(soon(), |conn| insert(conn, "after")));

    // Assert: nothing of the batch stayed; the next write works.
    assert!(matches!(a, Err(StoreError::Internal(_))), "{a:?}");
    assert!(matches!(panics, Err(StoreError::Internal(_))), "{panics:?}");
    assert_eq!(after, Ok(()));
    assert_eq!(scratch.committed(), ["after"]);
}

#[test]
fn a_lock_held_elsewhere_makes_a_write_unavailable_within_its_budget_and_then_passes() {
    // Arrange: another connection holds the database's write lock; the database's own
    // timeout (30 s) is far beyond the job's budget (200 ms), so an answer within 5 s (the
    // margin a busy machine needs) can only come from the budget.
    let scratch = Scratch::configured(SqliteSynchronous::default(), Duration::from_secs(30));
    let writer = scratch.writer();
    let mut holder = scratch.outside();
    diesel::sql_query("BEGIN EXCLUSIVE").execute(&mut holder).expect("take the lock");

    // Act
    let asked = Instant::now();
    let blocked = block_on(writer.submit(asked + Duration::from_millis(200), |conn| insert(conn, "x")));
    let waited = asked.elapsed();
    diesel::sql_query("ROLLBACK").execute(&mut holder).expect("release the lock");
    let passed = block_on(writer.submit(soon(), |conn| insert(conn, "y")));

    // Assert
    assert!(matches!(blocked, Err(StoreError::Unavailable(_))), "{blocked:?}");
    assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(5), "waited {waited:?}");
    assert_eq!(passed, Ok(()));
    assert_eq!(scratch.committed(), ["y"]);
}

#[test]
fn the_writer_commits_with_synchronous_full_by_default_and_normal_when_configured() {
    for (setting, expected) in [(SqliteSynchronous::default(), 2), (SqliteSynchronous::Normal, 1)] {
        // Arrange
        let scratch = Scratch::with(setting);

        // Act: what the writer's own connection says, and a pooled one's.
        let writer = block_on(scratch.writer().submit(soon(), synchronous));
        let pooled = synchronous(&mut scratch.db.conn().expect("a connection"));

        // Assert: 2 is FULL, 1 NORMAL.
        assert_eq!((writer, pooled), (Ok(expected), Ok(expected)), "{setting:?}");
    }
}

/// Inserts `name` with 64 KiB of payload: more pages than a file capped at its size has.
fn insert_big(conn: &mut DbConn, name: &str) -> Result<(), StoreError> {
    let sql = format!("INSERT INTO scratch (name) VALUES ('{name}' || hex(zeroblob(32768)))");
    db_write!(conn => {
        diesel::sql_query(&sql).execute(conn)?;
        Ok(())
    })
}

#[test]
fn a_full_disk_answers_unavailable_and_the_next_write_succeeds_on_a_fresh_connection() {
    // Arrange: the writer's connection may not grow the file (its max_page_count is the
    // file's size), as on a full disk; the cap belongs to that connection alone.
    let scratch = Scratch::new();
    let writer = scratch.writer();
    let full = writer.submit(soon(), |conn| {
        db_run!(conn => diesel::sql_query("PRAGMA max_page_count = 1").execute(conn))?;
        insert_big(conn, "too-big")
    });

    // Act
    let full = block_on(full);
    let unhealthy = !writer.is_healthy();
    let after = block_on(writer.submit(soon(), |conn| insert_big(conn, "after")));

    // Assert: 503 material, the writer says so until a write commits, and the next write
    // runs on a connection without the cap.
    assert!(matches!(full, Err(StoreError::Unavailable(ref why)) if why.contains("full")), "{full:?}");
    assert!(unhealthy, "the writer is unhealthy after the failed write");
    assert_eq!(after, Ok(()));
    assert!(writer.is_healthy(), "healthy again after a commit");
    assert_eq!(scratch.committed().len(), 1);
}

#[test]
fn a_probe_after_a_fault_changes_nothing_and_makes_the_writer_healthy_again() {
    // Arrange: a failed write, as above, and a user_version an operator might have set.
    let scratch = Scratch::new();
    diesel::sql_query("PRAGMA user_version = 42").execute(&mut scratch.outside()).expect("set user_version");
    let writer = scratch.writer();
    let full = block_on(writer.submit(soon(), |conn| {
        db_run!(conn => diesel::sql_query("PRAGMA max_page_count = 1").execute(conn))?;
        insert_big(conn, "too-big")
    }));
    assert!(matches!(full, Err(StoreError::Unavailable(_))) && !writer.is_healthy(), "{full:?}");

    // Act
    let probed = writer.probe(soon());

    // Assert
    assert_eq!(probed, Ok(()));
    assert!(writer.is_healthy());
    assert!(scratch.committed().is_empty());
    let user_version = diesel::sql_query("SELECT user_version AS n FROM pragma_user_version()")
        .get_result::<Count>(&mut scratch.outside())
        .expect("read user_version");
    assert_eq!(user_version.n, 42, "the probe wrote the value back as it was");
}

#[test]
fn a_full_disk_in_a_batch_rolls_all_of_it_back_and_every_job_of_it_answers_unavailable() {
    // Arrange: job "a" has written when a job of its batch meets the cap; SQLite rolls
    // the whole transaction back on a full disk.
    let scratch = Scratch::new();
    let writer = scratch.writer();
    let (a, gate) = gate_job(writer, "a");
    let full = writer.submit(soon(), |conn| {
        db_run!(conn => diesel::sql_query("PRAGMA max_page_count = 1").execute(conn))?;
        insert_big(conn, "too-big")
    });

    // Act
    gate.send(()).expect("job a waits");
    let (a, full) = (block_on(a), block_on(full));

    // Assert: neither is acknowledged, both for the cause, and nothing is committed.
    for answer in [&a, &full] {
        assert!(matches!(answer, Err(StoreError::Unavailable(why)) if why.contains("full")), "{answer:?}");
    }
    assert!(scratch.committed().is_empty());
}

#[test]
fn an_observer_hears_of_a_committed_batch_after_its_writes_are_answered_with_its_size() {
    // Arrange: an observer that reports what it heard and then holds the writer until the
    // test lets it go; a batch of two writes, the second asking for its batch's size.
    let scratch = Scratch::new();
    let writer = scratch.writer();
    let (heard_tx, heard) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let release = std::sync::Mutex::new(release);
    writer.observe_batches(Box::new(move |batch| {
        let _ = heard_tx.send(batch.writes);
        let _ = release.lock().expect("one observer at a time").recv_timeout(Duration::from_secs(10));
    }));
    let (a, gate) = gate_job(writer, "a");
    let b = writer.submit_counted(soon(), |conn| insert(conn, "b"));

    // Act: the batch commits; its answers are awaited while the observer still holds it.
    gate.send(()).expect("job a waits");
    let (answered_tx, answered) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = answered_tx.send((block_on(a), block_on(b)));
    });
    let answers = answered.recv_timeout(Duration::from_secs(5));
    release_tx.send(()).expect("the observer waits");

    // Assert: both writes were answered before the observer let the writer go, the counted
    // one with the size of its batch, and the observer heard of the batch with that size.
    assert_eq!(answers.expect("answered while the observer held the writer"), (Ok(()), Ok(((), 2))));
    assert_eq!(heard.recv_timeout(Duration::from_secs(5)), Ok(2), "the batch was reported");
}
