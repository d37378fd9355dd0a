//! The shared, pipelining PostgreSQL connections of single statements
//! (`wpds_storage::engine::SharedPg`): how many there are, what a statement that gives up does to
//! its connection, the timeouts they get in code, and the URLs they leave to the blocking
//! pool. Runs when `TEST_DATABASE_URL` names a PostgreSQL server (SQLite has no shared
//! connections). No tables are needed: the server's own database will do.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use diesel::sql_types::{BigInt, Integer};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::require_postgres;
use wpds_storage::db_statement;
use wpds_storage::engine::SharedState;
use wpds_storage::engine::{StatementConn, StatementFuture};
use wpds_storage::{Database, DbConfig, StoreError};

/// `url` with `application_name` set, so the test can count its own backends.
fn named(url: &str, name: &str) -> String {
    format!("{url}{}application_name={name}", if url.contains('?') { '&' } else { '?' })
}

/// A database whose single statements run on `per_thread` shared connections.
fn shared_database(url: &str, timeout: Duration, per_thread: usize) -> Arc<Database> {
    let config = DbConfig { url: url.to_owned(), pool_size: 1, timeout, ..DbConfig::default() };
    let mut db = Database::connect(&config).expect("PostgreSQL is reachable");
    db.share_statements(per_thread).expect("tokio-postgres reads this URL");
    Arc::new(db)
}

/// `SELECT pg_sleep(seconds)` as a statement function.
fn sleep<'c>(conn: StatementConn<'c>, seconds: &'c f64) -> StatementFuture<'c, usize> {
    Box::pin(async move {
        let query = diesel::sql_query("SELECT pg_sleep($1)").bind::<diesel::sql_types::Double, _>(*seconds);
        Ok(db_statement!(conn, query, execute)?)
    })
}

/// The backend's process id, as a statement function.
fn backend_pid<'c>(conn: StatementConn<'c>, _: &'c ()) -> StatementFuture<'c, i32> {
    Box::pin(async move {
        let query = diesel::select(diesel::dsl::sql::<Integer>("pg_backend_pid()"));
        Ok(db_statement!(conn, query, get_result::<i32>)?)
    })
}

/// How many backends run under `application_name` now.
fn backends_named(url: &str, name: &str) -> i64 {
    use diesel::{Connection, RunQueryDsl};
    let mut admin = diesel::PgConnection::establish(url).expect("connect");
    diesel::select(diesel::dsl::sql::<BigInt>(&format!(
        "(SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}')"
    )))
    .get_result(&mut admin)
    .expect("count backends")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn twenty_statements_at_once_share_at_most_the_threads_two_connections() {
    // Arrange: two shared connections per thread.
    let url = require_postgres();
    let name = "wpds_shared_bound";
    let db = shared_database(&named(&url, name), Duration::from_secs(5), 2);

    // Act: twenty statements of 200 ms at once on this thread; count backends meanwhile.
    let (outcomes, (most, in_flight)) = runtime().block_on(async {
        let mut statements = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let db = Arc::clone(&db);
            statements.spawn(async move { db.shared().expect("shared").run(&0.2, sleep).await });
        }
        let watched = Arc::clone(&db);
        let counting = tokio::task::spawn_blocking(move || {
            let (mut most, mut in_flight) = (0, 0);
            for _ in 0..10 {
                most = most.max(backends_named(&url, name));
                in_flight = in_flight.max(watched.shared().expect("shared").state().statements);
                std::thread::sleep(Duration::from_millis(100));
            }
            (most, in_flight)
        });
        (statements.join_all().await, counting.await.expect("the counter"))
    });

    // Assert: all done, on no more than two shared backends (pipelined, ten per
    // connection) beside the blocking pool's one.
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert!((2..=3).contains(&most), "{most} backends: the blocking pool's one and the shared ones");
    assert_eq!(db.shared().expect("shared").thread_state().0, 2, "connections open on this thread");
    // ... and what metrics read from another thread saw: statements pipelined (more in
    // flight than connections; each takes 200 ms, ten queue on a connection), and now the
    // two connections idle.
    assert!((3..=20).contains(&in_flight), "{in_flight} statements in flight seen from another thread");
    let after =
        std::thread::scope(|s| s.spawn(|| db.shared().expect("shared").state()).join().expect("read"));
    assert_eq!(after, SharedState { open: 2, idle: 2, statements: 0, most: 2 });
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn a_statement_dropped_before_it_finished_retires_its_connection() {
    // Arrange: one shared connection, in use once.
    let url = require_postgres();
    let db = shared_database(&url, Duration::from_secs(5), 1);
    let shared = db.shared().expect("shared");
    runtime().block_on(async {
        let before = shared.run(&(), backend_pid).await.expect("a backend");

        // Act: a statement given up after 100 ms (its request's deadline), then another.
        let given_up = tokio::time::timeout(Duration::from_millis(100), shared.run(&3.0, sleep)).await;
        let after = shared.run(&(), backend_pid).await.expect("a backend");

        // Assert: the next statement runs on a new connection, not behind the stuck one.
        assert!(given_up.is_err(), "the sleep was given up");
        assert_ne!(before, after, "the connection of the statement given up is not used again");
        assert_eq!(shared.thread_state(), (1, 1), "one connection open, idle");
    });
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn a_shared_statement_running_past_the_database_timeout_is_cancelled_as_unavailable() {
    // Arrange: a timeout of 300 ms, set in code (the URL says nothing about it).
    let url = require_postgres();
    let timeout = Duration::from_millis(300);
    let db = shared_database(&url, timeout, 1);

    // Act: a statement that would run for 10 s, not bounded by the caller.
    let started = Instant::now();
    let result = runtime().block_on(db.shared().expect("shared").run(&10.0, sleep));
    let took = started.elapsed();

    // Assert
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    assert!(took >= timeout && took < Duration::from_secs(2), "cancelled after {took:?}");
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn a_url_tokio_postgres_does_not_read_as_libpq_leaves_statements_on_the_blocking_pool() {
    // Arrange: a URL with a libpq parameter tokio-postgres does not know.
    let url = require_postgres();
    let url = format!("{url}{}keepalives_count=4", if url.contains('?') { '&' } else { '?' });
    let config = DbConfig { url, pool_size: 1, timeout: Duration::from_secs(1), ..DbConfig::default() };
    let mut db = Database::connect(&config).expect("libpq reads it");

    // Act
    let refused = db.share_statements(1);

    // Assert: refused with the reason, and no shared connections.
    assert!(refused.as_ref().is_err_and(|why| why.contains("keepalives_count")), "{refused:?}");
    assert!(db.shared().is_none());
}

/// `UPDATE shared_pg_rows SET v = v + 1 WHERE id = $1` as a statement function.
fn bump<'c>(conn: StatementConn<'c>, id: &'c i32) -> StatementFuture<'c, usize> {
    Box::pin(async move {
        let query =
            diesel::sql_query("UPDATE shared_pg_rows SET v = v + 1 WHERE id = $1").bind::<Integer, _>(*id);
        Ok(db_statement!(conn, query, execute)?)
    })
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn a_write_waiting_for_a_locked_row_gives_way_without_holding_up_the_statements_behind_it() {
    // Arrange: a scratch table of two rows; another session locks row 1 for 2 s. One
    // shared connection, so everything below pipelines on it.
    use diesel::{Connection, connection::SimpleConnection};
    let admin = require_postgres();
    let (url, _cleanup) = support::scratch_postgres(&admin);
    let mut setup = diesel::PgConnection::establish(&url).expect("connect");
    setup
        .batch_execute("CREATE TABLE shared_pg_rows (id int PRIMARY KEY, v int NOT NULL); INSERT INTO shared_pg_rows VALUES (1, 0), (2, 0)")
        .expect("the table");
    let db = shared_database(&url, Duration::from_secs(5), 1);
    let shared = db.shared().expect("shared");
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let releasing = Arc::clone(&released);
    let holder = std::thread::spawn(move || {
        let mut holder = diesel::PgConnection::establish(&url).expect("connect");
        holder
            .batch_execute("BEGIN; SELECT v FROM shared_pg_rows WHERE id = 1 FOR UPDATE")
            .expect("the lock");
        locked_tx.send(()).expect("tell the test");
        std::thread::sleep(Duration::from_secs(2));
        releasing.store(true, std::sync::atomic::Ordering::SeqCst);
        holder.batch_execute("ROLLBACK").expect("release");
    });
    locked_rx.recv().expect("row 1 is locked");
    runtime().block_on(async {
        let before = shared.run(&(), backend_pid).await.expect("a backend");

        // Act: the write of the locked row and, pipelined behind it, one of the other row.
        let started = Instant::now();
        let (locked, free) = tokio::join!(shared.run(&1, bump), shared.run(&2, bump));
        let held = !released.load(std::sync::atomic::Ordering::SeqCst);
        let took = started.elapsed();
        let after = shared.run(&(), backend_pid).await.expect("a backend");

        // Assert: the locked write gave way at once (its caller goes to the blocking pool),
        // the other was not held up, and the connection stays in use.
        assert!(locked.as_ref().is_err_and(StoreError::is_lock_wait), "{locked:?}");
        assert_eq!(free.ok(), Some(1), "the other row's write");
        assert!(held, "both answered only after {took:?}, once the lock was released");
        assert_eq!(before, after, "a lock wait does not retire the connection");
    });
    holder.join().expect("the lock holder");
}
