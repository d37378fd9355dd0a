//! Issue 6, test 3: a database outage. While the database is unavailable every request
//! answers 503 `unavailable` with `Retry-After` within 2 s; when it is back the same server
//! process answers again by itself.
//!
//! PostgreSQL: the server reaches the database through a [`Proxy`] the test cuts (every
//! connection dropped, new ones closed at once) and restores; the machine's PostgreSQL is
//! never stopped. SQLite: another connection holds the write lock (`BEGIN EXCLUSIVE`) and
//! releases it.

use crate::harness::{Answer, Seeded, Server, agent, cell, put_cell};
use crate::proxy::{Proxy, through_proxy};
use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::sqlite::SqliteConnection;
use std::time::Duration;

const DATE: &str = "2024-02-29";
/// The longest a request may take while the database is unavailable.
const BOUND: Duration = Duration::from_secs(2);
/// The server's database timeout in this test: 1 s, not the default 1.5 s, so the bound
/// leaves a busy two-core machine a whole second to schedule the answer after its deadline.
const TIMEOUT: (&str, &str) = ("WPDS_DB_TIMEOUT_MS", "1000");

/// How the test makes the database unavailable.
enum Outage {
    Network(Proxy),
    WriteLock { path: String, holder: Option<SqliteConnection> },
}

impl Outage {
    fn begin(&mut self) {
        match self {
            Outage::Network(proxy) => proxy.cut(),
            Outage::WriteLock { path, holder } => {
                let mut conn = SqliteConnection::establish(path).expect("the test opens the database");
                conn.batch_execute("PRAGMA busy_timeout = 10000; BEGIN EXCLUSIVE").expect("the write lock");
                *holder = Some(conn);
            }
        }
    }

    fn end(&mut self) {
        match self {
            Outage::Network(proxy) => proxy.restore(),
            Outage::WriteLock { holder, .. } => {
                let mut conn = holder.take().expect("the lock is held");
                conn.batch_execute("ROLLBACK").expect("the lock is released");
            }
        }
    }
}

/// Sends one write and returns its answer and how long it took.
fn timed_write(base: &str, token: &str, expected: i64) -> (Answer, Duration) {
    crate::harness::timed_put_cell(base, token, DATE, "during the outage", expected)
}

#[test]
fn while_the_database_is_unavailable_requests_answer_503_within_2_s_and_recover_by_themselves() {
    // Arrange: a healthy server that has written the cell once.
    let seeded = Seeded::new();
    let (mut outage, server_url) = if seeded.is_postgres() {
        let proxy = Proxy::to(through_proxy(&seeded.database.url, 0).0);
        let url = through_proxy(&seeded.database.url, proxy.port).1;
        (Outage::Network(proxy), url)
    } else {
        let path = seeded.database.url.trim_start_matches("sqlite://").to_owned();
        (Outage::WriteLock { path, holder: None }, seeded.database.url.clone())
    };
    let server = Server::start_with(&server_url, &[TIMEOUT]);
    let first =
        put_cell(&agent(), &server.base, &seeded.token, &cell(DATE, "1", "before", 1)).expect("an answer");
    assert_eq!(first.status, 200, "{}", first.body);

    // Act: make the database unavailable; eight writers at once, then one more.
    outage.begin();
    let mut answers: Vec<(Answer, Duration)> = std::thread::scope(|scope| {
        let writers: Vec<_> =
            (0..8).map(|_| scope.spawn(|| timed_write(&server.base, &seeded.token, 2))).collect();
        writers.into_iter().map(|w| w.join().expect("a writer thread")).collect()
    });
    answers.push(timed_write(&server.base, &seeded.token, 2));

    // Assert: each is a prompt 503 unavailable with Retry-After.
    for (answer, took) in &answers {
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (503, Some("unavailable")),
            "{}",
            answer.body
        );
        let retry_after: u64 =
            answer.retry_after.as_deref().and_then(|v| v.parse().ok()).expect("Retry-After in seconds");
        assert!(retry_after >= 1, "Retry-After: {retry_after}");
        assert!(*took < BOUND, "a 503 took {took:?}, over {BOUND:?}");
    }

    // Act: the database comes back. Assert: the same process writes again, unaided.
    outage.end();
    let mut last = None;
    crate::harness::wait_until("the server writes again after the outage", Duration::from_secs(15), || {
        let answer =
            put_cell(&agent(), &server.base, &seeded.token, &cell(DATE, "2", "after", 2)).expect("an answer");
        let done = answer.status == 200;
        last = Some(answer);
        done
    });
    let entry = &last.expect("an answer").body["entry"];
    assert_eq!((entry["version"].as_i64(), entry["note"].as_str()), (Some(3), Some("after")));
}
