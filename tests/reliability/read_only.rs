//! Issue 35, point 2's rule for a database that stops taking writes, as a failover leaves
//! connections to a node that is now a standby: a read-only-transaction error answers 503
//! `unavailable` with `Retry-After` (never 500), the connection that met it is discarded,
//! and once the database takes writes again the same server process writes within 5 s.
//!
//! PostgreSQL only. The test makes its own database read-only the way an operator would
//! (`ALTER DATABASE … SET default_transaction_read_only = on`) and ends the server's
//! sessions, so that every connection the server opens from then on is read-only, like one
//! to a standby; then it resets the setting without touching the server's connections.
//! Behind PgBouncer (the CI passes with `WPDS_PG_POOLER=transaction…`) the server's connections
//! are PgBouncer's: there it replaces its server connections at each turn, as an operator
//! re-points it after a failover.

use crate::harness::{Seeded, Server, timed_put_cell};
use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use std::time::{Duration, Instant};

/// Runs `sql` on the test's database from a connection of the test's own, in a
/// transaction that takes writes whatever the database's default says (and sets nothing
/// for a session, which a transaction pooler would hand to another client).
fn admin(url: &str, sql: &str) {
    let mut conn = PgConnection::establish(url).expect("the test connects to PostgreSQL");
    let statement = format!("BEGIN READ WRITE; {sql}; COMMIT");
    conn.batch_execute(&statement).unwrap_or_else(|e| panic!("{statement}: {e}"));
}

/// Behind PgBouncer (`WPDS_PG_POOLER=transaction…`), its server connections are replaced
/// (`RECONNECT` on its admin console): after the database turned read-only, so that none
/// made before (the one the test's own statements ran on) is left; and once it takes writes
/// again, as an operator does after a failover, so that none made while it was read-only is
/// kept.
fn reconnect_pooler(url: &str) {
    if !crate::database::pooler().lends_transactions() {
        return;
    }
    let console = format!("{}/pgbouncer", url.rsplit_once('/').expect("a database URL").0);
    let done = std::process::Command::new("psql").args([&console, "-qc", "RECONNECT"]).status();
    assert!(done.is_ok_and(|s| s.success()), "RECONNECT on PgBouncer's console {console}");
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn a_read_only_database_answers_503_and_writes_resume_within_5_s_of_it_taking_writes_again() {
    let seeded = Seeded::postgres();
    // Arrange: a server that has written once (its connections are open and read-write).
    let url = &seeded.database.url;
    let name = crate::database::TestDatabase::name_of(url);
    let server = Server::start(url);
    let (first, _) = timed_put_cell(&server.base, &seeded.token, "2024-05-01", "before", 1);
    assert_eq!(first.status, 200, "{}", first.body);

    // Act: the database turns read-only; the server's sessions end (as a failover ends them).
    admin(url, &format!("ALTER DATABASE \"{name}\" SET default_transaction_read_only = on"));
    admin(
        url,
        &format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ),
    );
    reconnect_pooler(url);
    let mut refused = Vec::new();
    for i in 0..12 {
        let (answer, _) =
            timed_put_cell(&server.base, &seeded.token, &format!("2024-05-{:02}", 2 + i), "ro", 1);
        refused.push(answer);
    }

    // Assert: every write is refused as unavailable, with Retry-After, never 500.
    for answer in &refused {
        assert_eq!(answer.status, 503, "a write to a read-only database: {}", answer.body);
        assert_eq!(answer.body["code"], "unavailable", "{}", answer.body);
        assert!(answer.retry_after.is_some(), "503 without Retry-After: {}", answer.body);
    }

    // Act: the database takes writes again; nothing touches the server's connections
    // (behind PgBouncer, its server connections are replaced, as after a failover).
    admin(url, &format!("ALTER DATABASE \"{name}\" RESET default_transaction_read_only"));
    reconnect_pooler(url);
    let started = Instant::now();
    let mut statuses = Vec::new();
    let resumed = loop {
        let (answer, _) = timed_put_cell(&server.base, &seeded.token, "2024-06-01", "after", 1);
        statuses.push(answer.status);
        assert!(matches!(answer.status, 200 | 503), "only 200 or 503 while it recovers: {}", answer.body);
        if answer.status == 200 {
            break started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(5), "no write within 5 s: {statuses:?}");
        std::thread::sleep(Duration::from_millis(50));
    };

    // Assert: the read-only connections were discarded, so writing resumed by itself.
    assert!(resumed < Duration::from_secs(5), "{resumed:?}, {statuses:?}");
    eprintln!("read only: writes resumed after {resumed:?}: {statuses:?}");
}
