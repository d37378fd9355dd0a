//! Behind a transaction pooler (`Pooler::Transaction`) nothing may outlive a transaction,
//! because the next one can run on another server connection (PgBouncer's
//! `pool_mode = transaction`): the work of a request is one transaction that carries its
//! own timeouts, the session is left as PostgreSQL made it, and no statement stays
//! prepared. Checked against PostgreSQL itself, on the one connection of a pool of one, so
//! what a session would keep is there to see. (CI also runs the black-box and fault tests
//! behind a real PgBouncer.)

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use diesel::sql_types::{BigInt, Text};
use diesel::{Connection, QueryableByName, RunQueryDsl};
use std::time::{Duration, Instant};
use support::require_postgres;
use wpds_storage::{Database, DbConfig, DbConn, Pooler, StoreError, db_run};

#[derive(QueryableByName)]
struct Setting {
    #[diesel(sql_type = Text)]
    value: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// `(statement_timeout, lock_timeout, statements prepared in the session)` as `conn` sees
/// them now. (`SET LOCAL` has no effect outside a transaction: the timeouts seen inside a
/// unit of work show that it runs in one.)
fn session(conn: &mut DbConn) -> (String, String, i64) {
    let setting = |conn: &mut DbConn, name: &str| -> String {
        let query = format!("SELECT current_setting('{name}') AS value");
        db_run!(conn => diesel::sql_query(&query).get_result::<Setting>(conn)).expect("a setting").value
    };
    let prepared = db_run!(conn => diesel::sql_query("SELECT count(*) AS n FROM pg_prepared_statements")
        .get_result::<Count>(conn))
    .expect("the prepared statements")
    .n;
    (setting(conn, "statement_timeout"), setting(conn, "lock_timeout"), prepared)
}

/// A fresh PostgreSQL database, migrated, behind a pool of one connection in transaction
/// mode (a database timeout of 1.5 s), and what drops it.
fn pooled_database() -> (Database, support::Cleanup) {
    let (url, cleanup) = support::scratch_postgres(&require_postgres());
    let config = DbConfig {
        url,
        pool_size: 1,
        timeout: Duration::from_millis(1500),
        sqlite_synchronous: Default::default(),
        pooler: Pooler::Transaction,
    };
    (Database::open(&config).expect("PostgreSQL is reachable"), cleanup)
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn behind_a_transaction_pooler_each_unit_of_work_is_a_transaction_with_its_timeouts_and_the_session_keeps_nothing()
 {
    // Arrange: a pool of one connection, migrated (the migration ran through it too).
    let (db, _cleanup) = pooled_database();

    // Act: a unit of work with its whole budget, one left with 300 ms, and the session
    // afterwards (outside any unit of work, on the same connection).
    let whole = db.run_until(Instant::now() + Duration::from_secs(5), |conn| Ok(session(conn)));
    let short = db.run_until(Instant::now() + Duration::from_millis(300), |conn| Ok(session(conn)));
    let after = session(&mut db.conn().expect("the pool's connection"));

    // Assert: inside, a transaction with the configured timeouts (the lock wait shortened to
    // what is left of the budget); outside, PostgreSQL's defaults and nothing prepared.
    let whole = whole.expect("the work runs");
    assert_eq!(whole, ("1500ms".to_owned(), "1500ms".to_owned(), 0));
    let (statement, lock, _) = short.expect("the work runs");
    assert_eq!(statement, "1500ms");
    let lock_ms: u64 = lock.trim_end_matches("ms").parse().expect("milliseconds");
    assert!((1..300).contains(&lock_ms), "lock_timeout {lock}, shortened below the 300 ms left");
    assert_eq!(after, ("0".to_owned(), "0".to_owned(), 0), "the session keeps nothing");
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn behind_a_transaction_pooler_what_work_wrote_before_its_refusal_is_kept_and_a_failed_write_is_not() {
    // Arrange
    let (db, _cleanup) = pooled_database();
    let deadline = || Instant::now() + Duration::from_secs(5);
    db.run_until(deadline(), |conn| {
        db_run!(conn => diesel::sql_query("CREATE TABLE notes (body TEXT NOT NULL)").execute(conn))?;
        Ok(())
    })
    .expect("a table");

    // Act: work that writes (an audit entry, say) and then refuses; and a write that fails
    // in its own transaction (a savepoint here) before the work refuses.
    let refused = db.run_until(deadline(), |conn| -> Result<(), StoreError> {
        db_run!(conn => diesel::sql_query("INSERT INTO notes VALUES ('kept')").execute(conn))?;
        wpds_storage::db_write!(conn => {
            diesel::sql_query("INSERT INTO notes VALUES ('rolled back')").execute(conn)?;
            Err::<(), _>(StoreError::NotFound("the refusal".to_owned()))
        })
    });
    let notes = db.run_until(deadline(), |conn| {
        Ok(db_run!(conn => diesel::sql_query("SELECT body AS value FROM notes").load::<Setting>(conn))?)
    });

    // Assert: as on a connection of its own, the refusal stands, and only what was
    // committed outside the failed write is there.
    assert!(matches!(refused, Err(StoreError::NotFound(_))), "{refused:?}");
    let notes: Vec<String> = notes.expect("the notes").into_iter().map(|n| n.value).collect();
    assert_eq!(notes, ["kept"]);
}
