//! The reaper's way, against a real PostgreSQL server: a database handed to it is dropped,
//! and while its process runs CI's check leaves it to it (a pass running beside another
//! keeps its own).

use diesel::{Connection, PgConnection, RunQueryDsl};
use std::time::Duration;
use wpds_test_databases::{Reaper, left, server_from_env};

/// The server of TEST_DATABASE_URL, for a test ignored unless run with it.
fn server() -> String {
    server_from_env().expect("this test needs PostgreSQL: set TEST_DATABASE_URL=postgres://USER@HOST:PORT/DB")
}

#[test]
#[ignore = "needs PostgreSQL: set TEST_DATABASE_URL (run with --include-ignored)"]
fn a_database_handed_to_the_reaper_is_dropped_and_one_its_process_still_owns_is_not_left() {
    let server = server();
    let reaper = Reaper::of(&server);
    let made = reaper.name();
    let mut session = PgConnection::establish(&server).expect("the PostgreSQL server is reachable");
    diesel::sql_query(format!("CREATE DATABASE {made}")).execute(&mut session).expect("made");
    assert!(exists(&mut session, &made), "made");
    assert!(!left(&mut session).expect("listed").contains(&made), "its owner runs: not left behind");

    reaper.bury(made.clone());
    assert_eq!(reaper.drain(Duration::from_secs(60)), 0, "dropped within a minute");

    assert!(!exists(&mut session, &made), "gone");
}

/// Whether the server has a database named `name`.
fn exists(session: &mut PgConnection, name: &str) -> bool {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let count: Count = diesel::sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
        .bind::<diesel::sql_types::Text, _>(name)
        .get_result(session)
        .expect("pg_database is read");
    count.n == 1
}
