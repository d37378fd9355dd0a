//! The sweep, against a real PostgreSQL server: a test database whose process was killed
//! (its owner's session gone) is dropped by the next process's reaper, and CI's check sees
//! it while it is there and not once it is gone. The only test of its file: the sweep runs
//! when a process first uses its reaper, which must come after the orphan is made.

use diesel::{Connection, PgConnection, RunQueryDsl};
use std::time::Duration;
use wpds_test_databases::{Reaper, left, name, server_from_env};

/// The server of TEST_DATABASE_URL, for a test ignored unless run with it.
fn server() -> String {
    server_from_env().expect("this test needs PostgreSQL: set TEST_DATABASE_URL=postgres://USER@HOST:PORT/DB")
}

#[test]
#[ignore = "needs PostgreSQL: set TEST_DATABASE_URL (run with --include-ignored)"]
fn a_database_left_by_a_killed_process_is_seen_then_swept_by_the_next_reaper() {
    // Arrange: what a killed process leaves, owned by backend pid 0, which no session has.
    let server = server();
    let orphan = name(0, "orphan");
    let mut session = PgConnection::establish(&server).expect("the PostgreSQL server is reachable");
    diesel::sql_query(format!("DROP DATABASE IF EXISTS {orphan}")).execute(&mut session).expect("drop");
    diesel::sql_query(format!("CREATE DATABASE {orphan}")).execute(&mut session).expect("the orphan is made");
    assert!(left(&mut session).expect("listed").contains(&orphan), "CI's check sees the orphan");

    // Act: this process's reaper, on first use, sweeps what dead processes left.
    let reaper = Reaper::of(&server);
    let still_dropping = reaper.drain(Duration::from_secs(60));

    // Assert
    assert_eq!(still_dropping, 0, "the sweep ends within a minute");
    assert!(!left(&mut session).expect("listed").contains(&orphan), "the orphan is swept");
}
