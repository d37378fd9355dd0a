//! Issue 11, row 11: on PostgreSQL the rate-limit counters live in the database, so two
//! server processes sharing it together admit the limit, not twice it. (SQLite runs one
//! instance and counts in memory: the test says so and passes.)

use crate::harness::{Seeded, Server, agent};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const RECEIPTS: &str = "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts";

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn two_instances_on_postgresql_together_admit_the_limit_once() {
    let seeded = Seeded::postgres();
    // Arrange: two processes, a limit of 4 per minute; not within 10 s of a window's end,
    // so every request falls in one window.
    let settings = [("WPDS_RATE_LIMIT_PER_MINUTE", "4")];
    let servers = [
        Server::start_with(&seeded.database.url, &settings),
        Server::start_with(&seeded.database.url, &settings),
    ];
    let into_window = SystemTime::now().duration_since(UNIX_EPOCH).expect("a clock").as_secs() % 60;
    if into_window >= 50 {
        std::thread::sleep(Duration::from_secs(61 - into_window));
    }

    // Act: three reads through each process, alternating.
    let statuses: Vec<u16> = (0..6)
        .map(|i| {
            let response = agent()
                .get(format!("{}{RECEIPTS}", servers[i % 2].base))
                .header("authorization", format!("Bearer {}", seeded.token))
                .call()
                .expect("an answer");
            response.status().as_u16()
        })
        .collect();

    // Assert: four admitted in all, then 429 from either process.
    assert_eq!(statuses, [200, 200, 200, 200, 429, 429], "the limit is shared");
}
