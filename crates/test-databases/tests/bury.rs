//! The reaper's way, against a real PostgreSQL server: a database handed to it is dropped,
//! and while it exists CI's check sees it.

use diesel::{Connection, PgConnection, RunQueryDsl};
use std::time::Duration;
use wpds_test_databases::{Reaper, left, server_from_env};

/// The server of TEST_DATABASE_URL, for a test ignored unless run with it.
fn server() -> String {
    server_from_env().expect("this test needs PostgreSQL: set TEST_DATABASE_URL=postgres://USER@HOST:PORT/DB")
}

#[test]
#[ignore = "needs PostgreSQL: set TEST_DATABASE_URL (run with --include-ignored)"]
fn a_database_handed_to_the_reaper_is_dropped_and_its_name_is_the_naming_ci_checks() {
    let server = server();
    let reaper = Reaper::of(&server);
    let made = reaper.name();
    let mut session = PgConnection::establish(&server).expect("the PostgreSQL server is reachable");
    diesel::sql_query(format!("CREATE DATABASE {made}")).execute(&mut session).expect("made");
    assert!(left(&mut session).expect("listed").contains(&made), "CI's check sees it");

    reaper.bury(made.clone());
    assert_eq!(reaper.drain(Duration::from_secs(60)), 0, "dropped within a minute");

    assert!(!left(&mut session).expect("listed").contains(&made), "gone");
}
