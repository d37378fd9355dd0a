//! Migrations on PostgreSQL, where several server instances share one database: instances
//! that start at the same moment on an empty database (a rolling deployment, a scaled-out
//! service) all come up, the migrations applied once. Runs when `TEST_DATABASE_URL` names
//! a PostgreSQL server (a SQLite file is served by one process).

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use std::time::Duration;
use support::require_postgres;
use wpds_storage::{Database, DbConfig};

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn instances_starting_together_on_an_empty_database_all_come_up() {
    let admin = require_postgres();
    for round in 0..3 {
        // Arrange: an empty database; four instances about to start.
        let (url, _cleanup) = support::scratch_postgres(&admin);
        let config = DbConfig { url, pool_size: 1, timeout: Duration::from_secs(5), ..DbConfig::default() };
        let start = std::sync::Barrier::new(4);

        // Act: all four open (connect and migrate) at once.
        let outcomes: Vec<Result<Vec<String>, String>> = std::thread::scope(|scope| {
            let started: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let db = Database::connect(&config).map_err(|e| e.to_string())?;
                        start.wait();
                        db.migrate().map_err(|e| e.to_string())
                    })
                })
                .collect();
            started.into_iter().map(|t| t.join().expect("no panic")).collect()
        });

        // Assert: every instance came up, and the migrations were applied exactly once.
        let applied: Vec<usize> = outcomes
            .iter()
            .map(|o| o.as_ref().unwrap_or_else(|e| panic!("round {round}: an instance failed: {e}")).len())
            .collect();
        assert_eq!(applied.iter().filter(|n| **n > 0).count(), 1, "round {round}: {applied:?}");
    }
}
